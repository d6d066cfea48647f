package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/mgc"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// planes are the two data planes: the raw HTTP/1.x one (the default for an
// http upstream) and net/http's (with a Transport of the caller's).
var planes = []struct {
	name string
	opt  envOption
	raw  bool
}{
	{"raw", func(*Config) {}, true},
	{"net/http", func(c *Config) { c.Transport = NewTransport() }, false},
}

// newPlaneEnv is newEnv on the given plane, checked.
func newPlaneEnv(t *testing.T, raw bool, opts ...envOption) *testEnv {
	t.Helper()
	e := newEnv(t, opts...)
	if _, isRaw := e.srv.data.(*rawServer); isRaw != raw {
		t.Fatalf("data plane served by %T, want raw %v", e.srv.data, raw)
	}
	return e
}

// concurrentTimes sends n GETs through e at once (mgc.Burst) and returns
// how long after their common start each answer had been read, sorted.
func concurrentTimes(t *testing.T, e *testEnv, n int) []time.Duration {
	t.Helper()
	out, err := mgc.Burst(n, func() error {
		status, _, _, err := e.get(context.Background(), "/", "")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d", status)
		}
		return err
	})
	if err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	return out
}

// TestCapacityFaultQueuesFIFO: on either data plane, a capacity fault of C
// slots with a 20ms service time answers 8 requests at once after one
// service time (C of them) or two (the rest); a latency fault of the same
// delay (no capacity) answers all 8 after one. What an M/G/c server
// guarantees (the k-th group no earlier than k service times) is checked
// on every attempt. The grouping is checked with generous bounds (a gap of
// half a service time between groups, within a second in all), and
// measured up to 3 times: on 2 busy cores a request can be held up by a
// scheduler for a while.
func TestCapacityFaultQueuesFIFO(t *testing.T) {
	const lat = 20 * time.Millisecond
	tests := []struct {
		name     string
		fault    Fault
		perGroup int   // served at once
		want     []int // group sizes
	}{
		{"latency-only", Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: lat}}, 8, []int{8}},
		{"capacity-4", Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 4, Latency: lat}}, 4, []int{4, 4}},
		{"capacity-8", Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 8, Latency: lat}}, 8, []int{8}},
	}
	for _, pl := range planes {
		for _, tt := range tests {
			t.Run(pl.name+"/"+tt.name, func(t *testing.T) {
				e := newPlaneEnv(t, pl.raw, pl.opt)
				e.set(t, tt.fault)
				var attempts []string
				for attempt := 1; ; attempt++ {
					got := concurrentTimes(t, e, 8)
					groups := mgc.Groups(got, lat)
					t.Logf("%s plane, %s (%v), 8 requests at once: %v (groups %v)", pl.name, tt.name, lat, got, groups)
					if i, floor := mgc.Early(got, tt.perGroup, lat); i >= 0 {
						t.Fatalf("%s plane, %s: answer %d of 8 after %v, before %v (all: %v)", pl.name, tt.name, i+1, got[i], floor, got)
					}
					// A slot is given back just after its answer is written,
					// so the last caller can read its answer a moment before
					// the proxy's goroutine releases it: a slot still held a
					// second after every answer is a leak.
					held := func() int64 { return e.p.capacity.inService.Load() + e.p.capacity.queued.Load() }
					for end := time.Now().Add(time.Second); held() != 0 && time.Now().Before(end); {
						time.Sleep(time.Millisecond)
					}
					if n := held(); n != 0 {
						t.Fatalf("%d requests still in service or waiting a second after every answer", n)
					}
					if slices.Equal(groups, tt.want) && got[len(got)-1] < time.Second {
						return
					}
					attempts = append(attempts, fmt.Sprintf("%v (groups %v)", got, groups))
					if attempt == 3 {
						t.Errorf("%s plane, %s: 8 requests at once answered in groups of %v, want %v:\n%s", pl.name, tt.name, groups, tt.want, strings.Join(attempts, "\n"))
						return
					}
				}
			})
		}
	}
}

