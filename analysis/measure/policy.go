package measure

import (
	"math"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// PolicyRun holds a run's numbers about the culprit's policy stack, all in
// seconds from fault start (null when it did not happen or is not
// observable). It is computed only for experiments that name policy claims.
type PolicyRun struct {
	// BreakerOpenS is when the culprit's breaker first opened, exact from
	// bulkheadlab_breaker_opened_at_seconds.
	BreakerOpenS Num `json:"breaker_open_s"`
	// BreakerOpenPredictedS is the closed-form prediction of BreakerOpenS
	// (null when the breaker or the fault has none).
	BreakerOpenPredictedS Num `json:"breaker_open_predicted_s"`
	// BreakerOpenIntervals are the spans (s from fault start) the breaker
	// was open, at the sampling resolution (for the figures).
	BreakerOpenIntervals [][2]float64 `json:"breaker_open_intervals,omitempty"`
	// PoolExhaustedS is when the first pool the culprit draws from ran out.
	PoolExhaustedS Num `json:"pool_exhausted_s"`
	// VictimDegradedS is the start of the victim's first degraded window.
	VictimDegradedS Num `json:"victim_degraded_s"`
	// LimiterMinLimit and LimiterMeanLimit summarise the culprit's adaptive
	// limit over the fault phase.
	LimiterMinLimit  Num `json:"limiter_min_limit"`
	LimiterMeanLimit Num `json:"limiter_mean_limit"`
}

// policyFamily adds the culprit's policy numbers.
func policyFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	s.Policy = policyStats(r, s, ex)
}

// policyStats computes PolicyRun for a run of s; nil unless the
// experiment names policy claims.
func policyStats(run *rundir.Run, s *RunSummary, ex rundata.Expectations) *PolicyRun {
	if ex.Policy == nil {
		return nil
	}
	pr := &PolicyRun{BreakerOpenS: Undefined, BreakerOpenPredictedS: Undefined, PoolExhaustedS: Undefined, VictimDegradedS: Undefined, LimiterMinLimit: Undefined, LimiterMeanLimit: Undefined}
	if d, ok := run.Meta.PredictedBreakerOpen[run.EndpointInfo(ex.Culprit).Dependency]; ok {
		pr.BreakerOpenPredictedS = Num(d.Seconds())
	}
	fs, ok := run.FaultStart()
	if !ok {
		return pr
	}
	fe := run.FaultEnd()
	dep := rundata.L("dependency", ex.Culprit)
	for _, p := range run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricBreakerOpenedAt, dep)) {
		at := time.Unix(0, int64(p.Value*1e9))
		if p.Value > 0 && !at.Before(fs) {
			pr.BreakerOpenS = Num(at.Sub(fs).Seconds())
			break
		}
	}
	var open *[2]float64
	for _, p := range run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricBreakerState, dep)) {
		x := p.Time.Sub(fs).Seconds()
		switch {
		case p.Value == 2 && open == nil:
			pr.BreakerOpenIntervals = append(pr.BreakerOpenIntervals, [2]float64{x, x})
			open = &pr.BreakerOpenIntervals[len(pr.BreakerOpenIntervals)-1]
		case p.Value == 2:
			open[1] = x
		default:
			if open != nil {
				open[1] = x
			}
			open = nil
		}
	}
	for _, ps := range s.Pools {
		if slices.Contains(run.PoolInfo(ps.Pool).Endpoints, ex.Culprit) && !math.IsNaN(float64(ps.MeasuredExhaustionS)) {
			pr.PoolExhaustedS = ps.MeasuredExhaustionS
			break
		}
	}
	if t := float64(s.TimeToDegradeT); !math.IsNaN(t) {
		pr.VictimDegradedS = Num(max(0, t*run.Meta.Timeout.Seconds()-run.Meta.Window.Seconds()))
	}
	var n, sum float64
	lo := math.Inf(1)
	for _, p := range run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricLimiterLimit, dep)) {
		if inRange(p.Time, fs, fe) {
			n, sum, lo = n+1, sum+p.Value, min(lo, p.Value)
		}
	}
	if n > 0 {
		pr.LimiterMinLimit, pr.LimiterMeanLimit = Num(lo), Num(sum/n)
	}
	return pr
}
