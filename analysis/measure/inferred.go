package measure

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// InferredLimit is a cap on the service's concurrent calls to one or more
// dependencies, seen from outside it: the fault proxies' in-flight counts
// stayed at the same ceiling while the endpoints calling those
// dependencies failed. It is how the limits of a service that exports no
// pool metrics are found.
type InferredLimit struct {
	// Dependencies are the dependencies whose calls share the cap, e.g.
	// ["A"] or ["A", "B"] (one shared limit).
	Dependencies []string `json:"dependencies"`
	Limit        int      `json:"limit"`
	// AtCapShare is the share of the fault phase's samples at the cap.
	AtCapShare Num `json:"at_cap_share"`
	// AfterFaultS is when the calls first reached the cap, in seconds from
	// fault start.
	AfterFaultS Num `json:"after_fault_s"`
	// MeanInFlight is the mean count over the fault phase.
	MeanInFlight Num `json:"mean_in_flight"`

	variance float64 // of the count over the fault phase
}

// Thresholds of the plateau rule (InferenceRule).
const (
	// MinAtCapShare is the share of fault-phase samples that must sit at
	// the ceiling (within PlateauTolerance of the maximum).
	MinAtCapShare = 0.6
	// MinPlateauSamples is the fewest fault-phase samples to judge from.
	MinPlateauSamples = 8
	// MaxAboveCapShare is the largest share of samples above the cap.
	MaxAboveCapShare = 0.1
	// MaxCapOfDemand: a level counts as a cap only below this share of
	// the demand the proxies predict.
	MaxCapOfDemand = 0.9
	// MinCappedErrorRate is the error rate the endpoints calling a capped
	// dependency must show: demand went beyond the cap.
	MinCappedErrorRate = 0.01
)

// InferenceRule documents how limits are inferred; the report prints it.
const InferenceRule = "a limit is inferred when, in the fault phase, the proxies' in-flight count (one dependency, or the sum over all) sat within max(1, 5 %) of its median (at it, below 5) in ≥ 60 % of at least 8 samples and above it in ≤ 10 %, while the endpoints calling those dependencies failed ≥ 1 % of requests, and below 90 % of the demand the proxies predict (baseline holding time × rate, faults added, capped at T); the sum capped is one shared limit when some caller failed, every dependency's callers were held back (failing, or their p99 up beyond P2's bound) and the sum varies less than the most varying dependency's count (their counts move against each other), or when every dependency's callers failed and no dependency capped on its own varies less than the sum; under a shared limit no dependency is said to be capped on its own (its ceiling is its share)"

// plateauTol is how far below the maximum a sample still counts as at the
// cap: a permit is free for an instant between two calls. Below 5 the
// count must sit at the maximum itself, or any small busy count would
// pass for a cap.
func plateauTol(max float64) float64 {
	if max < 5 {
		return 0
	}
	return math.Max(1, math.Floor(0.05*max))
}

// inferLimits applies InferenceRule to the run. errRate is each endpoint's
// fault-phase error rate; slowed names the endpoints whose fault-phase p99
// rose beyond P2's bound (held back without failing).
func (r *Run) inferLimits(errRate map[string]float64, slowed map[string]bool) []InferredLimit {
	fs, ok := r.FaultStart()
	if !ok {
		return nil
	}
	fe := r.FaultEnd()
	callers := map[string][]string{} // dependency → endpoints
	var deps []string
	for _, e := range r.Meta.Endpoints {
		if e.Dependency == "" {
			continue
		}
		if _, seen := callers[e.Dependency]; !seen {
			deps = append(deps, e.Dependency)
		}
		callers[e.Dependency] = append(callers[e.Dependency], e.Name)
	}
	series := map[string][]rundir.Point{}
	for _, d := range deps {
		for _, p := range r.Metric(rundata.ProxyComponent(d), rundata.MetricProxyInflight) {
			if inRange(p.Time, fs, fe) {
				series[d] = append(series[d], p)
			}
		}
	}
	failing := func(group []string) bool {
		for _, d := range group {
			for _, ep := range callers[d] {
				if errRate[ep] >= MinCappedErrorRate {
					return true
				}
			}
		}
		return false
	}
	// A cap is a level below what the callers demanded. When the proxies
	// predict the demand (their baseline holding time × rate, the faults
	// added, capped at T), a level near it is the demand itself: an
	// unlimited service whose every call takes T sits flat too.
	belowDemand := func(l InferredLimit, group []string) bool {
		pred, ok := r.proxyPrediction(r.callersOf(group))
		if !ok {
			return true // cannot tell
		}
		return float64(l.Limit) < MaxCapOfDemand*pred[rundata.PhaseFault]
	}
	var out []InferredLimit
	single := map[string]InferredLimit{}
	for _, d := range deps {
		if l, ok := plateau(series[d], fs); ok && failing([]string{d}) && belowDemand(l, []string{d}) {
			l.Dependencies = []string{d}
			out = append(out, l)
			single[d] = l
		}
	}
	if len(deps) < 2 {
		return out
	}
	// The sum over all dependencies, sampled at the first one's ticks.
	var sum []rundir.Point
	for _, p := range series[deps[0]] {
		v := p.Value
		complete := true
		for _, d := range deps[1:] {
			x, ok := rundir.ValueAt(series[d], p.Time)
			complete = complete && ok
			v += x
		}
		if complete {
			sum = append(sum, rundir.Point{Time: p.Time, Value: v})
		}
	}
	l, ok := plateau(sum, fs)
	if !ok || !belowDemand(l, deps) {
		return out
	}
	// One limit shared by the dependencies holds back the calls to every
	// one of them, and the sum is then flatter than the parts (one
	// dependency takes what the others free): the parts move against each
	// other, so the sum varies less than the most varying part, where
	// counts of their own add their variances. Without that sign every
	// dependency's callers must have failed, and no dependency capped on
	// its own may vary less than the sum.
	// (Each variance is from the first sample at the cap: the ramp-up
	// before says nothing about how flat the cap is.)
	// Parts that move against each other are enough once some caller ran
	// into the cap and every dependency's callers were held back by it —
	// failing, or only waiting for a permit (their p99 up beyond P2's
	// bound): a bulkhead's neighbour is neither, and its count's noise can
	// make the sum look flat.
	var most float64
	capped := fs.Add(time.Duration(float64(l.AfterFaultS) * float64(time.Second)))
	allFailing, allHeld := true, true
	for _, d := range deps {
		allFailing = allFailing && failing([]string{d})
		held := failing([]string{d})
		for _, ep := range callers[d] {
			held = held || slowed[ep]
		}
		allHeld = allHeld && held
		most = math.Max(most, variance(series[d], capped))
	}
	switch {
	case !failing(deps):
		return out
	case allHeld && l.variance < most:
	case !allFailing:
		return out
	default:
		for _, d := range deps {
			if s, capped := single[d]; capped && s.variance < l.variance {
				return out
			}
		}
	}
	l.Dependencies = slices.Clone(deps)
	// A dependency's own ceiling under the shared one is its share of it
	// (what the others left it), not a limit of its own.
	out = slices.DeleteFunc(out, func(x InferredLimit) bool { return len(x.Dependencies) == 1 })
	return append([]InferredLimit{l}, out...)
}

