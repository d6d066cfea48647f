package service

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// burst releases n callers at once on p, each holding its permit until all
// have acquired, queued or been rejected, and returns the permits in use
// then (the most held at once: nobody has released yet). Then it releases
// every permit, waiters' included, and checks that the pool is back to
// empty.
func burst(t *testing.T, p *Pool, n int) int {
	t.Helper()
	start, hold := make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			pm, err := p.Acquire(context.Background())
			if err == nil {
				<-hold
				pm.Release()
			}
		}()
	}
	close(start)
	var peak int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		s := p.Snapshot()
		if s.InUse+s.Waiting+int(s.Rejected.Total()) == n {
			peak = s.InUse
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("burst of %d: after 20 s %+v", n, s)
		}
	}
	close(hold)
	for range n {
		<-done
	}
	if s := p.Snapshot(); s.InUse != 0 || s.Waiting != 0 || !s.ExhaustedSince.IsZero() {
		t.Errorf("burst of %d done: pool %+v, want nothing in use or waiting and no exhaustion", n, s)
	}
	return peak
}

// TestRacyCounterExceedsTheLimit: under a burst of 200 callers against 10
// permits, the racy-counter defect lets more than 10 in at once in some of
// a few tries; the correct pool lets in exactly 10 every time. Both come
// back to empty.
func TestRacyCounterExceedsTheLimit(t *testing.T) {
	const n, size, tries = 200, 10, 5
	for _, cfg := range []PoolConfig{{Size: size}, {Size: size, Queue: 20, MaxWait: time.Minute}} {
		for _, racy := range []bool{false, true} {
			var peaks []int
			for range tries {
				p, err := NewPool("burst", cfg)
				if err != nil {
					t.Fatal(err)
				}
				p.racy = racy
				peaks = append(peaks, burst(t, p, n))
				if racy && peaks[len(peaks)-1] > size {
					break
				}
			}
			t.Logf("pool %+v, racy %v: in use at once %v", cfg, racy, peaks)
			switch exceeded := slices.Max(peaks) > size; {
			case racy && !exceeded:
				t.Errorf("racy pool %+v, bursts of %d: at most %v in use at once, want more than %d in some try", cfg, n, peaks, size)
			case !racy && slices.ContainsFunc(peaks, func(p int) bool { return p != size }):
				t.Errorf("correct pool %+v, bursts of %d: %v in use at once, want %d every time", cfg, n, peaks, size)
			}
		}
	}
}

// TestRacyCounterOverHTTP: the same burst through the service: 200
// requests released at once against a pool of 10 whose dependency calls
// are held. With the racy-counter defect more than 10 calls reach the
// dependency at once in some of a few tries; without it exactly 10 do,
// every try, and the others are rejected. Once the calls are let go, no
// permit is left in use.
func TestRacyCounterOverHTTP(t *testing.T) {
	const n, size, tries = 200, 10, 3
	for _, racy := range []bool{false, true} {
		var h heldCalls
		dep := handlerDep(t, h.serve)
		cfg := Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: size}, Timeout: 20 * time.Second, Conns: 2 * n,
			Endpoints: TwoEndpoints(dep, dep)}
		if racy {
			cfg.Defects = []Defect{DefectRacyCounter}
		}
		svc, url := startService(t, cfg)
		c := testClient(t)
		var peaks []int
		for range tries {
			peaks = append(peaks, httpBurst(t, svc, c, url+"/a", n, &h))
			if racy && peaks[len(peaks)-1] > size {
				break
			}
		}
		t.Logf("racy %v: calls at once %v", racy, peaks)
		switch exceeded := slices.Max(peaks) > size; {
		case racy && !exceeded:
			t.Errorf("racy pool of %d, bursts of %d requests: at most %v calls at once, want more than %d in some try", size, n, peaks, size)
		case !racy && slices.ContainsFunc(peaks, func(p int) bool { return p != size }):
			t.Errorf("correct pool of %d, bursts of %d requests: %v calls at once, want %d every time", size, n, peaks, size)
		}
	}
}

// heldCalls is a dependency that holds every call until its gate closes
// (or the caller goes away), counting the calls that arrived.
type heldCalls struct {
	arrived atomic.Int64
	gate    atomic.Pointer[chan struct{}]
}

func (h *heldCalls) serve(w http.ResponseWriter, r *http.Request) {
	h.arrived.Add(1)
	select {
	case <-*h.gate.Load():
	case <-r.Context().Done():
	}
}

// httpBurst sends n requests to url at once, with h holding the calls that
// reach it, and returns how many reached it (the permits in use then) once
// every request has reached it or been rejected. Then it lets the calls
// go and checks that no permit is left in use.
func httpBurst(t *testing.T, svc *Service, c *http.Client, url string, n int, h *heldCalls) int {
	t.Helper()
	gate := make(chan struct{})
	h.gate.Store(&gate)
	h.arrived.Store(0)
	var rejected atomic.Int64
	start, done := make(chan struct{}), make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			if r := get(t, c, url, nil); r.status == http.StatusServiceUnavailable {
				rejected.Add(1)
			}
		}()
	}
	close(start)
	pool := svc.Layout().Pool(EndpointA)
	var peak int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if h.arrived.Load()+rejected.Load() == int64(n) {
			peak = pool.Snapshot().InUse
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("burst of %d: after 20 s %d calls arrived, %d rejected", n, h.arrived.Load(), rejected.Load())
			break
		}
	}
	close(gate)
	for range n {
		<-done
	}
	waitIdle(t, svc, EndpointA)
	if s := pool.Snapshot(); s.InUse != 0 || s.Waiting != 0 {
		t.Errorf("burst of %d done: pool %+v, want nothing in use or waiting", n, s)
	}
	if got := int(h.arrived.Load()); got != peak {
		t.Errorf("burst of %d: %d calls arrived but %d permits were in use", n, got, peak)
	}
	return peak
}
