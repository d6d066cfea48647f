package faultproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Benchmarks compare a call through the proxy with a direct call to the same
// upstream, and measure delay precision. Each iteration is one bounded,
// paced round; run them with -benchtime=1x, e.g.
//
//	go test -run '^$' -bench . -benchtime 1x ./faultproxy
//
// Targets (read from the output, never asserted): added p50 ≤ 150 µs;
// delay p99 |actual − requested| ≤ 2 ms.

type benchEnv struct {
	up, proxy string
	p         *Proxy
	hc        *http.Client
	close     func()
}

func newBenchEnv(b *testing.B, cfg Config) *benchEnv {
	b.Helper()
	body := strings.Repeat("x", 64)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	u, _ := url.Parse(up.URL)
	cfg.Upstream = u
	cfg.ErrorLog = log.New(io.Discard, "", 0)
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 2048}
	return &benchEnv{up: up.URL, proxy: "http://" + srv.Addr(), p: p, hc: &http.Client{Transport: tr},
		close: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			tr.CloseIdleConnections()
			up.Close()
		}}
}

func (e *benchEnv) call(base string) (time.Duration, error) {
	start := time.Now()
	resp, err := e.hc.Get(base + "/")
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), nil
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type phaseResult struct {
	lat     []time.Duration
	cpu     time.Duration // per request
	rate    float64       // achieved requests/s
	errors  int
	elapsed time.Duration
}

// paced sends n requests to base at rate (open model: one goroutine per
// request at its scheduled time).
func (e *benchEnv) paced(base string, rate float64, n int) phaseResult {
	lat := make([]time.Duration, n)
	errs := make([]bool, n)
	interval := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	cpu0, start := cpuTime(), time.Now()
	for i := 0; i < n; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := e.call(base)
			lat[i], errs[i] = d, err != nil
		}()
	}
	wg.Wait()
	return finish(lat, errs, cpu0, start)
}

// closed sends n requests to base from c workers as fast as possible.
func (e *benchEnv) closed(base string, c, n int) phaseResult {
	lat := make([]time.Duration, n)
	errs := make([]bool, n)
	var wg sync.WaitGroup
	cpu0, start := cpuTime(), time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += c {
				d, err := e.call(base)
				lat[i], errs[i] = d, err != nil
			}
		}()
	}
	wg.Wait()
	return finish(lat, errs, cpu0, start)
}

