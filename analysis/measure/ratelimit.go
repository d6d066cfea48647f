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
	// the culprit's dependency in the baseline and the fault phase, as the
	// service counted them (waiting for a connection included), else as
	// its fault proxy saw them: Little's law λ·W, which a rate limiter
	// leaves to grow with W.
	InflightBaseline Num `json:"inflight_baseline"`
	InflightFault    Num `json:"inflight_fault"`
	// InflightSource says whose count that is (InflightFromService or
	// InflightFromProxy).
	InflightSource string `json:"inflight_source,omitempty"`
}

// rateLimitFamily adds the rate-limit claim's numbers when the experiment
// names it.
func rateLimitFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	if ex.RateLimit != nil {
		s.RateLimit = rateLimitStats(r, ex.Culprit, s.Endpoint(ex.Culprit))
	}
}

// rateLimitStats computes the run's RateLimitRun for the culprit.
func rateLimitStats(run *rundir.Run, culprit string, e EndpointStats) *RateLimitRun {
	out := &RateLimitRun{LimitedShare: Undefined, LimiterRejected: Undefined, LimitPerS: Undefined, OfferedPerS: Undefined,
		InflightBaseline: Undefined, InflightFault: Undefined}
	from, ok := run.FaultStart()
	if !ok {
		from = run.Origin()
	}
	to := run.FaultEnd()
	c := e.FaultCounts
	if tot := c.Total(); tot > 0 {
		out.LimitedShare = Num(float64(c[rundata.ClassLimited]) / float64(tot))
		if secs := to.Sub(from).Seconds(); secs > 0 {
			out.OfferedPerS = Num(float64(tot) / secs)
		}
	}
	l := rundata.L("dependency", culprit)
	if d, ok := rundir.DeltaOver(run.Metric(rundata.ServiceComponent, rundata.Key(MetricRateLimitRejected, l)), from, to); ok {
		out.LimiterRejected = Num(d)
	}
	if v := run.Metric(rundata.ServiceComponent, rundata.Key(MetricRateLimitRate, l)); len(v) > 0 {
		out.LimitPerS = Num(v[len(v)-1].Value)
	}
	inflight, source := inflightOf(run, culprit)
	out.InflightSource = source
	if b, ok := run.PhaseSpan(rundata.PhaseBaseline); ok {
		out.InflightBaseline = meanOver(inflight, b.Start, b.End)
	}
	out.InflightFault = meanOver(inflight, from, to)
	return out
}

// inflightOf is the series of the calls in flight to the culprit's
// dependency: the built-in service's own count (calls waiting for a
// connection included), else the culprit's fault proxy's; and which it is.
func inflightOf(run *rundir.Run, culprit string) ([]rundir.Point, string) {
	if s := run.Metric(rundata.ServiceComponent, rundata.Key(MetricDepInflight, rundata.L("dependency", culprit))); len(s) > 0 {
		return s, InflightFromService
	}
	return run.Metric(rundata.ProxyComponent(run.EndpointInfo(culprit).Dependency), rundata.MetricProxyInflight), InflightFromProxy
}
