package faultproxy

import (
	"container/heap"
	"sync"
	"time"
)

// Injected delays end on a kernel timer where there is one.
//
// A Go timer ends late on an idle process: the runtime sleeps in
// epoll_wait, whose timeout has millisecond resolution, so a timer fires
// up to 1 ms after its time (0.5 ms at the median, measured). The waker
// arms one kernel timer (Linux timerfd, nanosecond resolution) for the
// earliest pending deadline; the runtime's poller sleeps on it like on a
// socket and wakes when it fires, so delays end within tens of
// microseconds of their time. Elsewhere, or if the kernel timer cannot be
// made, a Go timer does the job.

// kernelTimer is a one-shot timer whose expiry wakes wait.
type kernelTimer interface {
	// arm sets the timer to expire after d (d ≤ 0: at once), replacing
	// any earlier setting.
	arm(d time.Duration) error
	// wait blocks until the timer has expired.
	wait() error
}

// waitItem is one pending deadline.
type waitItem struct {
	deadline time.Time
	ch       chan struct{} // closed at the deadline
	idx      int           // index in the heap, −1 once removed
}

type deadlineHeap []*waitItem

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *deadlineHeap) Push(x any) {
	it := x.(*waitItem)
	it.idx = len(*h)
	*h = append(*h, it)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.idx = -1
	return it
}

// waker closes each pending item's channel at its deadline, never before.
// One goroutine runs while deadlines are pending and ends when none are.
type waker struct {
	kt      kernelTimer
	mu      sync.Mutex
	h       deadlineHeap
	running bool
	broken  bool // the kernel timer failed: Go timers from then on
}

// add registers deadline; its channel is closed at the deadline. The
// caller cancels the item if it stops waiting before then.
func (w *waker) add(deadline time.Time) *waitItem {
	it := &waitItem{deadline: deadline, ch: make(chan struct{}), idx: -1}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		goTimer(it)
		return it
	}
	heap.Push(&w.h, it)
	if w.h[0] == it {
		w.armLocked()
	}
	if !w.running {
		w.running = true
		go w.loop()
	}
	return it
}

// cancel removes it if it is still pending.
func (w *waker) cancel(it *waitItem) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if it.idx < 0 {
		return
	}
	first := it.idx == 0
	heap.Remove(&w.h, it.idx)
	if first {
		// Re-arm for the new earliest deadline; with none left, expire at
		// once so that the loop sees it and ends.
		w.armLocked()
	}
}

// armLocked arms the kernel timer for the earliest deadline, or to expire
// at once if there is none.
func (w *waker) armLocked() {
	var d time.Duration
	if len(w.h) > 0 {
		d = time.Until(w.h[0].deadline)
	}
	if err := w.kt.arm(d); err != nil {
		w.failLocked()
	}
}

// failLocked hands every pending deadline to a Go timer and makes the
// waker use Go timers from then on: a failing kernel timer costs precision,
// never a delay cut short. (It cannot fail short of a bug: arming and
// reading a valid timerfd have no other error.)
func (w *waker) failLocked() {
	w.broken = true
	for len(w.h) > 0 {
		goTimer(heap.Pop(&w.h).(*waitItem))
	}
}

func goTimer(it *waitItem) {
	time.AfterFunc(time.Until(it.deadline), func() { close(it.ch) })
}

func (w *waker) loop() {
	for {
		err := w.kt.wait()
		w.mu.Lock()
		if err != nil {
			w.failLocked()
		}
		now := time.Now()
		for len(w.h) > 0 && !w.h[0].deadline.After(now) {
			close(heap.Pop(&w.h).(*waitItem).ch)
		}
		if len(w.h) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.armLocked()
		w.mu.Unlock()
	}
}

// theWaker is the process's waker, nil where there is no kernel timer.
var theWaker = sync.OnceValue(func() *waker {
	kt, err := newKernelTimer()
	if err != nil {
		return nil
	}
	return &waker{kt: kt}
})
