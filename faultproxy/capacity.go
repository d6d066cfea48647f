package faultproxy

import (
	"cmp"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The capacity fault makes the dependency behind the proxy look like a
// server of finite capacity: of the requests it fires on, at most Capacity
// are served at once, and the others wait for a slot in arrival order, at
// most Queue of them; one arriving beyond them is answered 503 with
// X-Dep-Overloaded at once. A request's service is everything the proxy
// does with it once it has a slot: the fault's own Latency ± Jitter (its
// service time), the delays of the latency faults that fired, and its
// terminal fault or upstream call. It holds the slot until its answer has
// been relayed (or it ends), so that with an upstream of service time S
// the affected requests see an M/G/c queue of service time S + Latency.
// A waiting request whose caller goes away leaves the queue.

// TypeCapacity is the capacity fault.
const TypeCapacity = "capacity"

// capacityType is the capacity fault type. Its action on both planes is
// the admission (Proxy.admit), before the delay and the answer.
type capacityType struct{}

func (capacityType) name() string { return TypeCapacity }
func (capacityType) role() role   { return roleCapacity }
func (capacityType) params() any  { return Capacity{} }

// Capacity is the parameters of a capacity fault: its service time (as a
// latency fault's Delay, with no distribution by default) and its slots
// and queue.
type Capacity struct {
	Latency      time.Duration `fault:"latency"`
	Jitter       time.Duration `fault:"jitter"`
	Distribution string        `fault:"distribution"`
	Max          time.Duration `fault:"max"`
	// Capacity is how many affected requests may be served at once, at
	// least 1.
	Capacity int `fault:"capacity"`
	// Queue is how many affected requests may wait for a slot; zero means
	// MaxQueue (normalised to it).
	Queue int `fault:"queue"`
}

// delay is the capacity fault's service time.
func (c Capacity) delay() Delay {
	return Delay{Latency: c.Latency, Jitter: c.Jitter, Distribution: c.Distribution, Max: c.Max}
}

func (capacityType) delayOf(f *Fault) Delay { return params[Capacity](f).delay() }

// Limits of a capacity fault.
const (
	// MaxCapacity bounds a capacity fault's Capacity.
	MaxCapacity = 1 << 20
	// MaxQueue bounds a capacity fault's Queue, and is its queue when
	// Queue is zero: effectively unbounded for any experiment (a waiting
	// request holds a goroutine and a connection), yet finite.
	MaxQueue = 10000
)

// HeaderOverloaded marks the 503 answer to a request that found a
// capacity fault's queue full (value "queue-full"). It is the header the
// dependency stub sets when its own capacity is exhausted, so that a proxy
// with a capacity fault and a stub with a capacity look the same to their
// callers.
const HeaderOverloaded = "X-Dep-Overloaded"

// overloaded is the answer to a request that found the queue full.
var overloaded = Reply{Status: http.StatusServiceUnavailable,
	Body: "faultproxy: capacity fault: queue full\n", Headers: map[string]string{HeaderOverloaded: "queue-full"}}

func (capacityType) validate(fl *Fault, field string) error {
	f := params[Capacity](fl)
	if f.Capacity < 1 || f.Capacity > MaxCapacity {
		return fieldErr(field+".capacity", "must be between 1 and %d, got %d", MaxCapacity, f.Capacity)
	}
	if f.Queue < 0 || f.Queue > MaxQueue {
		return fieldErr(field+".queue", "must be between 0 (up to %d) and %d, got %d", MaxQueue, MaxQueue, f.Queue)
	}
	return f.delay().validate(field)
}

// normalized fills in the queue and, if the fault has a service time, its
// distribution.
func (capacityType) normalized(fl Fault) Fault {
	f := params[Capacity](&fl)
	if f.Queue == 0 {
		f.Queue = MaxQueue
	}
	if d := f.delay(); d != (Delay{}) {
		d = d.normalized()
		f.Latency, f.Jitter, f.Distribution, f.Max = d.Latency, d.Jitter, d.Distribution, d.Max
	}
	fl.Params = f
	return fl
}

// hold: the service time adds to the call, and the wait for a slot,
// which has no closed form here, is left out: the most is unbounded.
func (capacityType) hold(fl *Fault, _ int64) Hold {
	return Hold{Kind: HoldAdds, Mean: params[Capacity](fl).Latency, Most: Unbounded}
}

// counterparts: none; the TCP and PostgreSQL planes have no server of
// their own to model.
func (capacityType) counterparts() map[string]counterpart { return nil }

func (capacityType) describe(fl *Fault) string {
	f := params[Capacity](fl)
	s := fmt.Sprintf("capacity: %d at once, %d waiting", f.Capacity, cmp.Or(f.Queue, MaxQueue))
	if d := f.delay(); d != (Delay{}) {
		s += ", service time " + d.String()
	}
	return s
}

func (capacityType) example() Fault {
	return Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 4, Queue: 100, Latency: 20 * time.Millisecond}}
}