// metricsText returns the proxy's /metrics.
func metricsText(t *testing.T, e *testEnv) string {
	t.Helper()
	resp, err := e.ctl.hc.Get("http://" + e.srv.ControlAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestCapacityFaultOverflowAndCancel: on either data plane, with the slot
// taken and the queue full, a request is answered 503 with
// X-Dep-Overloaded at once; a waiting request whose caller goes away
// leaves the queue; the metrics say so.
func TestCapacityFaultOverflowAndCancel(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			e := newPlaneEnv(t, pl.raw, pl.opt)
			e.set(t, Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 1, Queue: 1, Latency: MaxDuration}})
			send := func(ctx context.Context) <-chan error {
				done := make(chan error, 1)
				go func() {
					_, _, _, err := e.get(ctx, "/", "")
					done <- err
				}()
				return done
			}
			served, cancelServed := context.WithCancel(context.Background())
			defer cancelServed()
			servedDone := send(served)
			testkit.WaitFor(t, 10*time.Second, "the first request to take the slot", func() bool { return e.p.capacity.inService.Load() == 1 })
			waiting, cancelWaiting := context.WithCancel(context.Background())
			defer cancelWaiting()
			waitingDone := send(waiting)
			testkit.WaitFor(t, 10*time.Second, "the second request to queue", func() bool { return e.p.capacity.queued.Load() == 1 })

			start := time.Now()
			status, _, h, err := e.get(context.Background(), "/", "")
			if err != nil || status != http.StatusServiceUnavailable || h.Get(HeaderOverloaded) != "queue-full" || time.Since(start) > 5*time.Second {
				t.Errorf("request with the queue full: %d %s=%q %v after %v, want 503 queue-full at once",
					status, HeaderOverloaded, h.Get(HeaderOverloaded), err, time.Since(start))
			}
			m := metricsText(t, e)
			for _, want := range []string{
				rundata.MetricProxyCapacity + " 1", "faultproxy_capacity_queue_limit 1",
				rundata.MetricProxyInService + " 1", rundata.MetricProxyQueueLength + " 1",
				"faultproxy_capacity_overloaded_total 1", `faultproxy_faults_injected_total{type="capacity"} 3`,
			} {
				if !strings.Contains(m, want+"\n") {
					t.Errorf("/metrics with one served and one waiting lacks %q", want)
				}
			}

			cancelWaiting()
			if err := <-waitingDone; !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled waiting request: %v, want context.Canceled", err)
			}
			testkit.WaitFor(t, 10*time.Second, "the cancelled request to leave the queue", func() bool { return e.p.capacity.queued.Load() == 0 })
			m = metricsText(t, e)
			for _, want := range []string{rundata.MetricProxyQueueLength + " 0", rundata.MetricProxyInService + " 1",
				"faultproxy_cancelled_total 1", rundata.MetricProxyQueueWaitCount + " 1"} {
				if !strings.Contains(m, want+"\n") {
					t.Errorf("/metrics after the waiting caller left lacks %q", want)
				}
			}
			cancelServed()
			<-servedDone
			testkit.WaitFor(t, 10*time.Second, "the slot to be free", func() bool { return e.p.capacity.inService.Load() == 0 && e.p.Inflight() == 0 })
			if n := e.upCalls.Load(); n != 0 {
				t.Errorf("upstream called %d times, want 0 (every request was rejected or gave up)", n)
			}
		})
	}
}

// TestCapacityFaultHoldsSlotThroughUpstream: a request holds its slot
// during its upstream call, so the upstream's own latency is service time:
// with one slot, a second request reaches the upstream only after the
// first one's answer.
func TestCapacityFaultHoldsSlotThroughUpstream(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			entered := make(chan struct{}, 2)
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				<-release
				_, _ = io.WriteString(w, "done")
			}))
			defer up.Close()
			u, _ := url.Parse(up.URL)
			e := newPlaneEnv(t, pl.raw, pl.opt, func(c *Config) { c.Upstream = u })
			e.set(t, Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 1}})
			results := make(chan error, 2)
			for range 2 {
				go func() {
					status, body, _, err := e.get(context.Background(), "/", "")
					if err == nil && (status != 200 || body != "done") {
						err = fmt.Errorf("got %d %q", status, body)
					}
					results <- err
				}()
			}
			<-entered
			testkit.WaitFor(t, 10*time.Second, "the second request to queue", func() bool { return e.p.capacity.queued.Load() == 1 })
			select {
			case <-entered:
				t.Fatal("the second request reached the upstream while the first held the only slot")
			default:
			}
			release <- struct{}{} // the first answers; the second gets the slot
			<-entered
			release <- struct{}{}
			for range 2 {
				if err := <-results; err != nil {
					t.Error(err)
				}
			}
			testkit.WaitFor(t, 10*time.Second, "the slot to be free", func() bool { return e.p.capacity.inService.Load() == 0 })
		})
	}
}

