package measure

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// LimitRule documents how a limit is held to; the report prints it.
const LimitRule = "only limits that exist are judged: a pool's declared size, a limit the service exports (a worker pool's or a connection pool's), or a ceiling inferred from the proxies in the fault phase (a flat count while the callers failed; one shared by several dependencies is one limit on their sum, never a share of it per dependency); " +
	"the most calls the proxies of a limit's dependencies had in flight at once in any sample interval (their peak gauges, else their samples, summed over the dependencies it bounds) must not exceed it, and an exported pool's own count in use must not exceed its exported limit at the same sample; " +
	"an exported limit is read at each sample (the limit in force then), a declared one holds throughout, an inferred one only in the fault phase it was seen in (within its plateau's tolerance); " +
	"judged wherever no call can outlive the service's timeout (not in the fault phase of a fault that holds calls near T or longer — a hang, a delay above 0.75 T, a heavy tail, a capacity queue — or whose clients give up, nor for T + the longest queue wait after it), because the proxy notices a call the service abandoned only a moment after the service has freed its permit; the calls the proxy counted as abandoned in the interval are allowed on top; " +
	"a declared or exported limit that does not hold is a certain violation, an inferred one only a doubt (the service's real limit may differ)"

// outliveShare is the share of T above which a fault's delay may make the
// service abandon calls that the proxy still holds.
const outliveShare = 0.75

// Limit sources.
const (
	LimitDeclared    = "declared"
	LimitExported    = "exported"
	LimitConnections = "connections"
	LimitInferred    = "inferred"
)

// LimitCheck is the peak of calls in flight under one limit: one
// dependency's, the sum over the dependencies a limit is shared by, or an
// exported pool's own count in use.
type LimitCheck struct {
	// Dependency names what is held to the limit: "A", "A+B" for a limit
	// shared by several dependencies, or "pool db" for an exported pool's
	// own count; Dependencies are the dependencies (none for a pool's own
	// count).
	Dependency   string   `json:"dependency"`
	Dependencies []string `json:"dependencies,omitempty"`
	Limit        int      `json:"limit"`
	Source       string   `json:"source"`
	// Peak is the most calls in flight at once, PeakPhase the phase it was
	// in and PeakS its time from the run's start in seconds.
	Peak      int    `json:"peak"`
	PeakPhase string `json:"peak_phase"`
	PeakS     Num    `json:"peak_s"`
	// Excess is how far the peak went over the limit, abandoned calls of its
	// interval allowed (0 when it held).
	Excess int  `json:"excess"`
	Holds  bool `json:"holds"`
	// Doubt, on a check that did not hold, says why that is not certain
	// evidence of a broken limit on its own (a limit inferred from outside
	// may not be the service's); empty when it is.
	Doubt string `json:"doubt,omitempty"`
}

// String is the check's evidence line: "14 calls to A in flight, limit 10:
// the limit does not hold".
func (c LimitCheck) String() string {
	what := "calls to " + c.Dependency + " in flight"
	if len(c.Dependencies) == 0 {
		what = "in use in " + c.Dependency
	}
	if c.Holds {
		return fmt.Sprintf("at most %d %s, limit %d (%s): holds", c.Peak, what, c.Limit, c.Source)
	}
	s := fmt.Sprintf("%d %s (%s, %s s), limit %d (%s): the limit does not hold", c.Peak, what,
		c.PeakPhase, words.FmtHuman(float64(c.PeakS)), c.Limit, c.Source)
	if c.Doubt != "" {
		s += " — " + c.Doubt
	}
	return s
}

// Certain reports whether a check that did not hold is certain evidence of a
// broken limit.
func (c LimitCheck) Certain() bool { return !c.Holds && c.Doubt == "" }

// limitSeries is a limit over time: its value at a sample's time, false
// where it is not known (or not in force).
type limitSeries func(time.Time) (float64, bool)

// constLimit is a limit in force throughout.
func constLimit(l float64) limitSeries { return func(time.Time) (float64, bool) { return l, true } }

// limitChecker checks the dependencies' peaks of calls in flight against
// their limits.
type limitChecker struct{ run *rundir.Run }

