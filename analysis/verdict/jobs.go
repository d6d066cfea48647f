package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// jobsDecisions are the background-job claims, judged when
// Expectations.Jobs names their runs: a burst of jobs drained by workers
// of the service's own process beside its live traffic.
var jobsDecisions = []decision{
	{claims.JobsStarve, jobsStarveText, jobsStarve},
	{claims.JobsIsolated, jobsIsolatedText, jobsIsolated},
}

func jobsStarveText(s *Summary) string {
	jr := s.Expectations.JobsRoles()
	return fmt.Sprintf("%s + %s: with the jobs on the request pools, the queue's drain takes the live traffic (%s) off its baseline, beyond what %s shows",
		jr.Shared, jr.Condition, tenantEndpoints(jr.Live), jr.Control)
}

// jobsStarve is the threat in seed-004's "bound background and job
// workloads separately from request-serving, so a queue drain cannot
// starve live traffic": in the mode whose jobs hold the request pools'
// permits like requests, under the condition whose burst of jobs drains,
// every live endpoint is harmed — its p99 rise over its rise under the
// control condition, or its error rate over its baseline's, beyond what
// P2 tolerates (a harm of at least 1).
func jobsStarve(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	jr := ex.JobsRoles()
	b.need([2]string{jr.Condition, jr.Shared}, [2]string{jr.Control, jr.Shared})
	drain, ctrl := b.cells[0], b.cells[1]
	b.drained(drain)
	for _, e := range jr.Live {
		b.check(fmt.Sprintf("/%s harm in %s, %s against %s: max(p99 rise / P2's limit, error rate / P2's limit)", e, jr.Shared, jr.Condition, jr.Control), "×",
			harmAgainst(drain, ctrl, e, ex.P2MaxP99RiseT, ex.P2MaxErrorRate), ">=", 1)
	}
	b.liveInfo(drain, ctrl, jr.Live)
	b.jobsInfo(drain)
	b.info(fmt.Sprintf("peak worker-pool use in %s, %s", jr.Shared, jr.Condition), "share", measure.EstimateOf(drain.vals(measure.PeakPoolShare)))
	return b.decide()
}

func jobsIsolatedText(s *Summary) string {
	jr := s.Expectations.JobsRoles()
	return fmt.Sprintf("%s: with the jobs on bounded workers of their own in %s, the live traffic (%s) stays at its baseline while the queue drains",
		jr.Condition, strings.Join(jr.Bounded, ", "), tenantEndpoints(jr.Live))
}

// jobsIsolated is the remedy: in each mode whose jobs run on a bounded set
// of workers of their own, under the condition, every live endpoint's p99
// rises over its baseline by at most P2's limit beyond its rise under the
// control condition, and its error rate stays within P2's tolerance of its
// baseline's. A run in which no job ran leaves nothing to judge: the
// verdict is INCONCLUSIVE.
func jobsIsolated(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	jr := ex.JobsRoles()
	for _, m := range jr.Bounded {
		b.need([2]string{jr.Condition, m}, [2]string{jr.Control, m})
	}
	for i, m := range jr.Bounded {
		drain, ctrl := b.cells[2*i], b.cells[2*i+1]
		b.drained(drain)
		for _, e := range jr.Live {
			rise := func(r measure.RunSummary) measure.Num { return r.P99RiseT(e) }
			b.check(fmt.Sprintf("/%s p99 rise in %s, %s − %s", e, m, jr.Condition, jr.Control), "T",
				measure.Bootstrap([][]float64{drain.vals(rise), ctrl.vals(rise)}, func(v []float64) float64 { return v[0] - v[1] }), "<=", ex.P2MaxP99RiseT)
			b.check(fmt.Sprintf("/%s fault error rate in %s, %s", e, m, jr.Condition), "share",
				endpointEstimate(drain, e, func(st measure.EndpointStats) measure.Num { return st.FaultErrorRate }), "<=", measure.MaxErrorRate(drain.baselineErrorRate(e), ex))
		}
	}
	for i := range jr.Bounded {
		drain, ctrl := b.cells[2*i], b.cells[2*i+1]
		b.liveInfo(drain, ctrl, jr.Live)
		b.jobsInfo(drain)
	}
	return b.decide()
}

// harmAgainst is endpoint ep's harm in cell c against the control cell:
// the larger of its p99 rise beyond the control's over maxRiseT and its
// error rate's rise over its baseline's over maxErr (measure.Harm), from
// the runs' means with a bootstrap interval.
func harmAgainst(c, ctrl *Cell, ep string, maxRiseT, maxErr float64) measure.Estimate {
	rise := func(r measure.RunSummary) measure.Num { return r.P99RiseT(ep) }
	errRate := func(r measure.RunSummary) measure.Num { return r.Endpoint(ep).FaultErrorRate }
	base := func(r measure.RunSummary) measure.Num { return measure.Num(r.Endpoint(ep).BaselineErrorRate()) }
	return measure.Bootstrap([][]float64{c.vals(rise), ctrl.vals(rise), c.vals(errRate), c.vals(base)}, func(v []float64) float64 {
		return max((v[0]-v[1])/maxRiseT, (v[2]-v[3])/maxErr)
	})
}

