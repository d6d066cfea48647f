package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// synthFeed returns a sample generator for two endpoints at rate/s each:
// latencies from a seeded log-uniform spread, 1 % errors, small lag, and
// results arriving slightly out of order.
func synthFeed(rate float64, dur time.Duration) (*aggregator, func(i int64) sample) {
	phases := []phaseSpan{{"baseline", 0, int64(dur / 3)}, {"fault", int64(dur / 3), int64(2 * dur / 3)}, {"recovery", int64(2 * dur / 3), int64(dur)}}
	a := testAgg(dur, time.Second, phases, rate, rate)
	a.cfg.maxOpen = 16
	rng := rand.New(rand.NewSource(1))
	lat := make([]int64, 4096)
	for i := range lat {
		lat[i] = int64(100*time.Microsecond) << rng.Intn(12)
	}
	s := a.eps[0].sched.(schedule)
	return a, func(i int64) sample {
		n := i / 2
		if i%8 == 1 { // mild reordering
			n = max(0, n-3)
		}
		c := ClassOK
		if i%100 == 0 {
			c = ClassRejected
		}
		due := s.at(n)
		return sample{intended: due, actual: due + int64(i%7)*1000, latency: lat[i%4096], ep: int32(i % 2), class: c}
	}
}

// BenchmarkAggregator feeds synthetic results straight into the
// aggregator (no channels): the cost per result of windows, phases and
// histograms. Target: ≥ 1 000 000 results/s on one core, ~0 allocs/result.
func BenchmarkAggregator(b *testing.B) {
	a, next := synthFeed(10000, time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range int64(b.N) {
		a.add(next(i))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
}

// BenchmarkTenMinuteRun simulates a 10-minute run at 1000 results/s (two
// endpoints at 500/s, 600 000 results, 1 s windows) through the aggregator
// with a fake clock, and reports the heap in use after each simulated
// minute: it must stay flat and under 50 MB.
func BenchmarkTenMinuteRun(b *testing.B) {
	for range b.N {
		a, next := synthFeed(500, 10*time.Minute)
		var peak, first uint64
		var ms runtime.MemStats
		for i := range int64(600000) {
			a.add(next(i))
			if i%60000 == 59999 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				if first == 0 {
					first = ms.HeapInuse
				}
				peak = max(peak, ms.HeapInuse)
			}
		}
		a.flush(int64(10 * time.Minute))
		_ = a.phaseStats(int64(10*time.Minute), []int64{300000, 300000}, Config{})
		b.ReportMetric(float64(first)/(1<<20), "MB-heap-1min")
		b.ReportMetric(float64(peak)/(1<<20), "MB-heap-peak")
		b.ReportMetric(float64(len(a.windows)), "windows")
	}
}

// BenchmarkBurstSpread fires one burst per iteration at a loopback server
// that answers at once and reports the medians over the iterations of the
// spread of the writes (first to last), of the release's lag behind its
// instant, and of the last response's offset. Run it with a few
// iterations: go test -run '^$' -bench BurstSpread -benchtime 7x ./loadgen
func BenchmarkBurstSpread(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	cl, _ := NewClassifier(DefaultRules())
	for _, n := range []int{50, 200, 1000} {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			bp, err := newBurstPlan(Burst{Label: "b", Target: "a", Requests: n}, Target{Name: "a", URL: srv.URL + "/"}, cl, 10*time.Second, nil)
			if err != nil {
				b.Fatal(err)
			}
			var spread, release, last []time.Duration
			for b.Loop() {
				at := time.Now().Add(BurstDialLead)
				rs, released := bp.fire(context.Background(), time.Now(), at)
				s := bp.stats(at, at, released, rs)
				if s.Counts[ClassOK] != int64(n) || s.LateDials != 0 {
					b.Fatalf("burst of %d: counts %v, %d late dials", n, s.Counts, s.LateDials)
				}
				spread, release, last = append(spread, s.Spread()), append(release, s.Release), append(last, s.LastResponse)
			}
			b.ReportMetric(float64(median(spread).Microseconds()), "µs-spread")
			b.ReportMetric(float64(median(release).Microseconds()), "µs-release-lag")
			b.ReportMetric(float64(median(last).Microseconds()), "µs-last-response")
		})
	}
}