// TestCapacityServerFIFO: slots go to waiting requests in arrival order; a
// request that gives up or is stopped leaves the queue, and one handed a
// slot at the instant it gave up passes it on.
func TestCapacityServerFIFO(t *testing.T) {
	s := newCapacityServer(&Fault{Type: TypeCapacity, Params: Capacity{Capacity: 1, Queue: 3}})
	never := func() <-chan struct{} { return nil }
	if res, _ := s.acquire(never, nil); res != admitted {
		t.Fatalf("first acquire = %v, want admitted", res)
	}
	order := make(chan int, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, _ := s.acquire(never, nil); res == admitted {
				order <- i
				s.release()
			}
		}()
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("waiter %d to queue", i), func() bool { return s.stats.queued.Load() == int64(i+1) })
	}
	if res, _ := s.acquire(never, nil); res != admitFull {
		t.Errorf("acquire with the queue full = %v, want admitFull", res)
	}
	s.release()
	wg.Wait()
	close(order)
	if got := slices.Collect(func(yield func(int) bool) {
		for i := range order {
			yield(i)
		}
	}); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("slots went to waiters in order %v, want [0 1 2]", got)
	}

	// A waiter that gives up, and one stopped, leave the queue.
	if res, _ := s.acquire(never, nil); res != admitted {
		t.Fatal("no free slot after every waiter released")
	}
	gone, stop := make(chan struct{}), make(chan struct{})
	close(gone)
	if res, _ := s.acquire(func() <-chan struct{} { return gone }, nil); res != admitCancelled {
		t.Errorf("acquire of a caller gone = %v, want admitCancelled", res)
	}
	close(stop)
	if res, _ := s.acquire(never, stop); res != admitStopped {
		t.Errorf("acquire while stopping = %v, want admitStopped", res)
	}
	s.release()
	if in, q := s.stats.inService.Load(), s.stats.queued.Load(); in != 0 || q != 0 || s.head != nil {
		t.Errorf("after all: %d in service, %d queued, head %v; want none", in, q, s.head)
	}

	// Handed a slot at the instant it gave up: the slot passes on.
	if res, _ := s.acquire(never, nil); res != admitted {
		t.Fatal("no free slot")
	}
	w := &slotWaiter{ready: make(chan struct{})}
	s.mu.Lock()
	s.push(w)
	s.mu.Unlock()
	s.release() // hands the slot to w
	if !s.leave(w) {
		t.Fatal("a waiter handed a slot did not know it")
	}
	s.release() // what acquire does then
	if in := s.stats.inService.Load(); in != 0 || s.busy != 0 {
		t.Errorf("after a slot passed on to nobody: %d in service, busy %d; want 0", in, s.busy)
	}
}

