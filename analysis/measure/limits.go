package measure

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// LimitRule documents how a limit is held to; the report prints it.
const LimitRule = "the most calls a dependency's proxy had in flight at once in any sample interval (its peak gauge, else its samples) must not exceed the limit on them: the sum of the limits of the pools its callers draw from (declared, else the service's pool metrics), else the limit inferred from the proxies in the fault phase; judged wherever no call can outlive the service's timeout (not in the fault phase of a fault that holds calls near T or longer — a hang, a delay above 0.75 T, a heavy tail, a capacity queue — or whose clients give up, nor for T + the longest queue wait after it), because the proxy notices a call the service abandoned only a moment after the service has freed its permit; the calls the proxy counted as abandoned in the interval are allowed on top"

// outliveShare is the share of T above which a fault's delay may make the
// service abandon calls that the proxy still holds.
const outliveShare = 0.75

// Limit sources.
const (
	LimitDeclared = "declared"
	LimitInferred = "inferred"
)

// LimitCheck is one dependency's peak of calls in flight against its limit.
type LimitCheck struct {
	Dependency string `json:"dependency"`
	Limit      int    `json:"limit"`
	Source     string `json:"source"`
	// Peak is the most calls in flight at once, PeakPhase the phase it was
	// in and PeakS its time from the run's start in seconds.
	Peak      int    `json:"peak"`
	PeakPhase string `json:"peak_phase"`
	PeakS     Num    `json:"peak_s"`
	// Excess is how far the peak went over the limit, abandoned calls of its
	// interval allowed (0 when it held).
	Excess int  `json:"excess"`
	Holds  bool `json:"holds"`
}

// String is the check's evidence line: "14 calls to A in flight, limit 10:
// the limit does not hold under a burst".
func (c LimitCheck) String() string {
	if c.Holds {
		return fmt.Sprintf("at most %d calls to %s in flight, limit %d (%s): holds", c.Peak, c.Dependency, c.Limit, c.Source)
	}
	return fmt.Sprintf("%d calls to %s in flight (%s, %s s), limit %d (%s): the limit does not hold", c.Peak, c.Dependency,
		c.PeakPhase, FmtHuman(float64(c.PeakS)), c.Limit, c.Source)
}

// limitChecks applies LimitRule to every dependency of the run with a
// known limit.
func (r *Run) limitChecks(inferred []InferredLimit) []LimitCheck {
	var out []LimitCheck
	for _, d := range r.dependencies() {
		limit, source := r.declaredLimit(d), LimitDeclared
		if limit == 0 {
			for _, l := range inferred {
				if len(l.Dependencies) == 1 && l.Dependencies[0] == d {
					limit, source = l.Limit, LimitInferred
				}
			}
		}
		if limit == 0 {
			continue
		}
		if c, ok := r.limitCheck(d, limit, source); ok {
			out = append(out, c)
		}
	}
	return out
}

// declaredLimit is the sum of the limits of the pools dependency d's
// callers draw from; 0 when one of them is unknown.
func (r *Run) declaredLimit(d string) int {
	pools := map[string]bool{}
	for _, e := range r.Meta.Endpoints {
		if e.Dependency == d {
			if e.Pool == "" {
				return 0
			}
			pools[e.Pool] = true
		}
	}
	sum := 0
	for p := range pools {
		l := r.PoolInfo(p).Limit
		if l == 0 {
			l = int(r.metricMax(rundir.PoolKey(rundata.MetricPoolLimit, p)))
		}
		if l == 0 {
			return 0
		}
		sum += l
	}
	return sum
}

// metricMax is the largest value of the service's series key, 0 without.
func (r *Run) metricMax(key string) float64 {
	m := 0.0
	for _, p := range r.Metric(rundata.ServiceComponent, key) {
		m = math.Max(m, p.Value)
	}
	return m
}

// limitCheck finds d's peak over the run against limit: the interval with
// the largest excess when one went over, else the highest peak.
func (r *Run) limitCheck(d string, limit int, source string) (LimitCheck, bool) {
	comp := rundata.ProxyComponent(d)
	peaks := r.Metric(comp, rundata.MetricProxyInflightPeak)
	if len(peaks) == 0 {
		peaks = r.Metric(comp, rundata.MetricProxyInflight)
	}
	if len(peaks) == 0 {
		return LimitCheck{}, false
	}
	cancelled := r.Metric(comp, rundata.MetricProxyCancelled)
	origin := r.Origin()
	judged := r.limitJudged()
	top, worst, worstExcess := rundir.Point{Time: origin, Value: -1}, rundir.Point{}, 0.0
	prev, half := origin, r.sampleInterval()/2
	n := 0
	for _, p := range peaks {
		if !judged(p.Time) {
			prev = p.Time
			continue
		}
		n++
		allowed := 0.0
		// Both series are sampled at the same ticks, each a moment apart:
		// the interval is widened by half a tick at each end.
		if n, ok := rundir.DeltaOver(cancelled, prev.Add(-half), p.Time.Add(half)); ok {
			allowed = n
		}
		prev = p.Time
		if p.Value > top.Value {
			top = p
		}
		if e := p.Value - float64(limit) - allowed; e > worstExcess {
			worst, worstExcess = p, e
		}
	}
	if n == 0 {
		return LimitCheck{}, false
	}
	c := LimitCheck{Dependency: d, Limit: limit, Source: source, Holds: worstExcess < 0.5}
	at := top
	if !c.Holds {
		at, c.Excess = worst, int(math.Round(worstExcess))
	}
	c.Peak, c.PeakS, c.PeakPhase = int(math.Round(at.Value)), Num(at.Time.Sub(origin).Seconds()), r.phaseAt(at.Time)
	return c, true
}

// limitJudged says which sample times LimitRule judges: every one, but
// in the fault phase of a fault that can hold calls up to the service's
// timeout, and for T + the longest queue wait after it (a sample reports
// the interval before it: one more interval is left out).
func (r *Run) limitJudged() func(time.Time) bool {
	fs, ok := r.FaultStart()
	if !ok || !r.callsMayOutliveT() {
		return func(time.Time) bool { return true }
	}
	until := r.FaultEnd().Add(r.Meta.Timeout + r.longestWait() + r.sampleInterval())
	return func(t time.Time) bool { return t.Before(fs) || !t.Before(until) }
}

// callsMayOutliveT reports whether the run's fault can hold calls until the
// service gives up on them: a hang, a capacity queue, a heavy-tailed delay
// or one above outliveShare of T, or clients that give up mid-call.
func (r *Run) callsMayOutliveT() bool {
	for _, w := range r.Windows {
		if w.Phase == rundata.PhaseFault && w.Cancelled > 0 {
			return true
		}
	}
	for _, f := range r.Meta.Faults {
		if f.Action != rundata.FaultSet || len(f.Faults) == 0 {
			continue
		}
		var fs []struct {
			Type, Latency, Jitter, Distribution string
		}
		if json.Unmarshal(f.Faults, &fs) != nil {
			return true
		}
		for _, x := range fs {
			switch x.Type {
			case "hang", "capacity":
				return true
			case "latency":
				d, _ := time.ParseDuration(x.Latency)
				j, _ := time.ParseDuration(x.Jitter)
				if (x.Distribution != "" && x.Distribution != "uniform") || float64(d+j) > outliveShare*float64(r.Meta.Timeout) {
					return true
				}
			}
		}
	}
	return false
}

// phaseAt names the phase that holds t, "" outside every phase.
func (r *Run) phaseAt(t time.Time) string {
	for _, p := range r.Meta.Phases {
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