// limitChecks applies LimitRule to the run: every dependency whose callers'
// pools have known limits, every exported connection pool (its dependencies
// when its name tells them, and its own count), and every limit inferred in
// the fault phase over dependencies no known limit covers.
func (lc limitChecker) limitChecks(inferred []InferredLimit) []LimitCheck {
	var out []LimitCheck
	covered := map[string]bool{}
	add := func(c LimitCheck, ok bool) {
		if ok {
			out = append(out, c)
		}
	}
	for _, d := range (callGraph{lc.run}).dependencies() {
		limit, source := lc.declaredLimit(d)
		if limit == 0 {
			continue
		}
		covered[d] = true
		add(lc.limitCheck([]string{d}, constLimit(float64(limit)), source))
	}
	// Every pool the service exports: the proxies of the dependencies its
	// name tells, at the limit it exported then, and its own count.
	for _, x := range []struct{ limit, inUse, source string }{
		{rundata.MetricPoolLimit, rundata.MetricPoolInUse, LimitExported},
		{rundata.MetricConnPoolLimit, rundata.MetricConnPoolInUse, LimitConnections},
	} {
		for _, pool := range lc.exportedPools(x.limit) {
			limit := lc.run.Metric(rundata.ServiceComponent, rundir.PoolKey(x.limit, pool))
			at := func(t time.Time) (float64, bool) { return rundir.ValueAt(limit, t) }
			if deps := lc.namedPoolDeps(pool); len(deps) > 0 && !slices.ContainsFunc(deps, func(d string) bool { return covered[d] }) {
				add(lc.limitCheck(deps, at, x.source))
				for _, d := range deps {
					covered[d] = true
				}
			}
			add(lc.gaugeCheck(pool, rundir.PoolKey(x.inUse, pool), at, x.source))
		}
	}
	for _, l := range inferred {
		if slices.ContainsFunc(l.Dependencies, func(d string) bool { return covered[d] }) {
			continue // a known limit says more than one seen from outside
		}
		if c, ok := lc.limitCheck(l.Dependencies, lc.inferredInForce(l), LimitInferred); ok {
			if !c.Holds {
				c.Doubt = "the limit was inferred from outside, and the service's own may be higher: declare its pools or export their limits to decide"
			}
			out = append(out, c)
		}
	}
	return out
}