// drained makes the verdict INCONCLUSIVE when no job ran in the fault
// phase of any of cell c's runs: the burst was refused, or the service had
// no job queue, and there was no drain to starve anything.
func (b *builder) drained(c *Cell) {
	if len(c.UsedRuns) == 0 {
		return // missing or left out: need says so
	}
	for _, r := range c.UsedRuns {
		if j := measure.JobsOf(r); j != nil && j.StartedInFault > 0 {
			return
		}
	}
	b.undecidable = append(b.undecidable, fmt.Sprintf("no job ran in the fault phase of %s/%s: the service refused the burst or has no job queue (modes[i].jobs), "+
		"so nothing drained beside the live traffic", c.Condition, c.Mode))
}

// liveInfo adds, for information, each live endpoint's numbers in cell c
// (its condition's drain) and its control: its ok share and p99 while the
// queue drained, its fault-phase error rate and p99 against the control's.
func (b *builder) liveInfo(c, ctrl *Cell, live []string) {
	jobs := func(f func(j *measure.JobsRun) measure.Num) measure.Estimate {
		return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			if j := measure.JobsOf(r); j != nil {
				return f(j)
			}
			return measure.Undefined
		}))
	}
	for _, e := range live {
		in := fmt.Sprintf(" in %s, %s", c.Mode, c.Condition)
		b.info("/"+e+" ok share while the queue drained"+in, "share", jobs(func(j *measure.JobsRun) measure.Num { return j.LiveOf(e).OKShare }))
		b.info("/"+e+" p99 while the queue drained"+in, "ms", jobs(func(j *measure.JobsRun) measure.Num { return j.LiveOf(e).P99Ms }))
		b.info("/"+e+" fault error rate"+in, "share", endpointEstimate(c, e, func(st measure.EndpointStats) measure.Num { return st.FaultErrorRate }))
		b.info("/"+e+" fault p99"+in, "ms", endpointEstimate(c, e, func(st measure.EndpointStats) measure.Num { return st.FaultP99Ms }))
		b.info(fmt.Sprintf("/%s fault p99 in %s, %s", e, ctrl.Mode, ctrl.Condition), "ms", endpointEstimate(ctrl, e, func(st measure.EndpointStats) measure.Num { return st.FaultP99Ms }))
	}
}

// jobsInfo adds, for information, what the job queue did in cell c: the
// jobs it accepted and ran in the fault phase, how deep it got, how long it
// took to drain and how many workers were busy meanwhile.
func (b *builder) jobsInfo(c *Cell) {
	jobs := func(f func(j *measure.JobsRun) measure.Num) measure.Estimate {
		return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			if j := measure.JobsOf(r); j != nil {
				return f(j)
			}
			return measure.Undefined
		}))
	}
	in := fmt.Sprintf(" in %s, %s", c.Mode, c.Condition)
	b.info("job workers"+in, "workers", jobs(func(j *measure.JobsRun) measure.Num { return measure.Num(j.Workers) }))
	b.info("jobs enqueued"+in, "jobs", jobs(func(j *measure.JobsRun) measure.Num { return j.Enqueued }))
	b.info("jobs done in the fault phase"+in, "jobs", jobs(func(j *measure.JobsRun) measure.Num { return j.DoneInFault }))
	b.info("jobs done per second of the fault phase"+in, "per s", jobs(func(j *measure.JobsRun) measure.Num { return j.DonePerS }))
	b.info("jobs failed in the fault phase"+in, "jobs", jobs(func(j *measure.JobsRun) measure.Num { return j.FailedInFault }))
	b.info("peak queue depth"+in, "jobs", jobs(func(j *measure.JobsRun) measure.Num { return j.PeakDepth }))
	b.info("queue depth at the fault phase's end"+in, "jobs", jobs(func(j *measure.JobsRun) measure.Num { return j.DepthAtFaultEnd }))
	b.info("mean busy job workers while the queue drained"+in, "workers", jobs(func(j *measure.JobsRun) measure.Num { return j.MeanBusy }))
	b.info("drain time from the burst"+in, "s", jobs(func(j *measure.JobsRun) measure.Num { return j.DrainS }))
	left := jobs(func(j *measure.JobsRun) measure.Num { return j.Left })
	if left.Defined() && !math.IsNaN(left.Mean) && left.Mean > 0 {
		b.info("jobs left at the run's end"+in, "jobs", left)
	}
}
