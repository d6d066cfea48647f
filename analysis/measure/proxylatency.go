package measure

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// proxyLatency reads what the fault proxies held calls for, and the latency
// that predicts at the endpoints.
type proxyLatency struct{ run *rundir.Run }

// proxyHolding is the mean time a call to dependency dep spent past the
// service in [from, to], as the fault proxy in front of it saw it: the
// mean of its duration histogram over the span (every call timed, the
// HTTP and PostgreSQL planes), else, by Little's law, its mean in-flight
// count over its request rate (the TCP plane; a gauge sampled a few times
// a second, which over a short span can miss by a factor of two). NaN
// without samples or requests.
func (pl proxyLatency) proxyHolding(dep string, from, to time.Time) float64 {
	comp := rundata.ProxyComponent(dep)
	for _, h := range [][2]string{{rundata.MetricPgQuerySum, rundata.MetricPgQueryCount}, {rundata.MetricProxyUpstreamSum, rundata.MetricProxyUpstreamCount}} {
		sum, ok1 := rundir.DeltaOver(pl.run.Metric(comp, h[0]), from, to)
		n, ok2 := rundir.DeltaOver(pl.run.Metric(comp, h[1]), from, to)
		if ok1 && ok2 && n > 0 && sum >= 0 {
			return sum / n
		}
	}
	reqs := pl.run.Metric(comp, rundata.MetricProxyRequests)
	n, ok := rundir.DeltaOver(reqs, from, to)
	secs := to.Sub(from).Seconds()
	if !ok || n <= 0 || secs <= 0 {
		return math.NaN()
	}
	var sum float64
	var k int
	for _, p := range pl.run.Metric(comp, rundata.MetricProxyInflight) {
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
//
// A fault with a match (a PostgreSQL dependency's) acts on the share of
// endpoint ep's calls that it matches (matchShare; ep "": of every
// caller's).
func (pl proxyLatency) injected(dep, ep string, w float64, timeout float64) float64 {
	for _, f := range pl.run.Meta.Faults {
		if f.Action != "set" || f.Dependency != dep || len(f.Faults) == 0 {
			continue
		}
		hs, err := faultproxy.RecordedHolds(f.Faults, 0)
		if err != nil {
			return math.NaN()
		}
		var matches []struct {
			Match string `json:"match"`
		}
		_ = json.Unmarshal(f.Faults, &matches) // RecordedHolds read it
		out := w
		for i, h := range hs {
			p := h.Percent / 100
			if i < len(matches) {
				p *= pl.matchShare(dep, ep, matches[i].Match)
			}
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
func (pl proxyLatency) proxyPrediction(eps []string) (map[string]float64, bool) {
	base, ok := pl.run.PhaseSpan(rundata.PhaseBaseline)
	if !ok || len(eps) == 0 {
		return nil, false
	}
	t := pl.run.Meta.Timeout.Seconds()
	calls := callGraph{pl.run}.calls()
	out := map[string]float64{}
	for _, ep := range eps {
		if len(calls[ep]) == 0 {
			return nil, false
		}
		var hold, holdFault float64
		for _, dep := range slices.Sorted(maps.Keys(calls[ep])) { // one order: sums agree to the last bit
			n := calls[ep][dep]
			w := pl.proxyHolding(dep, base.Start, base.End)
			if math.IsNaN(w) {
				return nil, false
			}
			hold += n * w
			holdFault += n * pl.injected(dep, ep, w, t)
		}
		for _, ph := range []string{rundata.PhaseBaseline, rundata.PhaseFault} {
			ps, ok := pl.run.PhaseSummary(ep, ph)
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

// matchShare is the share of endpoint ep's calls to dependency dep that
// the expression match matches (1 without one; a PostgreSQL dependency's
// statements, an HTTP one's routes): of the class the run's proxy counted
// for it (RunMeta.CallClasses), the share the audit's calibration
// measured for ep, else the share of all of dep's calls in the baseline
// (ep "": always that one), else 1 (a match the proxy did not count:
// every call, as before it was counted).
func (pl proxyLatency) matchShare(dep, ep, match string) float64 {
	if match == "" {
		return 1
	}
	i := slices.IndexFunc(pl.run.Meta.CallClasses[dep], func(c rundata.CallClass) bool { return c.Match == match })
	if i < 0 {
		return 1
	}
	cls := pl.run.Meta.CallClasses[dep][i].Name
	if ep != "" {
		if share, ok := pl.run.CallGraph.ClassShare(ep, dep, cls); ok {
			return share
		}
	}
	base, ok := pl.run.PhaseSpan(rundata.PhaseBaseline)
	if !ok {
		return 1
	}
	comp := rundata.ProxyComponent(dep)
	all, ok1 := rundir.DeltaOver(pl.run.Metric(comp, rundata.MetricProxyRequests), base.Start, base.End)
	var n float64
	ok2 := false
	for _, m := range rundata.ClassCallMetrics { // the proxy's plane's
		if n, ok2 = rundir.DeltaOver(pl.run.Metric(comp, rundata.Key(m, rundata.L("class", cls))), base.Start, base.End); ok2 {
			break
		}
	}
	if !ok1 || !ok2 || !(all > 0) {
		return 1
	}
	return min(1, max(0, n/all))
}
