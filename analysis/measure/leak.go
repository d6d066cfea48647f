package measure

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// LeakRule documents how leaked permits are found; the report prints it.
const LeakRule = "after the fault, once its calls could have drained (T + the longest queue wait + a sample), a pool that at every sample to the run's end had at least L more permits in use than its dependencies' proxies had calls in flight has leaked L permits — when so long a stretch at L or more is improbable by the baseline's own samples of the same difference (below 1 in 10 000), and, where the run sampled its service after the load, still so once every call could have ended; without pool metrics, a probe burst's peak at a proxy after the fault below its peak before, or fast rejections, to the run's end, while the proxies see fewer calls in flight than the limit inferred in the fault phase (rejections that stop before the end are a slow recovery, not a leak)"

// maxLeakChance is how probable, by the baseline's samples, a stretch of
// samples that all show a leak must be for the leak to count: below it,
// the difference is not the sampling's noise.
const maxLeakChance = 1e-4

// Sources of a leak finding.
const (
	LeakFromMetrics    = "metrics"
	LeakFromProbe      = "probe"
	LeakFromRejections = "rejections"
)

// minLeakSamples is the fewest samples a leak is judged from.
const minLeakSamples = 4

// RunLeaks is what a run's pools lost after the fault.
type RunLeaks struct {
	// Judged is true when some source could see a partial leak (pool
	// metrics or probe bursts); without one only a leak that makes the
	// service reject can be found.
	Judged bool `json:"judged"`
	// Leaked is the permits lost over every pool (0: none found).
	Leaked int `json:"leaked"`
	// Pools are the pools (or dependencies, seen from the proxies) judged,
	// leaks or not.
	Pools []PoolLeak `json:"pools"`
}

// PoolLeak is one pool's (or, seen from the proxies alone, one
// dependency's) permits lost after the fault.
type PoolLeak struct {
	Pool         string   `json:"pool"`
	Dependencies []string `json:"dependencies"`
	Source       string   `json:"source"`
	Leaked       int      `json:"leaked"`
	// InUse and InFlight are the pool's permits in use and the calls its
	// dependencies' proxies had in flight over the judged span (medians);
	// SpanS is the span's length.
	InUse    Num `json:"in_use"`
	InFlight Num `json:"in_flight"`
	SpanS    Num `json:"span_s"`
	// Limit, Before and After are the limit and, for a probe, its peaks at
	// the proxy before and after the fault.
	Limit  int `json:"limit,omitempty"`
	Before Num `json:"before"`
	After  Num `json:"after"`
	// Quiet is, where the run recorded its service after the load, the
	// fewest permits in use beyond the calls in flight once every call
	// could have ended; 0 when not recorded or when nothing seemed leaked
	// under load.
	Quiet Num `json:"quiet,omitempty"`
}

// maxQuietLag bounds how long after the load's end a sample counts as the
// quiet service's (the runner samples at most 5 s more).
const maxQuietLag = 10 * time.Second

// String is the finding's evidence line: "pool a: 10 in use, 0 calls to A
// in flight for 3.0 s after the fault → 10 permits leaked".
func (l PoolLeak) String() string {
	deps := strings.Join(l.Dependencies, "+")
	switch l.Source {
	case LeakFromProbe:
		return fmt.Sprintf("calls to %s capped at %s before the fault, %s after → %s lost", deps,
			words.FmtHuman(float64(l.Before)), words.FmtHuman(float64(l.After)), permits(l.Leaked))
	case LeakFromRejections:
		return fmt.Sprintf("calls to %s: %s in flight while their callers were rejected, limit %d (inferred in the fault phase) → %s lost",
			deps, words.FmtHuman(float64(l.InFlight)), l.Limit, permits(l.Leaked))
	}
	verdict := "none leaked"
	if l.Leaked > 0 {
		verdict = permits(l.Leaked) + " leaked"
	}
	return fmt.Sprintf("pool %s: %s in use, %s calls to %s in flight for %s s after the fault → %s", l.Pool,
		words.FmtHuman(float64(l.InUse)), words.FmtHuman(float64(l.InFlight)), deps, words.FmtHuman(float64(l.SpanS)), verdict)
}

// permits is "1 permit", "10 permits".
func permits(n int) string {
	if n == 1 {
		return "1 permit"
	}
	return fmt.Sprintf("%d permits", n)
}

// leakScan finds the permits the fault left taken.
type leakScan struct{ run *rundir.Run }