// variance is the variance of s's values from its first sample on or after
// from (NaN without samples).
func variance(s []rundir.Point, from time.Time) float64 {
	var m, sq float64
	n := 0
	for _, p := range s {
		if p.Time.Before(from) {
			continue
		}
		n++
		d := p.Value - m
		m += d / float64(n)
		sq += d * (p.Value - m)
	}
	if n == 0 {
		return math.NaN()
	}
	return sq / float64(n)
}

// plateau finds a ceiling in s: its median level, if at least
// MinAtCapShare of at least MinPlateauSamples samples sit within
// plateauTol of it and at most MaxAboveCapShare above (a sample of one
// proxy taken an instant before another's can count a call twice).
func plateau(s []rundir.Point, fs time.Time) (InferredLimit, bool) {
	if len(s) < MinPlateauSamples {
		return InferredLimit{}, false
	}
	vals := make([]float64, len(s))
	sum := 0.0
	for i, p := range s {
		vals[i] = p.Value
		sum += p.Value
	}
	slices.Sort(vals)
	level := vals[len(vals)/2]
	if level < 2 {
		return InferredLimit{}, false
	}
	tol := plateauTol(level)
	at, above, first := 0, 0, time.Time{}
	for _, p := range s {
		switch {
		case p.Value > level+tol:
			above++
		case p.Value >= level-tol:
			at++
			if first.IsZero() {
				first = p.Time
			}
		}
	}
	share := float64(at) / float64(len(s))
	if share < MinAtCapShare || float64(above)/float64(len(s)) > MaxAboveCapShare {
		return InferredLimit{}, false
	}
	// The cap is the highest count the calls often reach: a permit is free
	// for an instant between two calls more often in a service that fails
	// fast, so the median can sit one below.
	limit, count := level, map[float64]int{}
	for _, v := range vals {
		count[v]++
	}
	for v, c := range count {
		if v > limit && v <= level+tol && float64(c) >= 0.1*float64(len(vals)) {
			limit = v
		}
	}
	// The spread at the cap is from the first sample that reached it: the
	// ramp-up before says nothing about how flat the cap is.
	return InferredLimit{Limit: int(math.Round(limit)), AtCapShare: Num(share), AfterFaultS: Num(first.Sub(fs).Seconds()),
		MeanInFlight: Num(sum / float64(len(s))), variance: variance(s, first)}, true
}

// String describes the limit: "calls to A+B capped at 20 → one shared
// limit".
func (l InferredLimit) String() string {
	s := fmt.Sprintf("calls to %s capped at %d", strings.Join(l.Dependencies, "+"), l.Limit)
	if len(l.Dependencies) > 1 {
		s += " → one shared limit"
	}
	return s
}

// DescribeInferred joins the inferred limits of a run, "" without any.
func DescribeInferred(ls []InferredLimit) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.String())
	}
	return strings.Join(parts, "; ")
}

// poolStats is the Little's-law row of an inferred limit: its pool is
// named after the dependencies (e.g. "A+B (inferred)"), measured demand is
// the mean in-flight count, and nothing is predicted (the service's
// holding times are unknown to the harness before the run).
func (l InferredLimit) poolStats() PoolStats {
	return PoolStats{Pool: strings.Join(l.Dependencies, "+") + " (inferred)", Limit: l.Limit,
		PredictedDemand: Undefined, MeasuredDemand: l.MeanInFlight, DemandRatio: Undefined, PeakInUse: Num(l.Limit),
		PredictedExhaustionS: Undefined, MeasuredExhaustionS: l.AfterFaultS, ExhaustionRatio: Undefined}
}

// callersOf returns the endpoints that call any of deps, in meta order.
func (r *Run) callersOf(deps []string) []string {
	var out []string
	for _, e := range r.Meta.Endpoints {
		if slices.Contains(deps, e.Dependency) {
			out = append(out, e.Name)
		}
	}
	return out
}
