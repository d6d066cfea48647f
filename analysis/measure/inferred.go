package measure

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
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
const InferenceRule = "a limit is inferred when, in the fault phase, the proxies' in-flight count (one dependency, or the sum over a set of them) sat within max(1, 5 %) of its median (at it, below 5) in ≥ 60 % of at least 8 samples and above it in ≤ 10 %, while the endpoints calling those dependencies failed ≥ 1 % of requests, and below 90 % of the demand the proxies predict (for each dependency, every endpoint calling it by the call graph — an audit's measured one, else the declared one — at its rate × its calls per request × the dependency's baseline holding time, faults added, capped at T; in the fault phase an endpoint that also calls the faulted dependency is left out of another's demand); the sum over two or more dependencies, each one's callers held back (failing, or their p99 up beyond P2's bound), is one shared limit when some caller failed and the sum varies less than the most varying dependency's count (their counts move against each other), or when every one's callers failed and none capped on its own varies less than the sum — the smallest such set, grown by a dependency whose count makes the sum flatter, sets not overlapping; under a shared limit no dependency is said to be capped on its own (its ceiling is its share)"

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
// rose beyond P2's bound (held back without failing). Which endpoints call
// a dependency is the run's call graph (calls): an audit's measured one,
// else the declared one.
func inferLimits(run *rundir.Run, errRate map[string]float64, slowed map[string]bool) []InferredLimit {
	fs, ok := run.FaultStart()
	if !ok {
		return nil
	}
	fe := run.FaultEnd()
	calls := callGraph{run}.calls()
	deps := callGraph{run}.dependencies()
	callers := map[string][]string{} // dependency → endpoints
	for _, e := range run.Meta.Endpoints {
		for _, d := range deps {
			if _, ok := calls[e.Name][d]; ok {
				callers[d] = append(callers[d], e.Name)
			}
		}
	}
	series := map[string][]rundir.Point{}
	for _, d := range deps {
		for _, p := range run.Metric(rundata.ProxyComponent(d), rundata.MetricProxyInflight) {
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
	// Held back: its callers failed, or only waited for a permit (their
	// p99 up beyond P2's bound). A bulkhead's neighbour is neither, and
	// its count's noise can make a sum look flat.
	held := func(d string) bool {
		return failing([]string{d}) || slices.ContainsFunc(callers[d], func(ep string) bool { return slowed[ep] })
	}
	// A cap is a level below what the callers demanded. When the proxies
	// predict the demand (their baseline holding time × rate × calls per
	// request, the faults added, capped at T), a level near it is the
	// demand itself: an unlimited service whose every call takes T sits
	// flat too.
	belowDemand := func(l InferredLimit, group []string) bool {
		pred, ok := callGraph{run}.demandOn(group)
		if !ok {
			return true // cannot tell
		}
		return float64(l.Limit) < MaxCapOfDemand*pred[rundata.PhaseFault]
	}
	var singles []InferredLimit
	single := map[string]InferredLimit{}
	for _, d := range deps {
		if l, ok := plateau(series[d], fs); ok && failing([]string{d}) && belowDemand(l, []string{d}) {
			l.Dependencies = []string{d}
			singles = append(singles, l)
			single[d] = l
		}
	}
	var members []string // the dependencies a shared limit may be over
	for _, d := range deps {
		if len(series[d]) > 0 && held(d) {
			members = append(members, d)
		}
	}
	// sharedCap applies the shared-limit rule to the sum over group.
	sharedCap := func(group []string) (InferredLimit, bool) {
		sum := sumSeries(series, group)
		l, ok := plateau(sum, fs)
		if !ok || !failing(group) || !belowDemand(l, group) {
			return l, false
		}
		// One limit shared by the dependencies holds back the calls to
		// every one of them (each is held, by the choice of members), and
		// the sum is then flatter than the parts (one dependency takes
		// what the others free): the parts move against each other, so
		// the sum varies less than the most varying part, where counts of
		// their own add their variances. Without that sign every
		// dependency's callers must have failed, and no dependency capped
		// on its own may vary less than the sum. (Each variance is from
		// the first sample at the cap: the ramp-up before says nothing
		// about how flat the cap is.)
		capped := fs.Add(time.Duration(float64(l.AfterFaultS) * float64(time.Second)))
		var most float64
		allFailing := true
		for _, d := range group {
			allFailing = allFailing && failing([]string{d})
			most = math.Max(most, variance(series[d], capped))
		}
		if l.variance < most {
			l.Dependencies = slices.Clone(group)
			return l, true
		}
		if !allFailing {
			return l, false
		}
		for _, d := range group {
			if s, capped := single[d]; capped && s.variance < l.variance {
				return l, false
			}
		}
		l.Dependencies = slices.Clone(group)
		return l, true
	}
	shared := chooseShared(members, sharedCap)
	inShared := func(d string) bool {
		return slices.ContainsFunc(shared, func(l InferredLimit) bool { return slices.Contains(l.Dependencies, d) })
	}
	// A dependency's own ceiling under a shared one is its share of it
	// (what the others left it), not a limit of its own.
	return append(shared, slices.DeleteFunc(singles, func(l InferredLimit) bool { return inShared(l.Dependencies[0]) })...)
}

// maxSharedSearch is the most dependencies whose every subset is tried
// as a shared limit (2^n sums); beyond it only the sum over all of them is.
const maxSharedSearch = 12

// chooseShared finds the shared limits among members: every subset of two
// or more that capped (its sum a cap by the shared-limit rule) is a
// candidate; the smallest, flattest first, each grown by a member while
// the grown set is a candidate whose sum varies less (the member moves
// against the others: it is under the same limit), and none overlapping
// one chosen before. A member capped on its own beside a shared limit
// adds its own variance to the sum and is not taken in.
func chooseShared(members []string, capped func([]string) (InferredLimit, bool)) []InferredLimit {
	n := len(members)
	if n < 2 {
		return nil
	}
	var masks []uint
	if n > maxSharedSearch {
		masks = []uint{1<<n - 1}
	} else {
		for m := uint(1); m < 1<<n; m++ {
			if bits.OnesCount(m) >= 2 {
				masks = append(masks, m)
			}
		}
	}
	cands := map[uint]InferredLimit{}
	for _, m := range masks {
		if l, ok := capped(subset(members, m)); ok {
			cands[m] = l
		}
	}
	order := slices.Collect(maps.Keys(cands))
	slices.SortFunc(order, func(a, b uint) int {
		if c := bits.OnesCount(a) - bits.OnesCount(b); c != 0 {
			return c
		}
		if c := cmp.Compare(cands[a].variance, cands[b].variance); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var out []InferredLimit
	var taken uint
	for _, m := range order {
		if m&taken != 0 {
			continue
		}
		for grown := true; grown; {
			grown = false
			best := m
			for i := range n {
				g := m | 1<<i
				if g == m || g&taken != 0 {
					continue
				}
				if l, ok := cands[g]; ok && l.variance < cands[best].variance {
					best = g
				}
			}
			if best != m {
				m, grown = best, true
			}
		}
		taken |= m
		out = append(out, cands[m])
	}
	return out
}

// subset is the members whose bits are set in mask, in order.
func subset(members []string, mask uint) []string {
	var out []string
	for i, d := range members {
		if mask&(1<<i) != 0 {
			out = append(out, d)
		}
	}
	return out
}

// sumSeries is the sum of the group's counts, sampled at the first one's
// ticks (the others' values at that time); a tick where one has no value
// yet is left out.
func sumSeries(series map[string][]rundir.Point, group []string) []rundir.Point {
	var sum []rundir.Point
	for _, p := range series[group[0]] {
		v := p.Value
		complete := true
		for _, d := range group[1:] {
			x, ok := rundir.ValueAt(series[d], p.Time)
			complete = complete && ok
			v += x
		}
		if complete {
			sum = append(sum, rundir.Point{Time: p.Time, Value: v})
		}
	}
	return sum
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

// hit is the limit as a resource that ran out: "pool (inferred) A+B".
func (l InferredLimit) hit() ResourceHit {
	return ResourceHit{Resource: ResourcePoolInferred, Name: strings.Join(l.Dependencies, "+"), AfterFaultS: l.AfterFaultS, Detail: l.String()}
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
