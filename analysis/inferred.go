package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

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
	// MinCappedErrorRate is the error rate the endpoints calling a capped
	// dependency must show: demand went beyond the cap.
	MinCappedErrorRate = 0.01
)

// InferenceRule documents how limits are inferred; the report prints it.
const InferenceRule = "a limit is inferred when, in the fault phase, the proxies' in-flight count (one dependency, or the sum over all) sat within max(1, 5 %) of its median (at it, below 5) in ≥ 60 % of at least 8 samples and above it in ≤ 10 % while the endpoints calling those dependencies failed ≥ 1 % of requests; the sum capped means one shared limit unless a capped dependency's count varies less than the sum (its own limit) or, at the same level, as little while the others' callers did not fail"

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
// fault-phase error rate.
func (r *Run) inferLimits(errRate map[string]float64) []InferredLimit {
	fs, ok := r.faultStart()
	if !ok {
		return nil
	}
	fe := r.faultEnd()
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
	series := map[string][]point{}
	for _, d := range deps {
		for _, p := range r.metric(rundata.ProxyComponent(d), rundata.MetricProxyInflight) {
			if inRange(p.t, fs, fe) {
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
	var out []InferredLimit
	single := map[string]InferredLimit{}
	for _, d := range deps {
		if l, ok := plateau(series[d], fs); ok && failing([]string{d}) {
			l.Dependencies = []string{d}
			out = append(out, l)
			single[d] = l
		}
	}
	if len(deps) < 2 {
		return out
	}
	// The sum over all dependencies, sampled at the first one's ticks.
	var sum []point
	for _, p := range series[deps[0]] {
		v := p.v
		complete := true
		for _, d := range deps[1:] {
			x, ok := valueAt(series[d], p.t)
			complete = complete && ok
			v += x
		}
		if complete {
			sum = append(sum, point{p.t, v})
		}
	}
	l, ok := plateau(sum, fs)
	if !ok || !failing(deps) {
		return out
	}
	l.Dependencies = slices.Clone(deps)
	// The sum of the counts is capped. A cap of one dependency alone makes
	// the sum look capped too when the others' counts vary little; then
	// that dependency's count varies less than the sum, and its own limit
	// explains the sum. A shared limit makes the sum vary less than any
	// part (one dependency takes what the others free). When they vary
	// alike at one level, the others were idle: a shared limit if their
	// callers failed meanwhile (held back by it), else that dependency's.
	for _, d := range deps {
		s, capped := single[d]
		if !capped {
			continue
		}
		sameLevel := math.Abs(float64(s.Limit-l.Limit)) <= plateauTol(float64(l.Limit))
		switch {
		case s.variance < l.variance && !sameLevel:
			return out
		case s.variance <= l.variance:
			others := slices.DeleteFunc(slices.Clone(deps), func(x string) bool { return x == d })
			if !failing(others) {
				return out
			}
		}
		if sameLevel {
			// The shared limit seen through one dependency.
			out = slices.DeleteFunc(out, func(x InferredLimit) bool { return len(x.Dependencies) == 1 && x.Dependencies[0] == d })
		}
	}
	return append([]InferredLimit{l}, out...)
}

// plateau finds a ceiling in s: its median level, if at least
// MinAtCapShare of at least MinPlateauSamples samples sit within
// plateauTol of it and at most MaxAboveCapShare above (a sample of one
// proxy taken an instant before another's can count a call twice).
func plateau(s []point, fs time.Time) (InferredLimit, bool) {
	if len(s) < MinPlateauSamples {
		return InferredLimit{}, false
	}
	vals := make([]float64, len(s))
	sum := 0.0
	for i, p := range s {
		vals[i] = p.v
		sum += p.v
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
		case p.v > level+tol:
			above++
		case p.v >= level-tol:
			at++
			if first.IsZero() {
				first = p.t
			}
		}
	}
	share := float64(at) / float64(len(s))
	if share < MinAtCapShare || float64(above)/float64(len(s)) > MaxAboveCapShare {
		return InferredLimit{}, false
	}
	mean, sq := sum/float64(len(s)), 0.0
	for _, v := range vals {
		sq += (v - mean) * (v - mean)
	}
	return InferredLimit{Limit: int(math.Round(level)), AtCapShare: Num(share), AfterFaultS: Num(first.Sub(fs).Seconds()),
		MeanInFlight: Num(mean), variance: sq / float64(len(s))}, true
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

// describeInferred joins the inferred limits of a run, "" without any.
func describeInferred(ls []InferredLimit) string {
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
		PredictedDemand: nan, MeasuredDemand: l.MeanInFlight, DemandRatio: nan, PeakInUse: Num(l.Limit),
		PredictedExhaustionS: nan, MeasuredExhaustionS: l.AfterFaultS, ExhaustionRatio: nan}
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
