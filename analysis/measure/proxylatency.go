package measure

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// proxyHolding is the mean time a call to dependency dep spent past the
// service in [from, to], as the fault proxy in front of it saw it: by
// Little's law, its mean in-flight count over its request rate (both
// measured by the proxy). NaN without samples or requests.
func (r *Run) proxyHolding(dep string, from, to time.Time) float64 {
	comp := rundata.ProxyComponent(dep)
	reqs := r.Metric(comp, rundata.MetricProxyRequests)
	n, ok := rundir.DeltaOver(reqs, from, to)
	secs := to.Sub(from).Seconds()
	if !ok || n <= 0 || secs <= 0 {
		return math.NaN()
	}
	var sum float64
	var k int
	for _, p := range r.Metric(comp, rundata.MetricProxyInflight) {
		if inRange(p.Time, from, to) {
			sum += p.Value
			k++
		}
	}
	if k == 0 {
		return math.NaN()
	}
	return (sum / float64(k)) / (n / secs)
}

// injected returns how the faults set on dep during the run change a call's
// holding time w, capped at timeout, as their fault types say
// (faultproxy.Hold): a delay adds its mean (in its share of calls), errors,
// aborts and the proxy's own answers end calls at once, hangs hold until
// the timeout.
func (r *Run) injected(dep string, w float64, timeout float64) float64 {
	for _, f := range r.Meta.Faults {
		if f.Action != "set" || f.Dependency != dep || len(f.Faults) == 0 {
			continue
		}
		hs, err := faultproxy.RecordedHolds(f.Faults, 0)
		if err != nil {
			return math.NaN()
		}
		out := w
		for _, h := range hs {
			p := h.Percent / 100
			switch h.Kind {
			case faultproxy.HoldAdds:
				out += p * h.Mean.Seconds()
			case faultproxy.HoldFails, faultproxy.HoldEnds:
				out -= p * w
			case faultproxy.HoldNever:
				out += p * (timeout - w)
			}
		}
		if timeout > 0 {
			out = math.Min(out, timeout)
		}
		return math.Max(out, 0)
	}
	return w
}

// proxyPrediction predicts, for a user's service whose holding times the
// harness did not know before the run, the demand of the endpoints eps by
// Little's law: each endpoint's rate in the phase times the time a request
// holds it, its calls (calls) one after another — each dependency's
// holding time measured by its proxy in the baseline (plus the
// condition's faults in the fault phase, each call capped at T), times its
// calls per request. ok is false when an endpoint calls nothing known or
// a proxy was not sampled in the baseline.
func (r *Run) proxyPrediction(eps []string) (map[string]float64, bool) {
	base, ok := r.PhaseSpan(rundata.PhaseBaseline)
	if !ok || len(eps) == 0 {
		return nil, false
	}
	t := r.Meta.Timeout.Seconds()
	calls := r.calls()
	out := map[string]float64{}
	for _, ep := range eps {
		if len(calls[ep]) == 0 {
			return nil, false
		}
		var hold, holdFault float64
		for _, dep := range slices.Sorted(maps.Keys(calls[ep])) { // one order: sums agree to the last bit
			n := calls[ep][dep]
			w := r.proxyHolding(dep, base.Start, base.End)
			if math.IsNaN(w) {
				return nil, false
			}
			hold += n * w
			holdFault += n * r.injected(dep, w, t)
		}
		for _, ph := range []string{rundata.PhaseBaseline, rundata.PhaseFault} {
			ps, ok := r.PhaseSummary(ep, ph)
			if !ok {
				continue
			}
			if ph == rundata.PhaseFault {
				out[ph] += ps.TargetRate * holdFault
			} else {
				out[ph] += ps.TargetRate * hold
			}
		}
	}
	return out, true
}
