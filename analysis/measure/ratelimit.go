package measure

import (
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Metric names of the built-in service's rate limiters (the ratelimit
// layout), labelled dependency with the calling endpoint's name.
const (
	MetricRateLimitRate     = "bulkheadlab_ratelimit_rate"
	MetricRateLimitRejected = "bulkheadlab_ratelimit_rejected_total"
	// MetricDepInflight is the built-in service's count of dependency
	// calls in flight, labelled dependency like MetricRateLimitRate.
	MetricDepInflight = "bulkheadlab_dependency_inflight"
)

// RateLimitRun is what a rate limiter did with the culprit's calls in one
// run, and the calls in flight it let through: seed-004's "rate limiting
// bounds requests per unit time; a bulkhead bounds concurrent in-flight
// work". Every number is over the fault phase unless it says baseline.
type RateLimitRun struct {
	// LimitedShare is the share of the culprit's results its rate limiter
	// refused (class limited).
	LimitedShare Num `json:"limited_share"`
	// LimiterRejected is the service's own count of the culprit's calls
	// its rate limiter refused (bulkheadlab_ratelimit_rejected_total;
	// null when the service exports none: no rate limiter).
	LimiterRejected Num `json:"limiter_rejected"`
	// LimitPerS is the culprit's rate limit, OfferedPerS its requests per
	// second.
	LimitPerS   Num `json:"limit_per_s"`
	OfferedPerS Num `json:"offered_per_s"`
	// InflightBaseline and InflightFault are the mean calls in flight to
	// the culprit's dependency, seen by its fault proxy, in the baseline
	// and the fault phase: Little's law λ·W, which a rate limiter leaves
	// to grow with W.
	InflightBaseline Num `json:"inflight_baseline"`
	InflightFault    Num `json:"inflight_fault"`
}

// rateLimitFamily adds the rate-limit claim's numbers when the experiment
// names it.
func rateLimitFamily(r *Run, s *RunSummary, ex rundata.Expectations) {
	if ex.RateLimit != nil {
		s.RateLimit = r.rateLimitStats(ex.Culprit, s.Endpoint(ex.Culprit))
	}
}

// rateLimitStats computes the run's RateLimitRun for the culprit.
func (r *Run) rateLimitStats(culprit string, e EndpointStats) *RateLimitRun {
	out := &RateLimitRun{LimitedShare: Undefined, LimiterRejected: Undefined, LimitPerS: Undefined, OfferedPerS: Undefined,
		InflightBaseline: Undefined, InflightFault: Undefined}
	from, ok := r.FaultStart()
	if !ok {
		from = r.Origin()
	}
	to := r.FaultEnd()
	c := e.FaultCounts
	if tot := c.Total(); tot > 0 {
		out.LimitedShare = Num(float64(c[rundata.ClassLimited]) / float64(tot))
		if secs := to.Sub(from).Seconds(); secs > 0 {
			out.OfferedPerS = Num(float64(tot) / secs)
		}
	}
	l := rundata.L("dependency", culprit)
	if d, ok := rundir.DeltaOver(r.Metric(rundata.ServiceComponent, rundata.Key(MetricRateLimitRejected, l)), from, to); ok {
		out.LimiterRejected = Num(d)
	}
	if v := r.Metric(rundata.ServiceComponent, rundata.Key(MetricRateLimitRate, l)); len(v) > 0 {
		out.LimitPerS = Num(v[len(v)-1].Value)
	}
	proxy := rundata.ProxyComponent(r.EndpointInfo(culprit).Dependency)
	if b, ok := r.PhaseSpan(rundata.PhaseBaseline); ok {
		out.InflightBaseline = meanOver(r.Metric(proxy, rundata.MetricProxyInflight), b.Start, b.End)
	}
	out.InflightFault = meanOver(r.Metric(proxy, rundata.MetricProxyInflight), from, to)
	return out
}