// leaks applies LeakRule to the run; nil when it had no fault.
func (ls leakScan) leaks(inferred []InferredLimit) *RunLeaks {
	fe := ls.run.FaultEnd()
	if _, ok := ls.run.FaultStart(); !ok || ls.run.Meta.Timeout <= 0 {
		return nil
	}
	from := fe.Add(ls.run.Meta.Timeout + ls.run.Meta.LongestWait() + sampleInterval(ls.run))
	to := ls.run.End()
	out := &RunLeaks{}
	if observesPools(ls.run) {
		out.Judged = true
		for _, p := range ls.run.PoolNames() {
			if l, ok := ls.poolLeak(p, from, to); ok {
				out.Pools = append(out.Pools, l)
			}
		}
	}
	if probes := ls.probeLeaks(); len(probes) > 0 {
		out.Judged = true
		if len(out.Pools) == 0 {
			out.Pools = probes
		}
	}
	if len(out.Pools) == 0 {
		out.Pools = ls.rejectionLeaks(inferred, from, to)
	}
	for _, l := range out.Pools {
		out.Leaked += l.Leaked
	}
	return out
}

// sampleInterval is the median gap between the service's (else any
// component's) metric samples, DefaultSample when unknown.
func sampleInterval(run *rundir.Run) time.Duration {
	var ts []time.Time
	for _, s := range run.Metrics {
		if s.Component == rundata.ServiceComponent {
			ts = append(ts, s.Time)
		}
	}
	if len(ts) < 2 {
		return 250 * time.Millisecond
	}
	gaps := make([]float64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, float64(ts[i].Sub(ts[i-1])))
	}
	sort.Float64s(gaps)
	return time.Duration(gaps[len(gaps)/2])
}

// poolDeps are the dependencies the endpoints of pool call, in meta order;
// for a pool no endpoint declares (a user's service that exports its pools
// without declaring them), those its name tells (namedPoolDeps).
func (ls leakScan) poolDeps(pool string) []string {
	var deps []string
	for _, e := range ls.run.Meta.Endpoints {
		if e.Pool == pool && e.Dependency != "" && !slices.Contains(deps, e.Dependency) {
			deps = append(deps, e.Dependency)
		}
	}
	if len(deps) == 0 {
		return limitChecker{ls.run}.namedPoolDeps(pool)
	}
	return deps
}

// poolLeak compares pool's permits in use with the calls its dependencies'
// proxies had in flight, in [from, to] against the baseline.
func (ls leakScan) poolLeak(pool string, from, to time.Time) (PoolLeak, bool) {
	deps := ls.poolDeps(pool)
	if len(deps) == 0 {
		return PoolLeak{}, false
	}
	inUse := ls.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolInUse, pool))
	flight := make([][]rundir.Point, len(deps))
	for i, d := range deps {
		flight[i] = ls.run.Metric(rundata.ProxyComponent(d), rundata.MetricProxyInflight)
	}
	diffs := func(a, b time.Time) (d, use, fl []float64) {
		for _, p := range inUse {
			if !inRange(p.Time, a, b) {
				continue
			}
			sum, ok := 0.0, true
			for _, s := range flight {
				v, found := nearest(s, p.Time, sampleInterval(ls.run)/2)
				ok = ok && found
				sum += v
			}
			if ok {
				d, use, fl = append(d, p.Value-sum), append(use, p.Value), append(fl, sum)
			}
		}
		return d, use, fl
	}
	after, use, fl := diffs(from, to)
	if len(after) < minLeakSamples {
		return PoolLeak{}, false
	}
	// The quiet service: samples after the load's end, once its calls
	// could have drained (the runner records them; older runs have none).
	quiet, _, _ := diffs(to.Add(from.Sub(ls.run.FaultEnd())), to.Add(maxQuietLag))
	var base []float64
	if bs, ok := ls.run.PhaseSpan(rundata.PhaseBaseline); ok {
		base, _, _ = diffs(bs.Start, bs.End)
	}
	l := PoolLeak{Pool: pool, Dependencies: deps, Source: LeakFromMetrics, InUse: Num(quantileOf(use, 0.5)),
		InFlight: Num(quantileOf(fl, 0.5)), SpanS: Num(to.Sub(from).Seconds()), Limit: ls.run.PoolInfo(pool).Limit, Before: Undefined, After: Undefined}
	if least := slices.Min(after); least >= 1 && leakChance(base, least, len(after)) < maxLeakChance {
		l.Leaked = int(least)
		if len(quiet) > 0 {
			// Permits a loaded machine's late calls only seemed to hold
			// came back once the load stopped: a leak keeps them.
			l.Leaked = min(l.Leaked, max(0, int(slices.Min(quiet))))
			l.Quiet = Num(slices.Min(quiet))
		}
	}
	return l, true
}

// leakChance is how probable n samples in a row at least level are by the
// baseline's samples of the same difference: p^n, p the baseline's share
// at or above level (add-one smoothed, so an empty baseline gives ½).
func leakChance(base []float64, level float64, n int) float64 {
	k := 0
	for _, d := range base {
		if d >= level {
			k++
		}
	}
	p := float64(k+1) / float64(len(base)+2)
	return math.Pow(p, float64(n))
}

