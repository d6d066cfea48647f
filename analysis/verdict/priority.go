package verdict

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// priorityDecisions are the priority claim, judged when
// Expectations.Priority names its condition and modes.
var priorityDecisions = []decision{
	{claims.PriorityReserved, priorityReservedText, priorityReserved},
}

func priorityReservedText(s *Summary) string {
	ex := s.Expectations
	pr := ex.Priority
	return fmt.Sprintf("%s: with permits of the pool reserved for the critical class (%s), /%s (critical) stays at its baseline and /%s's (sheddable) excess is refused at once; "+
		"in the same pool without a reservation (%s) /%s is refused with the rest. The cost: reserved permits idle while /%s is refused",
		pr.Condition, pr.Reserved, ex.Victim, ex.Culprit, pr.Unreserved, ex.Victim, ex.Culprit)
}

// priorityReserved is seed-004's "isolate by criticality, not only by
// dependency — checkout traffic and recommendation traffic can be separate
// worker sets even in one service": when the sheddable endpoint's load
// surges, the critical endpoint, drawing from the same pool, stays at its
// baseline (P2's thresholds) where the pool reserves permits for its class,
// and the sheddable calls beyond their share fail fast; where the same pool
// reserves none, the critical endpoint is hurt (the surge does threaten
// it). Its cost, "reserved capacity is idle capacity", is measured: the
// reserved permits the critical class left idle, against Little's law.
func priorityReserved(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	pr := ex.Priority
	b.need([2]string{pr.Condition, pr.Reserved}, [2]string{pr.Condition, pr.Unreserved})
	res, unres := b.cells[0], b.cells[1]
	in := " in " + pr.Reserved
	b.victimP99AtBaseline(res, in)
	b.victimErrorsAtBaseline(res, in)
	b.check("/"+ex.Culprit+" failures that were fast rejections"+in, "share",
		measure.EstimateOf(res.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FastRejectShare })), ">=", ex.P2MinFastRejectShare)
	b.check("/"+ex.Victim+" harm in "+pr.Unreserved+": max(p99 rise / P2's limit, error rate / P2's limit)", "×",
		measure.EstimateOf(unres.vals(func(r measure.RunSummary) measure.Num { return r.Harm(ex.Victim, ex) })), ">=", 1)
	b.info("/"+ex.Victim+" fault error rate in "+pr.Unreserved, "share", unres.VictimErrorRate)

	prio := func(c *Cell, g func(p measure.PriorityRun) measure.Num) measure.Estimate {
		return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			if r.Priority == nil {
				return measure.Undefined
			}
			return g(*r.Priority)
		}))
	}
	b.info("permits held for /"+ex.Victim+in, "permits", prio(res, func(p measure.PriorityRun) measure.Num { return p.Reserved }))
	b.info("/"+ex.Victim+"'s demand by Little's law (rate × call time)"+in, "permits", prio(res, func(p measure.PriorityRun) measure.Num { return p.CriticalDemand }))
	b.info("/"+ex.Victim+"'s calls in flight"+in, "calls", prio(res, func(p measure.PriorityRun) measure.Num { return p.CriticalInFlight }))
	b.info("cost: held permits left idle"+in, "permits", prio(res, func(p measure.PriorityRun) measure.Num { return p.IdleReserved }))
	b.info("cost: held permits left idle, predicted (held − demand)"+in, "permits", prio(res, func(p measure.PriorityRun) measure.Num { return p.PredictedIdle }))
	b.info("cost: held permits left idle, share of the pool"+in, "share", prio(res, func(p measure.PriorityRun) measure.Num {
		if p.Size <= 0 {
			return measure.Undefined
		}
		return p.IdleReserved / measure.Num(p.Size)
	}))
	for _, c := range []*Cell{res, unres} {
		b.info("/"+ex.Culprit+" refused in "+c.Mode, "req/s", prio(c, func(p measure.PriorityRun) measure.Num { return p.SheddableRejectedPerS }))
	}
	for _, c := range []*Cell{res, unres} {
		b.info("/"+ex.Culprit+" successes in "+c.Mode, "req/s", c.CulpritOKRate)
	}
	return b.decide()
}
