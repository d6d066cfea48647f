package main

import (
	"context"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// target is one path from the load generator to the upstream: direct, or
// through one of the proxies.
type target struct {
	name string
	url  string
	pid  int // the proxy process whose CPU time is charged to it; 0 for direct
	hc   *http.Client
}

func newTarget(name, url string, pid int, timeout time.Duration) *target {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: vegeta.DefaultConnections,
		IdleConnTimeout:     90 * time.Second,
	}
	return &target{name: name, url: url, pid: pid, hc: &http.Client{Timeout: timeout, Transport: tr}}
}

// closeIdle closes the target's idle client connections (after a
// saturation phase left many open).
func (t *target) closeIdle() { t.hc.Transport.(*http.Transport).CloseIdleConnections() }

// cell is the result of one constant-rate attack on one target.
type cell struct {
	target  string
	rate    int
	dur     time.Duration
	sent    int
	ok      int
	lat     []time.Duration // latencies of the successful requests
	errs    map[string]int  // failures by error text (status line or transport error)
	elapsed time.Duration   // first send to last answer
	cpu     time.Duration   // CPU time of the target's proxy process during the cell
	upCPU   time.Duration   // CPU time of the upstream during the cell
}

// attackOpts bound every attack.
type attackOpts struct {
	timeout    time.Duration // per request
	maxWorkers uint64        // vegeta workers (≈ connections) per attack
	upPID      int
}

// attack sends rate requests/s to t for d (open model: vegeta's constant
// pacer, more workers started when all are busy, up to maxWorkers) and
// waits for every answer (at most timeout after the last send). It is
// bounded in count (rate·d) and time (d + timeout).
func attack(ctx context.Context, t *target, rate int, d time.Duration, o attackOpts) cell {
	c := cell{target: t.name, rate: rate, dur: d, errs: map[string]int{}}
	c.lat = make([]time.Duration, 0, int(float64(rate)*d.Seconds())+16)
	atk := vegeta.NewAttacker(vegeta.Client(t.hc), vegeta.MaxBody(0),
		vegeta.Workers(min(vegeta.DefaultWorkers, o.maxWorkers)), vegeta.MaxWorkers(o.maxWorkers))
	tgt := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: t.url + "/bench"})
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	cpu0, _ := cpuOf(t.pid)
	up0, _ := cpuOf(o.upPID)
	var first, lastEnd time.Time
	for res := range atk.Attack(tgt, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, d, t.name) {
		c.sent++
		if first.IsZero() || res.Timestamp.Before(first) {
			first = res.Timestamp
		}
		if end := res.Timestamp.Add(res.Latency); end.After(lastEnd) {
			lastEnd = end
		}
		if res.Code == http.StatusOK && res.Error == "" {
			c.ok++
			c.lat = append(c.lat, res.Latency)
			continue
		}
		msg := res.Error
		if msg == "" {
			msg = http.StatusText(int(res.Code))
		}
		if len(c.errs) < 8 || c.errs[msg] > 0 {
			c.errs[msg]++
		} else {
			c.errs["(other)"]++
		}
	}
	cpu1, _ := cpuOf(t.pid)
	up1, _ := cpuOf(o.upPID)
	c.cpu, c.upCPU = cpu1-cpu0, up1-up0
	c.elapsed = lastEnd.Sub(first)
	return c
}

func cpuOf(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return cpuTime(pid)
}

// join puts b after a: the slices of one target's cell.
func join(a, b cell) cell {
	if a.target == "" {
		b.lat = slices.Clone(b.lat)
		b.errs = maps.Clone(b.errs)
		return b
	}
	a.dur += b.dur
	a.sent += b.sent
	a.ok += b.ok
	a.lat = append(a.lat, b.lat...)
	for k, v := range b.errs {
		a.errs[k] += v
	}
	a.elapsed += b.elapsed
	a.cpu += b.cpu
	a.upCPU += b.upCPU
	return a
}

// okRatio is the fraction of sent requests that succeeded.
func (c cell) okRatio() float64 {
	if c.sent == 0 {
		return 0
	}
	return float64(c.ok) / float64(c.sent)
}

// throughput is successful answers per second, from the first send to the
// last answer.
func (c cell) throughput() float64 {
	if c.elapsed <= 0 {
		return 0
	}
	return float64(c.ok) / c.elapsed.Seconds()
}

// held reports whether the cell held its rate: at least 99.9 % of the
// requests succeeded and the successful throughput was at least 97 % of
// the target rate.
func (c cell) held() bool {
	return c.okRatio() >= 0.999 && c.throughput() >= 0.97*float64(c.rate)
}

// merged is a target's cells at one rate, put together.
type merged struct {
	target  string
	sent    int
	ok      int
	lat     []time.Duration // sorted
	cpu     time.Duration
	upCPU   time.Duration
	roundQ  [][3]time.Duration // each round's p50, p90, p99 (see stats.go)
	errText map[string]int
}

func merge(cells []cell) merged {
	m := merged{errText: map[string]int{}}
	for _, c := range cells {
		m.target = c.target
		m.sent += c.sent
		m.ok += c.ok
		m.lat = append(m.lat, c.lat...)
		m.cpu += c.cpu
		m.upCPU += c.upCPU
		m.roundQ = append(m.roundQ, cellQuantiles(c.lat))
		for k, v := range c.errs {
			m.errText[k] += v
		}
	}
	slices.Sort(m.lat)
	return m
}

// cpuPerReq is the proxy's CPU time per request sent.
func (m merged) cpuPerReq() time.Duration {
	if m.sent == 0 {
		return 0
	}
	return m.cpu / time.Duration(m.sent)
}

func (m merged) upCPUPerReq() time.Duration {
	if m.sent == 0 {
		return 0
	}
	return m.upCPU / time.Duration(m.sent)
}

// quantile is the nearest-rank q-quantile of sorted (0 if empty).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
