package verdict

import (
	"fmt"
	"math"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// connsDecisions are the connection-pool claims, judged when
// Expectations.Conns names their runs.
var connsDecisions = []decision{
	{claims.ConnsNoWall, connsNoWallText, connsNoWall},
	{claims.ConnsSized, connsSizedText, connsSized},
}

func connsNoWallText(s *Summary) string {
	ex := s.Expectations
	cr := ex.Conns
	return fmt.Sprintf("%s: with bulkheads but one connection pool (%s) /%s is hurt and the connections run out first; with a connection pool per dependency (%s) it is not",
		cr.Condition, cr.NoWall, ex.Victim, cr.Walled)
}

// connsNoWall is seed-004's "partitioning the worker pool but not the
// connection pool — the compartment with no wall is the one that floods":
// with bulkheads and one connection pool for both dependencies, the victim
// is hurt and the connections run out first; with a connection pool per
// dependency it is not hurt.
func connsNoWall(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	cr := ex.Conns.WithDefaults()
	b.need([2]string{cr.Condition, cr.NoWall}, [2]string{cr.Condition, cr.Walled})
	noWall, walled := b.cells[0], b.cells[1]
	b.check("/"+ex.Victim+" harm in "+cr.NoWall+": max(p99 rise / P2's limit, error rate / P2's limit)", "×",
		measure.EstimateOf(noWall.vals(func(r measure.RunSummary) measure.Num { return r.Harm(ex.Victim, ex) })), ">=", 1)
	b.check("runs of "+cr.NoWall+" where the connections ran out first", "share", measure.EstimateOf(noWall.vals(func(r measure.RunSummary) measure.Num {
		return share(r.Exhausted.Resource != measure.ResourceNone, r.Exhausted.Resource == measure.ResourceConnections)
	})), ">=", 1)
	b.victimP99AtBaseline(walled, " in "+cr.Walled)
	b.victimErrorsAtBaseline(walled, " in "+cr.Walled)
	for _, c := range []*Cell{noWall, walled} {
		b.info("/"+ex.Victim+" mean connection wait in "+c.Mode, "ms", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.ConnWait(ex.Victim).MeanWaitMs })))
	}
	for _, c := range []*Cell{noWall, walled} {
		b.info("/"+ex.Victim+" mean connection hold (its calls' own time) in "+c.Mode+", fault − baseline", "ms", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			w := r.ConnWait(ex.Victim)
			return w.MeanHoldMs - w.BaselineHoldMs
		})))
	}
	b.info("/"+ex.Victim+" fault error rate in "+cr.NoWall, "share", noWall.VictimErrorRate)
	return b.decide()
}

func connsSizedText(s *Summary) string {
	ex := s.Expectations
	cr := ex.Conns
	return fmt.Sprintf("%s: /%s's calls do not wait for a connection when its bulkhead is ≤ 0.8 × its connections (%s), and do when it is above them (%s)",
		cr.Condition, ex.Culprit, cr.Sized, cr.Over)
}

// connsSized is seed-002's rule: a bulkhead at ≈ 0.8 × the connections of
// its dependency trips before they run out, so the culprit's calls never
// wait for a connection; one above the connection count leaves the
// connection pool as the wall, and calls wait for it (and time out there
// instead of being rejected at once).
func connsSized(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	cr := ex.Conns.WithDefaults()
	b.need([2]string{cr.Condition, cr.Sized}, [2]string{cr.Condition, cr.Over})
	sized, over := b.cells[0], b.cells[1]
	waitT := func(r measure.RunSummary) measure.Num {
		w := r.ConnWait(ex.Culprit)
		if math.IsNaN(float64(r.TimeoutMs)) || r.TimeoutMs <= 0 {
			return measure.Undefined
		}
		return w.MeanWaitMs / r.TimeoutMs
	}
	b.check("/"+ex.Culprit+" mean connection wait in "+sized.Mode, "T", measure.EstimateOf(sized.vals(waitT)), "<=", cr.SizedMaxWaitT)
	b.check("/"+ex.Culprit+" mean connection wait in "+over.Mode, "T", measure.EstimateOf(over.vals(waitT)), ">=", cr.OverMinWaitT)
	for _, c := range []*Cell{sized, over} {
		b.info("/"+ex.Culprit+" calls that timed out waiting for a connection in "+c.Mode, "calls", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.ConnWait(ex.Culprit).Timeouts })))
		b.info("/"+ex.Culprit+" fast-reject share of failures in "+c.Mode, "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FastRejectShare })))
	}
	return b.decide()
}
