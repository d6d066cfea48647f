package service

import (
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// peaks are the largest values seen while sampling a service.
type peaks struct {
	inflight, state float64
	// heapGrowth is the heap's growth over its value before the load,
	// read when state peaked.
	heapGrowth float64
}

// samplePeaks samples dependency dep's in-flight calls, the request state
// held and the heap every 2 ms until stop is closed.
func samplePeaks(t *testing.T, svc *Service, dep string, stop <-chan struct{}) peaks {
	runtime.GC()
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	base := float64(heapObjects(sample))
	var pk peaks
	tk := time.NewTicker(2 * time.Millisecond)
	defer tk.Stop()
	for {
		in, st := metricValue(t, svc.metrics.depInflight.WithLabelValues(dep)), metricValue(t, svc.metrics.stateBytes)
		pk.inflight = max(pk.inflight, in)
		if st > pk.state {
			pk.state, pk.heapGrowth = st, float64(heapObjects(sample))-base
		}
		select {
		case <-stop:
			return pk
		case <-tk.C:
		}
	}
}

// TestUnboundedInflightGrows: requests arrive at 100/s for 0.6 s on a
// dependency of 200 ms. With no bound on the calls in flight (the
// event-loop model) the calls in flight rise to arrival rate × latency
// (Little's law: 20), each holding its request's state, and the heap grows
// with them; a pool of 4 keeps them at 4 and refuses the rest.
func TestUnboundedInflightGrows(t *testing.T) {
	const (
		rate     = 100
		arrivals = 60
		delay    = 200 * time.Millisecond
		state    = 128 << 10
		p        = 4
	)
	littles := rate * delay.Seconds()
	dep := startDep(t, DepConfig{Name: "A", Latency: delay})
	for _, mode := range []Mode{ModeUnbounded, ModeShared} {
		t.Run(string(mode), func(t *testing.T) {
			svc, url := startService(t, Config{Layout: LayoutConfig{Mode: mode, PoolSize: p}, Timeout: time.Second,
				Endpoints: []Endpoint{{Name: "a", URL: dep}}, RequestStateBytes: state})
			c := testClient(t)
			stop, sampled := make(chan struct{}), make(chan peaks, 1)
			go func() { sampled <- samplePeaks(t, svc, "a", stop) }()
			var wg sync.WaitGroup
			tk := time.NewTicker(time.Second / rate)
			for range arrivals {
				<-tk.C
				wg.Go(func() { get(t, c, url+"/a", nil) })
			}
			tk.Stop()
			wg.Wait()
			close(stop)
			pk := <-sampled
			t.Logf("%s: peak %v calls in flight (rate × latency = %v), %.0f KiB of request state, heap +%.0f KiB",
				mode, pk.inflight, littles, pk.state/1024, pk.heapGrowth/1024)
			if mode == ModeUnbounded {
				if pk.inflight < 0.6*littles || pk.inflight > 1.5*littles+2 {
					t.Errorf("unbounded: peak %v calls in flight, want about %v (rate × latency)", pk.inflight, littles)
				}
				if pk.state < 0.6*littles*state || pk.heapGrowth < pk.state/2 {
					t.Errorf("unbounded: peak state %v bytes, heap growth %v; want at least %v and half the state", pk.state, pk.heapGrowth, 0.6*littles*state)
				}
			} else if pk.inflight > p || pk.state > p*state {
				t.Errorf("a pool of %d: peak %v calls in flight holding %v bytes, want at most %d and %d", p, pk.inflight, pk.state, p, p*state)
			}
			if v := metricValue(t, svc.metrics.stateBytes); v != 0 {
				t.Errorf("request state after every call returned: %v bytes, want 0", v)
			}
		})
	}
}

// TestHeapGuard: at or past the heap ceiling every request is refused at
// once without calling the dependency; an unbounded service whose calls
// are held stops admitting them once their state reaches the ceiling.
func TestHeapGuard(t *testing.T) {
	fast := startDep(t, DepConfig{Name: "A", Latency: time.Millisecond, Size: 2})
	c := testClient(t)
	for _, tt := range []struct {
		ceiling int64
		status  int
	}{{1, http.StatusServiceUnavailable}, {1 << 40, http.StatusOK}} {
		svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 2}, Timeout: time.Second,
			Endpoints: TwoEndpoints(fast, fast), MaxHeapBytes: tt.ceiling})
		r := get(t, c, url+"/a", nil)
		refused := r.status == http.StatusServiceUnavailable && r.header.Get(rundata.HeaderBulkheadReject) == RejectHeap
		if r.status != tt.status || (tt.status != http.StatusOK && !refused) {
			t.Errorf("ceiling %d: %d %s, want %d", tt.ceiling, r.status, r.header.Get(rundata.HeaderBulkheadReject), tt.status)
		}
		calls := metricValue(t, svc.metrics.requests.WithLabelValues("a", outcomeOK))
		if want := map[bool]float64{false: 1}[refused]; calls != want {
			t.Errorf("ceiling %d: %v dependency calls, want %v", tt.ceiling, calls, want)
		}
		if m := get(t, c, url+"/metrics", nil).body; !strings.Contains(m, "bulkheadlab_heap_guard_limit_bytes") ||
			!strings.Contains(m, "go_memstats_heap_alloc_bytes") || !strings.Contains(m, "process_resident_memory_bytes") {
			t.Errorf("/metrics lacks the heap ceiling, the heap or the resident set")
		}
	}

	const state, n = 128 << 10, 30
	held := startHeldDep(t, n)
	runtime.GC()
	base := int64(heapObjects([]metrics.Sample{{Name: heapObjectsMetric}}))
	svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeUnbounded}, Timeout: 30 * time.Second,
		Endpoints: TwoEndpoints(held.url, held.url), RequestStateBytes: state, MaxHeapBytes: base + 1<<20})
	replies := make(chan reply, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { replies <- get(t, c, url+"/a", nil) })
		time.Sleep(3 * time.Millisecond) // past the guard's read interval
	}
	refused := 0
	testkit.WaitFor(t, 10*time.Second, "every call to be held or refused", func() bool {
		for {
			select {
			case r := <-replies:
				if r.header.Get(rundata.HeaderBulkheadReject) == RejectHeap {
					refused++
				}
				continue
			default:
			}
			return int(held.calls.Load())+refused == n
		}
	})
	admitted := held.calls.Load()
	t.Logf("heap ceiling 1 MiB above the heap, %d KiB per call: %d calls admitted, %d refused", state>>10, admitted, refused)
	// A call's state is allocated after its admission, so calls admitted
	// together may overshoot the ceiling by a few (more under the race
	// detector); without the ceiling all 30 would be.
	if most := (1<<20)/state + 6; refused == 0 || admitted > int64(most) {
		t.Errorf("%d calls admitted and %d refused, want at most %d admitted (the ceiling's worth of state, and a few)", admitted, refused, most)
	}
	held.release()
	wg.Wait()
	if v := metricValue(t, svc.heapGuard.rejected); v != float64(refused) {
		t.Errorf("bulkheadlab_heap_guard_rejected_total %v, want %d", v, refused)
	}
}