func finish(lat []time.Duration, errs []bool, cpu0 time.Duration, start time.Time) phaseResult {
	r := phaseResult{elapsed: time.Since(start)}
	r.cpu = (cpuTime() - cpu0) / time.Duration(len(lat))
	r.rate = float64(len(lat)) / r.elapsed.Seconds()
	for i, bad := range errs {
		if bad {
			r.errors++
		} else {
			r.lat = append(r.lat, lat[i])
		}
	}
	slices.Sort(r.lat)
	return r
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func reportOverhead(b *testing.B, direct, proxied phaseResult) {
	if direct.errors+proxied.errors > 0 {
		b.Errorf("errors: direct %d, proxied %d", direct.errors, proxied.errors)
	}
	b.ReportMetric(us(quantile(direct.lat, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(quantile(proxied.lat, 0.5)), "proxied-p50-µs")
	b.ReportMetric(us(quantile(proxied.lat, 0.5)-quantile(direct.lat, 0.5)), "added-p50-µs")
	b.ReportMetric(us(quantile(proxied.lat, 0.99)-quantile(direct.lat, 0.99)), "added-p99-µs")
	b.ReportMetric(us(direct.cpu), "direct-cpu-µs/req")
	b.ReportMetric(us(proxied.cpu-direct.cpu), "added-cpu-µs/req")
	b.ReportMetric(direct.rate, "direct-req/s")
	b.ReportMetric(proxied.rate, "proxied-req/s")
}

// compare runs blocks alternating direct and proxied rounds (so that a
// noisy period hurts both sides alike) and merges each side's results.
func (e *benchEnv) compare(blocks int, round func(base string) phaseResult) (direct, proxied phaseResult) {
	merge := func(acc *phaseResult, r phaseResult) {
		n := len(acc.lat) + acc.errors
		m := len(r.lat) + r.errors
		acc.cpu = (acc.cpu*time.Duration(n) + r.cpu*time.Duration(m)) / time.Duration(n+m)
		acc.lat = append(acc.lat, r.lat...)
		acc.errors += r.errors
		acc.elapsed += r.elapsed
		acc.rate = float64(len(acc.lat)+acc.errors) / acc.elapsed.Seconds()
	}
	for i := 0; i < blocks; i++ {
		merge(&direct, round(e.up))
		merge(&proxied, round(e.proxy))
	}
	slices.Sort(direct.lat)
	slices.Sort(proxied.lat)
	return direct, proxied
}

// BenchmarkOverhead1000rps: pass-through cost at 1000 requests/s, open
// model: 4 alternating blocks of 750 requests per side.
func BenchmarkOverhead1000rps(b *testing.B) {
	e := newBenchEnv(b, Config{Seed: 1})
	defer e.close()
	e.paced(e.proxy, 1000, 200) // warm both paths' connections
	e.paced(e.up, 1000, 200)
	for i := 0; i < b.N; i++ {
		direct, proxied := e.compare(4, func(base string) phaseResult { return e.paced(base, 1000, 750) })
		reportOverhead(b, direct, proxied)
	}
}

// BenchmarkOverheadMaxRate: pass-through cost at the maximum rate of 16
// closed-loop workers: 4 alternating blocks of 2500 requests per side.
func BenchmarkOverheadMaxRate(b *testing.B) {
	e := newBenchEnv(b, Config{Seed: 1})
	defer e.close()
	e.closed(e.proxy, 16, 500)
	e.closed(e.up, 16, 500)
	for i := 0; i < b.N; i++ {
		direct, proxied := e.compare(4, func(base string) phaseResult { return e.closed(base, 16, 2500) })
		reportOverhead(b, direct, proxied)
	}
}

// BenchmarkDelayPrecision: 225 ms delays at 200 requests/s (≈45 delayed
// calls in flight), 1000 requests. Reports the proxy's own |actual −
// requested| (from the ledger) and the client-side excess over 225 ms.
func BenchmarkDelayPrecision(b *testing.B) {
	const delay = 225 * time.Millisecond
	for i := 0; i < b.N; i++ {
		pr, pw := io.Pipe()
		ledger := NewLedger(pw, 0)
		var errsAbs []time.Duration
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				var le LedgerEntry
				if json.Unmarshal(sc.Bytes(), &le) == nil && le.RequestedDelayMS > 0 {
					errsAbs = append(errsAbs, time.Duration(math.Abs(le.DelayMS-le.RequestedDelayMS)*float64(time.Millisecond)))
				}
			}
		}()
		e := newBenchEnv(b, Config{Seed: 1, Ledger: ledger})
		e.paced(e.proxy, 200, 100) // warm up
		if err := e.p.SetFaults([]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: delay}}}); err != nil {
			b.Fatal(err)
		}
		r := e.paced(e.proxy, 200, 1000)
		e.close()
		_ = ledger.Close()
		pw.Close()
		<-readDone
		slices.Sort(errsAbs)
		excess := make([]time.Duration, len(r.lat))
		for j, l := range r.lat {
			excess[j] = max(l-delay, delay-l)
		}
		slices.Sort(excess)
		b.ReportMetric(float64(quantile(errsAbs, 0.5))/1e6, "timer-p50-abs-err-ms")
		b.ReportMetric(float64(quantile(errsAbs, 0.99))/1e6, "timer-p99-abs-err-ms")
		b.ReportMetric(float64(quantile(excess, 0.5))/1e6, "client-p50-abs-err-ms")
		b.ReportMetric(float64(quantile(excess, 0.99))/1e6, "client-p99-abs-err-ms")
		b.ReportMetric(float64(r.errors), "errors")
	}
}

// BenchmarkTimerFloor: the Go runtime's own timer precision on this machine
// for the same load shape (225 ms timers started at 200/s, 1000 of them),
// the floor under BenchmarkDelayPrecision.
func BenchmarkTimerFloor(b *testing.B) {
	const delay = 225 * time.Millisecond
	for i := 0; i < b.N; i++ {
		errs := make([]time.Duration, 1000)
		var wg sync.WaitGroup
		start := time.Now()
		for j := range errs {
			time.Sleep(time.Until(start.Add(time.Duration(j) * 5 * time.Millisecond)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := time.Now()
				t := time.NewTimer(delay)
				<-t.C
				errs[j] = time.Since(s) - delay
			}()
		}
		wg.Wait()
		slices.Sort(errs)
		b.ReportMetric(float64(quantile(errs, 0.5))/1e6, "timer-p50-abs-err-ms")
		b.ReportMetric(float64(quantile(errs, 0.99))/1e6, "timer-p99-abs-err-ms")
	}
}