// TestCapacityDecision: a capacity fault that fires marks the decision and
// adds its service time to the delay; the ledger names it.
func TestCapacityDecision(t *testing.T) {
	tests := []struct {
		faults    []Fault
		wantFired bool
		wantDelay time.Duration
		wantName  string
	}{
		{[]Fault{{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 2}}}, true, 0, "capacity"},
		{[]Fault{{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 2, Latency: 20 * time.Millisecond}}}, true, 20 * time.Millisecond, "capacity"},
		{[]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 5 * time.Millisecond}},
			{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 2, Latency: 20 * time.Millisecond}},
			{Type: TypeError, Percent: 100}}, true, 25 * time.Millisecond, "capacity+latency+error"},
		{[]Fault{{Type: TypeCapacity, Percent: 0, Params: Capacity{Capacity: 2}}, {Type: TypeAbort, Percent: 100}}, false, 0, "abort"},
	}
	for _, tt := range tests {
		set := newFaultSet(tt.faults)
		d := set.decide(1, 1, allMatched)
		if d.Capacity != tt.wantFired || d.Delay != tt.wantDelay || d.String() != tt.wantName || set.capacity == nil {
			t.Errorf("decide(%+v) = %+v %q (server %v), want capacity %v, delay %v, %q and a server",
				tt.faults, d, d.String(), set.capacity != nil, tt.wantFired, tt.wantDelay, tt.wantName)
		}
	}
}

// TestCapacityFaultLedger: the ledger records a request's wait for a slot
// and an overloaded answer.
func TestCapacityFaultLedger(t *testing.T) {
	var buf strings.Builder
	l := NewLedger(&buf, 0)
	e := newEnv(t, func(c *Config) { c.Ledger = l })
	e.set(t, Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 1, Queue: 1, Latency: MaxDuration}})
	send := func(id string) (context.CancelFunc, <-chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, _, _, err := e.get(ctx, "/", id)
			done <- err
		}()
		return cancel, done
	}
	cancelA, doneA := send("a")
	defer cancelA()
	testkit.WaitFor(t, 10*time.Second, "a to take the slot", func() bool { return e.p.capacity.inService.Load() == 1 })
	cancelB, doneB := send("b")
	defer cancelB()
	testkit.WaitFor(t, 10*time.Second, "b to queue", func() bool { return e.p.capacity.queued.Load() == 1 })
	if status, _, _, err := e.get(context.Background(), "/", "c"); status != 503 || err != nil {
		t.Errorf("c = %d %v, want 503", status, err)
	}
	cancelA() // b gets the slot, after a wait
	<-doneA
	testkit.WaitFor(t, 10*time.Second, "b to get the slot", func() bool { return e.p.capacity.queued.Load() == 0 })
	cancelB()
	<-doneB
	testkit.WaitFor(t, 10*time.Second, "every request to end", func() bool { return e.p.Inflight() == 0 })
	e.srv.Shutdown(context.Background())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		for _, id := range []string{"a", "b", "c"} {
			if strings.Contains(line, `"request_id":"`+id+`"`) {
				lines[id] = line
			}
		}
	}
	for _, tt := range []struct{ id, want string }{
		{"a", `"decision":"capacity"`}, {"a", `"outcome":"cancelled"`},
		{"b", `"queue_wait_ms":`}, {"b", `"outcome":"cancelled"`},
		{"c", `"outcome":"overloaded","status":503`},
	} {
		if !strings.Contains(lines[tt.id], tt.want) {
			t.Errorf("ledger line of %s = %s, want %s", tt.id, lines[tt.id], tt.want)
		}
	}
}

// TestCapacityFaultShutdown: on either data plane, Shutdown ends a request
// being served and one waiting for a slot at once (their connections are
// cut), and returns without waiting for the service time.
func TestCapacityFaultShutdown(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			e := newPlaneEnv(t, pl.raw, pl.opt)
			e.set(t, Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 1, Latency: MaxDuration}})
			errs := make(chan error, 2)
			for i := range 2 {
				go func() {
					_, _, _, err := e.get(context.Background(), "/", "")
					errs <- err
				}()
				testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("request %d to be served or queued", i+1), func() bool {
					return e.p.capacity.inService.Load()+e.p.capacity.queued.Load() == int64(i+1)
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if err := e.srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			for range 2 {
				if err := <-errs; err == nil {
					t.Error("a request served or queued during Shutdown got an answer, want its connection cut")
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Shutdown with a request served and one queued took %v", d)
			}
			if in, q := e.p.capacity.inService.Load(), e.p.capacity.queued.Load(); in != 0 || q != 0 {
				t.Errorf("after Shutdown: %d in service, %d queued; want none", in, q)
			}
		})
	}
}
