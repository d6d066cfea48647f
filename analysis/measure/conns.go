package measure

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// ConnPoolRule is the connections rule for a service that exports its
// connection pools: measured, not inferred. Summaries list it only when a
// run has those metrics, so reports of runs without them are unchanged.
const ConnPoolRule = "connections (measured): a connection pool's in_use ≥ limit, or calls waiting for a connection (bulkheadlab_conn_pool_in_use, _limit, _waiting); " +
	"for a service that exports its connection pools it replaces the rule above; timed exactly where the service exports when the last slot was taken (bulkheadlab_conn_pool_exhausted_since_seconds); a worker pool that ran out in the same sample without exact times is named, with the connections in its detail"

// ExhaustionRulesOf are the rules behind the runs' Exhausted: ExhaustionRules,
// with ConnPoolRule after the connections rule when any run exports
// connection pools.
func ExhaustionRulesOf(runs []*rundir.Run) []string {
	if !slices.ContainsFunc(runs, func(r *rundir.Run) bool { return observesConnPools(r) }) {
		return ExhaustionRules
	}
	var out []string
	for _, rule := range ExhaustionRules {
		out = append(out, rule)
		if strings.HasPrefix(rule, ResourceConnections+":") {
			out = append(out, ConnPoolRule)
		}
	}
	return out
}

// observesConnPools reports whether the service's samples hold connection
// pool metrics.
func observesConnPools(run *rundir.Run) bool { return observes(run, rundata.MetricConnPoolLimit) }

// ConnPoolNames returns the connection pools in the service's samples.
func (r *Run) ConnPoolNames() []string { return connPools{r.Data}.names() }

// connPools reads the service's connection pools: their occupancy, waits and
// hold times.
type connPools struct{ run *rundir.Run }

// names returns the connection pools in the service's samples.
func (cp connPools) names() []string {
	set := map[string]bool{}
	for _, s := range cp.run.Metrics {
		if s.Component == rundata.ServiceComponent {
			for _, p := range rundata.LabelValues(s.Values, rundata.MetricConnPoolLimit, "pool") {
				set[p] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// connPoolHits applies ConnPoolRule to every connection pool: the first
// sample in [from, to] at which it was full or had callers waiting, timed
// at the moment its last free slot was taken where the service exports it.
func (cp connPools) connPoolHits(from, to time.Time) []hit {
	var hits []hit
	for _, pool := range cp.names() {
		inUse := cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolInUse, pool))
		limit := cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolLimit, pool))
		waiting := cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolWaiting, pool))
		since := cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolExhaustedSince, pool))
		for i, p := range inUse {
			if !inRange(p.Time, from, to) {
				continue
			}
			lim, _ := rundir.ValueAt(limit, p.Time)
			w, _ := rundir.ValueAt(waiting, p.Time)
			full := lim > 0 && p.Value >= lim
			if !full && w <= 0 {
				continue
			}
			detail := fmt.Sprintf("connection pool %s: in_use %s/%s, waiting %s", pool, FmtG(p.Value), FmtG(lim), FmtG(w))
			if i > 0 {
				detail += cp.connWaits(pool, inUse[i-1].Time, p.Time)
			}
			// The mark, where set, is when the pool last ran out for good: a
			// sample can catch a slot between a release and the waiting
			// call that takes it (in_use below the limit, callers waiting).
			at, exact := exactAt(since, p.Time, from)
			hits = append(hits, hit{ResourceConnections, at, detail, pool, exact, ""})
			break
		}
	}
	return hits
}

// tiedConnections names the measured connections hit that tied with the
// winner of hits (sorted by time; ties go in the listed order, so the pool
// wins): within one sampling interval (neither exports its exact moment)
// the two cannot be ordered, and the reader should see both.
func tiedConnections(hits []hit) string {
	for _, h := range hits[1:] {
		if h.res == ResourceConnections && h.at.Equal(hits[0].at) && hits[0].res != ResourceConnections {
			return "; in the same sample, " + h.detail
		}
	}
	return ""
}

