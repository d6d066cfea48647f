package faultproxy

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// runWaits adds n deadlines spread over spread, in random order, to w and
// returns each one's lateness (negative if it fired early).
func runWaits(t *testing.T, w *waker, n int, spread time.Duration) []time.Duration {
	t.Helper()
	start := time.Now()
	late := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		deadline := start.Add(time.Duration(rand.Int64N(int64(spread))) + 5*time.Millisecond)
		it := w.add(deadline)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-it.ch:
				late[i] = time.Since(deadline)
			case <-time.After(10 * time.Second):
				late[i] = time.Hour
			}
		}()
	}
	wg.Wait()
	slices.Sort(late)
	return late
}

func waitIdle(t *testing.T, w *waker) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "the waker's goroutine to end", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return !w.running
	})
}

func TestWakerNeverEarly(t *testing.T) {
	w := theWaker()
	if w == nil {
		t.Skip("no kernel timer on this platform")
	}
	late := runWaits(t, w, 200, 50*time.Millisecond)
	if late[0] < 0 || late[len(late)-1] > 2*time.Second {
		t.Errorf("lateness from %v to %v, want ≥ 0 and bounded", late[0], late[len(late)-1])
	}
	t.Logf("kernel-timer lateness p50 %v, max %v", late[len(late)/2], late[len(late)-1])
	waitIdle(t, w)
}

// TestWakerCancel: cancelled far deadlines leave nothing pending, and the
// waker's goroutine ends (goleak checks the rest at exit).
func TestWakerCancel(t *testing.T) {
	w := theWaker()
	if w == nil {
		t.Skip("no kernel timer on this platform")
	}
	var items []*waitItem
	for i := 0; i < 20; i++ {
		items = append(items, w.add(time.Now().Add(time.Duration(10+i)*time.Second)))
	}
	near := w.add(time.Now().Add(20 * time.Millisecond))
	for _, it := range items {
		w.cancel(it)
		w.cancel(it) // idempotent
	}
	select {
	case <-near.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline among cancelled ones did not fire")
	}
	waitIdle(t, w)
	w.mu.Lock()
	n := len(w.h)
	w.mu.Unlock()
	if n != 0 {
		t.Errorf("%d deadlines pending after cancelling them all", n)
	}
}

// failingTimer arms once, then fails.
type failingTimer struct {
	mu    sync.Mutex
	arms  int
	fired chan struct{}
}

func (f *failingTimer) arm(d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arms++
	if f.arms > 1 {
		return errors.New("broken")
	}
	return nil
}

func (f *failingTimer) wait() error { <-f.fired; return errors.New("broken") }

// TestWakerFallsBackToGoTimers: when the kernel timer fails, pending and
// later deadlines are kept by Go timers, none early.
func TestWakerFallsBackToGoTimers(t *testing.T) {
	ft := &failingTimer{fired: make(chan struct{})}
	w := &waker{kt: ft}
	first := w.add(time.Now().Add(30 * time.Millisecond)) // arms (ok)
	second := w.add(time.Now().Add(10 * time.Millisecond))
	// arming for the earlier one failed: both are on Go timers now
	close(ft.fired)
	waitIdle(t, w)
	if !w.broken {
		t.Fatalf("waker not marked broken after a failed arm")
	}
	late := runWaits(t, w, 20, 20*time.Millisecond)
	if late[0] < 0 || late[len(late)-1] > 5*time.Second {
		t.Errorf("after the fallback, lateness from %v to %v, want ≥ 0 and bounded", late[0], late[len(late)-1])
	}
	for _, it := range []*waitItem{first, second} {
		select {
		case <-it.ch:
			if time.Now().Before(it.deadline) {
				t.Errorf("a deadline fired early after the fallback")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a pending deadline was lost in the fallback")
		}
	}
}

// TestWaitPrecision: the proxy's wait ends at its time, measured from the
// start it is given, and never before.
func TestWaitPrecision(t *testing.T) {
	var late []time.Duration
	for i := 0; i < 40; i++ {
		start := time.Now()
		const d = 3 * time.Millisecond
		res, actual := wait(nil, nil, start, d)
		if res != waitDone || actual < d {
			t.Fatalf("wait(3ms) = %v after %v, want done after ≥ 3ms", res, actual)
		}
		late = append(late, actual-d)
	}
	slices.Sort(late)
	t.Logf("wait lateness p50 %v, max %v", late[len(late)/2], late[len(late)-1])
}