// exportedPools names the pools of the service's samples with a series of
// the limit metric.
func (lc limitChecker) exportedPools(limit string) []string {
	set := map[string]bool{}
	for _, s := range lc.run.Metrics {
		if s.Component == rundata.ServiceComponent {
			for _, p := range rundata.LabelValues(s.Values, limit, "pool") {
				set[p] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// inferredInForce is an inferred limit as a series: in force in the fault
// phase it was seen in, at its plateau's upper edge (a sample may sit that
// far above the median level and still count as at the cap).
func (lc limitChecker) inferredInForce(l InferredLimit) limitSeries {
	span, ok := lc.run.PhaseSpan(rundata.PhaseFault)
	edge := float64(l.Limit) + plateauTol(float64(l.Limit))
	return func(t time.Time) (float64, bool) {
		return edge, ok && t.After(span.Start) && !t.After(span.End)
	}
}

// namedPoolDeps are the dependencies an exported pool serves as its name
// tells them: an endpoint's name (its dependency), a dependency's name, or
// the built-in service's shared pool (every dependency); nil for a name
// that tells nothing (the pool's own count is still judged).
func (lc limitChecker) namedPoolDeps(pool string) []string {
	for _, e := range lc.run.Meta.Endpoints {
		if e.Dependency != "" && (e.Name == pool || e.Dependency == pool) {
			return []string{e.Dependency}
		}
	}
	if pool == rundata.SharedConnPool {
		return callGraph{lc.run}.dependencies()
	}
	return nil
}

// declaredLimit is the sum of the limits of the pools dependency d's
// callers draw from, and whether they were declared or exported; 0 when
// one of them is unknown.
func (lc limitChecker) declaredLimit(d string) (int, string) {
	pools := map[string]bool{}
	for _, e := range lc.run.Meta.Endpoints {
		if e.Dependency == d {
			if e.Pool == "" {
				return 0, ""
			}
			pools[e.Pool] = true
		}
	}
	sum, source := 0, LimitDeclared
	for p := range pools {
		l := lc.run.PoolInfo(p).Limit
		if l == 0 {
			l, source = int(metricMax(lc.run, rundir.PoolKey(rundata.MetricPoolLimit, p))), LimitExported
		}
		if l == 0 {
			return 0, ""
		}
		sum += l
	}
	// Jobs on workers of their own call d beside the pools: their workers
	// bound those calls (jobs.go).
	if j := lc.run.Meta.Jobs; j != nil && j.Mode == rundata.JobsOwn && j.Dependency == d && j.Count > 0 && sum > 0 {
		sum += j.Workers
	}
	return sum, source
}

// metricMax is the largest value of the service's series key, 0 without.
func metricMax(run *rundir.Run, key string) float64 {
	m := 0.0
	for _, p := range run.Metric(rundata.ServiceComponent, key) {
		m = math.Max(m, p.Value)
	}
	return m
}

// inflightSum is, at each sample of the first dependency's proxy, the calls
// in flight to deps — one dependency's peak gauge (else its samples), the
// sum of several's samples — and the calls they counted abandoned so far;
// false when a proxy has neither.
func (lc limitChecker) inflightSum(deps []string) (peaks, cancelled []rundir.Point, ok bool) {
	half := sampleInterval(lc.run) / 2
	series := make([][]rundir.Point, len(deps))
	for i, d := range deps {
		comp := rundata.ProxyComponent(d)
		// One proxy's peak is of its own calls at one moment; peaks of
		// several proxies come from different moments of the interval and
		// do not add up: a sum is of their samples.
		if len(deps) == 1 {
			series[i] = lc.run.Metric(comp, rundata.MetricProxyInflightPeak)
		}
		if len(series[i]) == 0 {
			series[i] = lc.run.Metric(comp, rundata.MetricProxyInflight)
		}
		if len(series[i]) == 0 {
			return nil, nil, false
		}
	}
	for _, p := range series[0] {
		v, c, complete := p.Value, 0.0, true
		for i, d := range deps {
			if i > 0 {
				x, found := nearest(series[i], p.Time, half)
				complete = complete && found
				v += x
			}
			if n, found := rundir.ValueAt(lc.run.Metric(rundata.ProxyComponent(d), rundata.MetricProxyCancelled), p.Time); found {
				c += n
			}
		}
		if complete {
			peaks = append(peaks, rundir.Point{Time: p.Time, Value: v})
			cancelled = append(cancelled, rundir.Point{Time: p.Time, Value: c})
		}
	}
	return peaks, cancelled, len(peaks) > 0
}

// limitCheck finds the peak of deps' calls in flight (summed) over the run
// against limit: the interval with the largest excess when one went over,
// else the highest peak.
func (lc limitChecker) limitCheck(deps []string, limit limitSeries, source string) (LimitCheck, bool) {
	peaks, cancelled, ok := lc.inflightSum(deps)
	if !ok {
		return LimitCheck{}, false
	}
	judged := lc.limitJudged()
	prev, half := lc.run.Origin(), sampleInterval(lc.run)/2
	c, ok := lc.peakOver(peaks, func(p rundir.Point) (float64, float64, bool) {
		l, ok := limit(p.Time)
		if !judged(p.Time) || !ok {
			prev = p.Time
			return 0, 0, false
		}
		allowed := 0.0
		// Both series are sampled at the same ticks, each a moment apart:
		// the interval is widened by half a tick at each end.
		if n, ok := rundir.DeltaOver(cancelled, prev.Add(-half), p.Time.Add(half)); ok {
			allowed = n
		}
		prev = p.Time
		// Proxies are sampled a moment apart: a call that left one and a
		// call that entered another in between are both counted.
		return l, allowed + float64(len(deps)-1), true
	}, LimitCheck{Dependency: strings.Join(deps, "+"), Dependencies: slices.Clone(deps), Source: source})
	if ok && !c.Holds && len(deps) > 1 && c.Doubt == "" {
		c.Doubt = "a sum over several proxies, each sampled at its own moment, can count a call that moved between them: the pool's own count decides"
	}
	return c, ok
}

// gaugeCheck holds an exported pool's own count in use (series key) to its
// exported limit at every sample.
func (lc limitChecker) gaugeCheck(pool, key string, limit limitSeries, source string) (LimitCheck, bool) {
	return lc.peakOver(lc.run.Metric(rundata.ServiceComponent, key), func(p rundir.Point) (float64, float64, bool) {
		l, ok := limit(p.Time)
		return l, 0, ok && l > 0
	}, LimitCheck{Dependency: "pool " + pool, Source: source})
}

// peakOver fills c from the samples that judge says are judged (with the
// limit in force and the calls allowed above it at each).
func (lc limitChecker) peakOver(samples []rundir.Point, judge func(rundir.Point) (limit, allowed float64, ok bool), c LimitCheck) (LimitCheck, bool) {
	origin := lc.run.Origin()
	top, worst, worstExcess := rundir.Point{Time: origin, Value: -1}, rundir.Point{}, 0.0
	topLimit, worstLimit, n := 0.0, 0.0, 0
	for _, p := range samples {
		limit, allowed, ok := judge(p)
		if !ok {
			continue
		}
		n++
		if p.Value > top.Value {
			top, topLimit = p, limit
		}
		if e := p.Value - limit - allowed; e > worstExcess {
			worst, worstExcess, worstLimit = p, e, limit
		}
	}
	if n == 0 {
		return LimitCheck{}, false
	}
	c.Holds = worstExcess < 0.5
	at, lim := top, topLimit
	if !c.Holds {
		at, lim, c.Excess = worst, worstLimit, int(math.Round(worstExcess))
	}
	c.Limit = int(math.Round(lim))
	c.Peak, c.PeakS, c.PeakPhase = int(math.Round(at.Value)), Num(at.Time.Sub(origin).Seconds()), phaseAt(lc.run, at.Time)
	return c, true
}

// limitJudged says which sample times LimitRule judges: every one, but
// in the fault phase of a fault that can hold calls up to the service's
// timeout, and for T + the longest queue wait after it (a sample reports
// the interval before it: one more interval is left out).
func (lc limitChecker) limitJudged() func(time.Time) bool {
	fs, ok := lc.run.FaultStart()
	if !ok || !lc.callsMayOutliveT() {
		return func(time.Time) bool { return true }
	}
	until := lc.run.FaultEnd().Add(lc.run.Meta.Timeout + lc.run.Meta.LongestWait() + sampleInterval(lc.run))
	return func(t time.Time) bool { return t.Before(fs) || !t.Before(until) }
}

// callsMayOutliveT reports whether the run's fault can hold calls until the
// service gives up on them, as its fault type says (faultproxy.Hold): a
// hang, a capacity queue, a heavy-tailed delay or one above outliveShare of
// T, an answer throttled for a time not known; or clients that give up
// mid-call.
func (lc limitChecker) callsMayOutliveT() bool {
	for _, w := range lc.run.Windows {
		if w.Phase == rundata.PhaseFault && w.Cancelled > 0 {
			return true
		}
	}
	for _, f := range lc.run.Meta.Faults {
		if f.Action != rundata.FaultSet || len(f.Faults) == 0 {
			continue
		}
		hs, err := faultproxy.RecordedHolds(f.Faults, 0)
		if err != nil {
			return true
		}
		for _, h := range hs {
			if h.Kind == faultproxy.HoldNever || h.Most == faultproxy.Unbounded || float64(h.Most) > outliveShare*float64(lc.run.Meta.Timeout) {
				return true
			}
		}
	}
	return false
}

// phaseAt names the phase that holds t, "" outside every phase.
func phaseAt(run *rundir.Run, t time.Time) string {
	for _, p := range run.Meta.Phases {
		if !t.Before(p.Start) && t.Before(p.End) {
			return p.Name
		}
	}
	return ""
}

// DescribeLimits joins the checks that failed, "" when all held.
func DescribeLimits(cs []LimitCheck) string {
	var parts []string
	for _, c := range cs {
		if !c.Holds {
			parts = append(parts, c.String())
		}
	}
	return strings.Join(parts, "; ")
}