// rejectionLeaks finds, without pool metrics, the permits a leak took from
// a limit inferred in the fault phase: after the fault its callers were
// rejected while its proxies saw fewer calls in flight than the limit.
func (ls leakScan) rejectionLeaks(inferred []InferredLimit, from, to time.Time) []PoolLeak {
	var out []PoolLeak
	rejecting := func(deps []string, from, to time.Time) bool {
		var rejected, total int64
		for _, ep := range (callGraph{ls.run}).callersOf(deps) {
			for _, w := range ls.run.EndpointWindows(ep) {
				if inRange(w.Start, from, to) {
					rejected += w.Counts[rundata.ClassRejected]
					total += w.Counts.Total()
				}
			}
		}
		return total > 0 && float64(rejected)/float64(total) >= MinCappedErrorRate
	}
	for _, lim := range inferred {
		// Rejections that stopped before the run's end are a slow recovery:
		// the permits came back. A leak rejects to the end.
		if !rejecting(lim.Dependencies, from, to) || !rejecting(lim.Dependencies, from.Add(to.Sub(from)/2), to) {
			continue
		}
		peak, n := 0.0, 0
		for _, d := range lim.Dependencies {
			m := 0.0
			for _, p := range ls.run.Metric(rundata.ProxyComponent(d), rundata.MetricProxyInflight) {
				if inRange(p.Time, from, to) {
					m, n = math.Max(m, p.Value), n+1
				}
			}
			peak += m
		}
		if n < minLeakSamples {
			continue
		}
		if lost := lim.Limit - int(math.Round(peak)); float64(lost) > plateauTol(float64(lim.Limit)) {
			out = append(out, PoolLeak{Pool: strings.Join(lim.Dependencies, "+") + " (inferred)", Dependencies: lim.Dependencies,
				Source: LeakFromRejections, Leaked: lost, InUse: Undefined, InFlight: Num(peak), SpanS: Num(to.Sub(from).Seconds()),
				Limit: lim.Limit, Before: Undefined, After: Undefined})
		}
	}
	return out
}

// probeLeaks compares each dependency's probe peaks before and after the
// fault (nil without both probes).
func (ls leakScan) probeLeaks() []PoolLeak {
	before, after := ls.probePeaks(rundata.PhaseProbeBefore), ls.probePeaks(rundata.PhaseProbeAfter)
	if len(before) == 0 || len(after) == 0 {
		return nil
	}
	var out []PoolLeak
	for _, d := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[d]
		if !ok {
			continue
		}
		b := before[d]
		l := PoolLeak{Pool: d + " (probe)", Dependencies: []string{d}, Source: LeakFromProbe, InUse: Undefined, InFlight: Undefined,
			SpanS: Undefined, Before: Num(b), After: Num(a)}
		if b-a > plateauTol(b) {
			l.Leaked = int(math.Round(b - a))
		}
		out = append(out, l)
	}
	return out
}

// probePeaks is, per dependency, the most calls its proxy had in flight at
// once during phase (a probe), from the peak gauge, else the samples.
func (ls leakScan) probePeaks(phase string) map[string]float64 {
	span, ok := ls.run.PhaseSpan(phase)
	if !ok {
		return nil
	}
	out := map[string]float64{}
	for _, d := range (callGraph{ls.run}).dependencies() {
		// A peak is reported by the first scrape after it: up to one
		// interval after the phase.
		until := span.End.Add(sampleInterval(ls.run))
		for _, key := range []string{rundata.MetricProxyInflightPeak, rundata.MetricProxyInflight} {
			found := false
			for _, p := range ls.run.Metric(rundata.ProxyComponent(d), key) {
				if p.Time.After(span.Start) && !p.Time.After(until) {
					out[d], found = math.Max(out[d], p.Value), true
				}
			}
			if found {
				break
			}
		}
	}
	return out
}

// nearest is the value of the sample of s closest to t, if one lies within
// tol of it.
func nearest(s []rundir.Point, t time.Time, tol time.Duration) (float64, bool) {
	i := sort.Search(len(s), func(i int) bool { return !s[i].Time.Before(t) })
	best, found := 0.0, false
	bestD := tol + 1
	for _, j := range []int{i - 1, i} {
		if j < 0 || j >= len(s) {
			continue
		}
		if d := s[j].Time.Sub(t).Abs(); d <= tol && d < bestD {
			best, bestD, found = s[j].Value, d, true
		}
	}
	return best, found
}

// quantileOf is the q-quantile (0–1) of unsorted v; NaN when v is empty.
// v is not modified.
func quantileOf(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	return quantile(s, q)
}