// connWaits describes the connection waits of pool's dependencies between
// two samples: "; b waited 41 ms on average (12 calls), 2 timed out
// waiting". A pool named after an endpoint is that endpoint's own; any other
// (shared) serves every dependency.
func (cp connPools) connWaits(pool string, from, to time.Time) string {
	deps := rundata.LabelValues(cp.samplesAt(to), rundata.MetricConnWaitCount, "dependency")
	if slices.Contains(deps, pool) {
		deps = []string{pool}
	}
	var parts []string
	for _, d := range deps {
		l := rundata.L("dependency", d)
		sum, ok1 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnWaitSum, l)), from, to)
		n, ok2 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnWaitCount, l)), from, to)
		timeouts, _ := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnWaitTimeouts, l)), from, to)
		var part string
		if ok1 && ok2 && n > 0 && sum > 0 {
			part = fmt.Sprintf("%s waited %s ms on average (%s calls)", d, FmtG(math.Round(10000*sum/n)/10), FmtG(n))
		}
		if timeouts > 0 {
			part = strings.TrimPrefix(part+fmt.Sprintf(", %s of %s timed out waiting", FmtG(timeouts), d), ", ")
		}
		if part != "" {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// samplesAt returns the values of the service's sample at t (nil if none).
func (cp connPools) samplesAt(t time.Time) map[string]float64 {
	for _, s := range cp.run.Metrics {
		if s.Component == rundata.ServiceComponent && s.Time.Equal(t) {
			return s.Values
		}
	}
	return nil
}

// ConnWait is what one dependency's calls waited for a connection over the
// main phase of a run (the service's bulkheadlab_conn_wait_seconds, labelled
// by the endpoint that makes the calls).
type ConnWait struct {
	Endpoint string `json:"endpoint"`
	// Calls got a connection; MeanWaitMs is their mean wait for it
	// (zero for a call that found one free).
	Calls      Num `json:"calls"`
	MeanWaitMs Num `json:"mean_wait_ms"`
	// Timeouts are calls whose deadline passed while they waited.
	Timeouts Num `json:"timeouts"`
	// MeanHoldMs is the calls' mean time holding the connection (a
	// query's time, an HTTP call's round trip), BaselineHoldMs the same in
	// the baseline phase: next to the wait, it tells a slow dependency
	// (hold up) from a pool that ran out (wait up, hold flat). NaN for a
	// service that does not export it.
	MeanHoldMs     Num `json:"mean_hold_ms"`
	BaselineHoldMs Num `json:"baseline_hold_ms"`
}

// connsFamily adds the endpoints' waits for a connection.
func connsFamily(r *rundir.Run, s *RunSummary, _ rundata.Expectations) {
	s.ConnWaits = connPools{r}.connWaitStats()
}

// connWaitStats returns each endpoint's connection waits over the main phase,
// sorted by endpoint; nil when the service exports no connection pools.
func (cp connPools) connWaitStats() []ConnWait {
	if !observesConnPools(cp.run) {
		return nil
	}
	from, ok := cp.run.FaultStart()
	if !ok {
		from = cp.run.Origin()
	}
	to := cp.run.FaultEnd()
	var out []ConnWait
	for _, e := range cp.run.Meta.Endpoints {
		if e.Dependency == "" {
			continue
		}
		l := rundata.L("dependency", e.Name)
		sum, ok1 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnWaitSum, l)), from, to)
		n, ok2 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnWaitCount, l)), from, to)
		timeouts, ok3 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnWaitTimeouts, l)), from, to)
		if !ok1 || !ok2 {
			continue
		}
		w := ConnWait{Endpoint: e.Name, Calls: Num(n), MeanWaitMs: Undefined, Timeouts: Undefined,
			MeanHoldMs: cp.meanHoldMs(l, from, to), BaselineHoldMs: Undefined}
		if n > 0 {
			w.MeanWaitMs = Num(1000 * sum / n)
		}
		if b, ok := cp.run.PhaseSpan(rundata.PhaseBaseline); ok {
			w.BaselineHoldMs = cp.meanHoldMs(l, b.Start, b.End)
		}
		if ok3 {
			w.Timeouts = Num(timeouts)
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b ConnWait) int {
		switch {
		case a.Endpoint < b.Endpoint:
			return -1
		case a.Endpoint > b.Endpoint:
			return 1
		}
		return 0
	})
	return out
}

// meanHoldMs is the mean time the calls of dependency series l ended in
// [from, to] held their connection, NaN without calls or the metric.
func (cp connPools) meanHoldMs(l rundata.Label, from, to time.Time) Num {
	sum, ok1 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnHoldSum, l)), from, to)
	n, ok2 := rundir.DeltaOver(cp.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricConnHoldCount, l)), from, to)
	if !ok1 || !ok2 || n <= 0 {
		return Undefined
	}
	return Num(1000 * sum / n)
}

// ConnWait returns endpoint ep's connection waits in the run (NaN fields
// when the run has none).
func (s RunSummary) ConnWait(ep string) ConnWait {
	for _, w := range s.ConnWaits {
		if w.Endpoint == ep {
			return w
		}
	}
	return ConnWait{Endpoint: ep, Calls: Undefined, MeanWaitMs: Undefined, Timeouts: Undefined, MeanHoldMs: Undefined, BaselineHoldMs: Undefined}
}

// ConnPoolNear reports a connection pool's peak in use and limit over the
// run, and whether it came near the limit: half of it in use, or calls
// waiting.
func (r *Run) ConnPoolNear(pool string) (peak, limit float64, near bool) {
	return connPools{r.Data}.nearLimit(pool)
}

// nearLimit is ConnPoolNear.
func (cp connPools) nearLimit(pool string) (peak, limit float64, near bool) {
	waited := false
	for _, pt := range cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolInUse, pool)) {
		peak = max(peak, pt.Value)
	}
	for _, pt := range cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolLimit, pool)) {
		limit = max(limit, pt.Value)
	}
	for _, pt := range cp.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricConnPoolWaiting, pool)) {
		waited = waited || pt.Value > 0
	}
	return peak, limit, waited || peak >= limit/2
}