// validateSet rejects a set with more than one capacity fault: the
// requests a set affects share one server.
func (capacityType) validateSet(fs []Fault) error {
	first := -1
	for i, f := range fs {
		if f.Type != TypeCapacity {
			continue
		}
		if first >= 0 {
			return fieldErr(fmt.Sprintf("faults[%d].type", i), "at most one capacity fault in a set (faults[%d] is one): the requests it affects share one server", first)
		}
		first = i
	}
	return nil
}

// capacityStats are the proxy's counts of requests holding a slot and
// waiting for one, over every capacity server it has had: a replaced
// set's server drains with the new one's running.
type capacityStats struct {
	inService, queued atomic.Int64
}

// capacityServer is the server of one installed capacity fault: at most
// limit requests hold a slot at once, the others wait in a FIFO queue of
// at most queue. A new fault set gets a new, empty server; requests
// admitted to or waiting in the old one finish there. Safe for concurrent
// use.
type capacityServer struct {
	limit, queue int
	stats        *capacityStats

	mu         sync.Mutex
	busy       int // slots held; waiting > 0 implies busy == limit
	waiting    int
	head, tail *slotWaiter
}

// slotWaiter is one queued request. granted is set, and ready closed, by
// the release that hands it a slot, with the server's mu held.
type slotWaiter struct {
	ready      chan struct{}
	granted    bool
	prev, next *slotWaiter
}

// limits returns the server's slots and queue; zero for no server.
func (s *capacityServer) limits() (limit, queue int) {
	if s == nil {
		return 0, 0
	}
	return s.limit, s.queue
}

func newCapacityServer(fl *Fault) *capacityServer {
	f := params[Capacity](fl)
	return &capacityServer{limit: f.Capacity, queue: f.Queue, stats: new(capacityStats)}
}

// admitResult says how a request's wait for a slot ended.
type admitResult int

const (
	admitted       admitResult = iota // it holds a slot: release it when done
	admitFull                         // the queue was full: rejected at once
	admitCancelled                    // the caller went away while it waited
	admitStopped                      // the proxy is closing
)

// acquire takes a slot: at once if one is free and nobody waits, else
// after waiting in the queue until a release hands it one, gone's channel
// closes (gone is called only if the request has to wait) or stop closes.
// It returns how it ended and how long the request waited. Only admitted
// requests hold a slot; the others leave the server as they found it.
func (s *capacityServer) acquire(gone func() <-chan struct{}, stop <-chan struct{}) (admitResult, time.Duration) {
	s.mu.Lock()
	if s.busy < s.limit {
		s.busy++
		s.stats.inService.Add(1)
		s.mu.Unlock()
		return admitted, 0
	}
	if s.waiting >= s.queue {
		s.mu.Unlock()
		return admitFull, 0
	}
	w := &slotWaiter{ready: make(chan struct{})}
	s.push(w)
	s.mu.Unlock()

	start := time.Now()
	res := admitted
	select {
	case <-w.ready:
		return admitted, time.Since(start)
	case <-gone():
		res = admitCancelled
	case <-stop:
		res = admitStopped
	}
	if s.leave(w) {
		s.release() // handed a slot at the instant it gave up: pass it on
	}
	return res, time.Since(start)
}

// release frees a slot, or hands it to the longest-waiting request.
func (s *capacityServer) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.head; w != nil {
		s.unlink(w) // the slot passes on: busy and in service unchanged
		w.granted = true
		close(w.ready)
		return
	}
	s.busy--
	s.stats.inService.Add(-1)
}

// leave removes w from the queue unless it was granted a slot meanwhile,
// and reports whether it was.
func (s *capacityServer) leave(w *slotWaiter) (granted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		return true
	}
	s.unlink(w)
	return false
}

func (s *capacityServer) push(w *slotWaiter) {
	w.prev = s.tail
	if s.tail != nil {
		s.tail.next = w
	} else {
		s.head = w
	}
	s.tail = w
	s.waiting++
	s.stats.queued.Add(1)
}

func (s *capacityServer) unlink(w *slotWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		s.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		s.tail = w.prev
	}
	w.prev, w.next = nil, nil
	s.waiting--
	s.stats.queued.Add(-1)
}

// admit takes a slot of the set's capacity server for a request that its
// capacity fault fired on; both data planes come here. gone is the
// caller's going away, asked for only if the request has to wait. It
// notes the outcome in the metrics and in e (QueueWaitMS; outcome
// "overloaded", "cancelled" or "stopped" when the request got no slot)
// and returns when the request's service started: arrived if it did not
// wait. An admitted request must release its slot when it ends.
func (p *Proxy) admit(s *capacityServer, gone func() <-chan struct{}, arrived time.Time, e *LedgerEntry) (admitResult, time.Time) {
	p.m.injected[TypeCapacity].Inc()
	res, waited := s.acquire(gone, p.stop)
	e.QueueWaitMS = ms(waited)
	switch res {
	case admitted:
		p.m.queueWait.Observe(waited.Seconds())
		if waited > 0 {
			return res, time.Now()
		}
		return res, arrived
	case admitFull:
		p.m.overloaded.Inc()
		e.Outcome, e.Status = "overloaded", overloaded.Status
	case admitCancelled:
		p.m.cancelled.Inc()
		e.Outcome = "cancelled"
	case admitStopped:
		e.Outcome = "stopped"
	}
	return res, arrived
}
