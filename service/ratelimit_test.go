package service

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestRateLimitIsNotABulkhead: dependency A becomes ten times slower
// (100 ms instead of 10) while /a is still called at its normal rate,
// 80/s, and /b (a fast dependency) at 20/s, all through one shared pool of
// 4 connections. A rate limit of 200/s per dependency never refuses a
// call, so A's calls in flight rise to rate × latency (8), hold every
// connection, and /b waits behind them; a bulkhead of 2 for each
// dependency refuses A's calls past 2 and /b keeps its connections. The
// control: with A at its normal latency the rate limit serves /b too.
func TestRateLimitIsNotABulkhead(t *testing.T) {
	const (
		aRate, bEvery = 80, 4 // /a calls per second; /b on every 4th tick
		ticks         = 80    // 1 s
		conns         = 4
		fast          = 100 * time.Millisecond // a /b answer this quick is served
	)
	normalA := startDep(t, DepConfig{Name: "A", Latency: 10 * time.Millisecond})
	slowA := startDep(t, DepConfig{Name: "A", Latency: 100 * time.Millisecond})
	fastB := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond, Size: 2})
	rateLimit := LayoutConfig{Mode: ModeRateLimit, Rate: 200, MaxWait: 50 * time.Millisecond}
	for _, tt := range []struct {
		name   string
		layout LayoutConfig
		depA   string
		holds  bool // /b is served
	}{
		{"ratelimit", rateLimit, slowA, false},
		{"bulkhead", LayoutConfig{Mode: ModeBulkhead, PoolSizes: map[string]int{"a": 2, "b": 2}}, slowA, true},
		{"ratelimit, A not slow", rateLimit, normalA, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc, url := startService(t, Config{Layout: tt.layout, Timeout: 300 * time.Millisecond,
				ConnsLayout: ConnsShared, Conns: conns, Endpoints: TwoEndpoints(tt.depA, fastB)})
			c := testClient(t)
			stop, sampled := make(chan struct{}), make(chan peaks, 1)
			go func() { sampled <- samplePeaks(t, svc, "a", stop) }()
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				aStatus = map[int]int{}
				bOK     int
			)
			tk := time.NewTicker(time.Second / aRate)
			for i := range ticks {
				<-tk.C
				wg.Go(func() {
					r := get(t, c, url+"/a", nil)
					mu.Lock()
					defer mu.Unlock()
					aStatus[r.status]++
					if r.header.Get(rundata.HeaderBulkheadReject) == RejectRate {
						t.Errorf("/a refused by its rate limit at %d/s, under the limit", aRate)
					}
				})
				if i%bEvery == 0 {
					wg.Go(func() {
						r := get(t, c, url+"/b", nil)
						mu.Lock()
						defer mu.Unlock()
						if r.status == http.StatusOK && r.elapsed < fast {
							bOK++
						}
					})
				}
			}
			tk.Stop()
			wg.Wait()
			close(stop)
			pk := <-sampled
			bCalls := ticks / bEvery
			t.Logf("%s: A at %d/s: peak %v calls to A in flight, /a answers %v; /b %d of %d served in < %v (%d%%)",
				tt.name, aRate, pk.inflight, aStatus, bOK, bCalls, fast, 100*bOK/bCalls)
			if tt.holds {
				if bOK < bCalls*9/10 {
					t.Errorf("/b %d of %d served quickly, want at least 90%%", bOK, bCalls)
				}
				if tt.layout.Mode == ModeBulkhead && pk.inflight > 2 {
					t.Errorf("bulkhead: peak %v calls to A in flight, want at most 2", pk.inflight)
				}
				return
			}
			if pk.inflight <= conns {
				t.Errorf("rate limit: peak %v calls to A in flight, want them to pile up past the %d connections", pk.inflight, conns)
			}
			if bOK > bCalls/2 {
				t.Errorf("rate limit: /b %d of %d served quickly, want at most half (A's calls hold the connections)", bOK, bCalls)
			}
			m := get(t, c, url+"/metrics", nil).body
			if !strings.Contains(m, `bulkheadlab_ratelimit_rejected_total{dependency="a"} 0`) || !strings.Contains(m, `bulkheadlab_ratelimit_rate{dependency="a"} 200`) {
				t.Errorf("/metrics: want rate 200 and no refusal for a")
			}
		})
	}
}

// TestRateLimitRefusesOverTheRate: at 10 calls/s with no wait, calls in
// quick succession are refused at once, past the first.
func TestRateLimitRefusesOverTheRate(t *testing.T) {
	dep := startDep(t, DepConfig{Name: "A", Latency: time.Millisecond, Size: 1})
	_, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeRateLimit, Rate: 1000, Rates: map[string]float64{"a": 10}},
		Timeout: time.Second, Endpoints: TwoEndpoints(dep, dep)})
	c := testClient(t)
	ok, refused := 0, 0
	for range 4 {
		switch r := get(t, c, url+"/a", nil); {
		case r.status == http.StatusOK:
			ok++
		case r.status == http.StatusServiceUnavailable && r.header.Get(rundata.HeaderBulkheadReject) == RejectRate && r.elapsed < 50*time.Millisecond:
			refused++
		}
	}
	if ok < 1 || ok+refused != 4 || refused < 2 {
		t.Errorf("4 calls in quick succession at 10/s: %d ok, %d refused at once; want the first ok and most of the rest refused", ok, refused)
	}
	if r := get(t, c, url+"/b", nil); r.status != http.StatusOK {
		t.Errorf("/b under its own limit: %d, want 200", r.status)
	}
}
