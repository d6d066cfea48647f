package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// policyDecisions are the policy claims, each judged when
// Expectations.Policy names its runs.
var policyDecisions = []decision{
	{claims.BreakerLate, breakerLateText, breakerLate},
	{claims.BreakerIsolated, func(s *Summary) string {
		br := s.Expectations.Policy.Breaker
		return fmt.Sprintf("%s + %s: /%s stays at its baseline: the breaker opens behind a wall", br.Bulkhead, br.Condition, s.Expectations.Victim)
	}, func(b *builder, s *Summary) Verdict {
		br := s.Expectations.Policy.Breaker
		return victimAtBaseline(b, s.Expectations, br.Condition, br.Bulkhead, false)
	}},
	{claims.AdaptiveIsolates, func(s *Summary) string {
		ex := s.Expectations
		return fmt.Sprintf("%s + %s: an adaptive limit per dependency keeps /%s at its baseline, like bulkheads (P2)", ex.Policy.Adaptive.Mode, ex.Slow, ex.Victim)
	}, func(b *builder, s *Summary) Verdict {
		ex := s.Expectations
		return victimAtBaseline(b, ex, ex.Slow, ex.Policy.Adaptive.Mode, true)
	}},
	{claims.AdaptiveCost, adaptiveCostText, adaptiveCost},
	{claims.RetryAmplifies, retryAmplifiesText, retryAmplifies},
	{claims.RetryHurts, retryHurtsText, retryHurts},
	{claims.RetryContained, retryContainedText, retryContained},
}

// share is 1 when ok, 0 when not, NaN when the run cannot tell.
func share(defined, ok bool) measure.Num {
	switch {
	case !defined:
		return measure.Undefined
	case ok:
		return 1
	}
	return 0
}

func breakerLateText(s *Summary) string {
	ex := s.Expectations
	br := ex.Policy.Breaker
	return fmt.Sprintf("%s + %s: the breaker on /%s opens only after the pool ran out, and /%s is hurt before it opens",
		br.Shared, br.Condition, ex.Culprit, ex.Victim)
}

// breakerLate is seed-004's "a breaker eventually opens, but only after the
// pool has already drained, so the fast failure arrives after the damage".
func breakerLate(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	br := ex.Policy.Breaker
	b.need([2]string{br.Condition, br.Shared})
	c := b.cells[0]
	pol := func(r measure.RunSummary) measure.PolicyRun {
		if r.Policy == nil {
			return measure.PolicyRun{BreakerOpenS: measure.Undefined, BreakerOpenPredictedS: measure.Undefined, PoolExhaustedS: measure.Undefined, VictimDegradedS: measure.Undefined}
		}
		return *r.Policy
	}
	b.check("repeats in which the breaker opened", "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		return share(true, !math.IsNaN(float64(pol(r).BreakerOpenS)))
	})), ">=", 1)
	b.check("repeats in which the pool ran out before the breaker opened", "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		p := pol(r)
		exh, open := float64(p.PoolExhaustedS), float64(p.BreakerOpenS)
		return share(!math.IsNaN(open), !math.IsNaN(exh) && exh < open)
	})), ">=", 1)
	b.check("repeats in which /"+ex.Victim+" degraded before the breaker opened", "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		p := pol(r)
		deg, open := float64(p.VictimDegradedS), float64(p.BreakerOpenS)
		return share(!math.IsNaN(open), !math.IsNaN(deg) && deg < open)
	})), ">=", 1)
	b.info("time to open", "s", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return pol(r).BreakerOpenS })))
	b.info("time to open, closed form (— when there is none)", "s", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return pol(r).BreakerOpenPredictedS })))
	b.info("time to pool exhaustion", "s", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return pol(r).PoolExhaustedS })))
	b.info("time to /"+ex.Victim+" degraded", "s", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return pol(r).VictimDegradedS })))
	b.info("/"+ex.Victim+" fault error rate", "share", c.VictimErrorRate)
	b.notes = append(b.notes, "a breaker learns of a failure only when a call ends: a timeout after T, a rejection once the pool and its queue are full")
	return b.decide()
}

// victimAtBaseline is P2's test on another cell: the victim stays at its
// baseline (measure.AtBaseline).
func victimAtBaseline(b *builder, ex rundata.Expectations, cond, mode string, limiter bool) Verdict {
	b.need([2]string{cond, mode})
	c := b.cells[0]
	b.victimP99AtBaseline(c, "")
	b.victimErrorsAtBaseline(c, "")
	b.info("/"+ex.Culprit+" fault error rate", "share", c.CulpritErrorRate)
	if limiter {
		b.info("/"+ex.Culprit+" adaptive limit, fault-phase minimum", "permits", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			if r.Policy == nil {
				return measure.Undefined
			}
			return r.Policy.LimiterMinLimit
		})))
	}
	return b.decide()
}

func adaptiveCostText(s *Summary) string {
	ex := s.Expectations
	return fmt.Sprintf("%s: /%s's successful throughput is higher with %s than with bulkheads (isolation costs less)",
		ex.Busy, ex.Culprit, ex.Policy.Adaptive.Mode)
}

// adaptiveCost is P3 for the adaptive arm: under busy it serves the culprit
// more than fixed bulkheads do (it pays less for isolation).
func adaptiveCost(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	mode := ex.Policy.Adaptive.Mode
	b.need([2]string{ex.Busy, ex.BulkheadMode}, [2]string{ex.Busy, mode})
	bh, ad := b.cells[0], b.cells[1]
	gain := measure.Bootstrap([][]float64{
		bh.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }),
		ad.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }),
	}, func(m []float64) float64 { return measure.Ratio(m[1], m[0]) - 1 })
	b.check("throughput gain "+mode+"/bulkhead − 1", "share", gain, ">=", ex.P3MinThroughputCost)
	b.info("/"+ex.Culprit+" ok throughput, bulkhead", "req/s", bh.CulpritOKRate)
	b.info("/"+ex.Culprit+" ok throughput, "+mode, "req/s", ad.CulpritOKRate)
	return b.decide()
}

// retryAmplification reads endpoint ep's amplification (attempts per
// request) of a run.
func retryAmplification(ep string) func(measure.RunSummary) measure.Num {
	return func(r measure.RunSummary) measure.Num {
		if st := r.Endpoint(ep).Retry; st != nil {
			return st.Amplification
		}
		return measure.Undefined
	}
}

func retryAmplifiesText(s *Summary) string {
	ex := s.Expectations
	rr := ex.Policy.Retry
	return fmt.Sprintf("%s + %s: clients that retry failures multiply /%s's load by 1 + r + … + r^(n−1) for a rejection share r",
		rr.Storm, rr.Condition, ex.Culprit)
}

// retryAmplifies is seed-004's "rejections treated as generic errors and
// retried, so the rejected load comes straight back": the storm's clients
// multiply the culprit's load as 1 + r + … + r^(n−1) predicts.
func retryAmplifies(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	rr := ex.Policy.Retry.WithDefaults()
	b.need([2]string{rr.Condition, rr.Storm})
	c := b.cells[0]
	b.check("/"+ex.Culprit+" amplification (attempts per request)", "×", measure.EstimateOf(c.vals(retryAmplification(ex.Culprit))), ">=", rr.MinAmplification)
	b.check("|measured / predicted − 1|", "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		st := r.Endpoint(ex.Culprit).Retry
		if st == nil {
			return measure.Undefined
		}
		return measure.Num(math.Abs(measure.Ratio(float64(st.Amplification), float64(st.Predicted)) - 1))
	})), "<=", rr.Tolerance)
	b.info("/"+ex.Culprit+" predicted 1 + r + … + r^(n−1)", "×", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		if st := r.Endpoint(ex.Culprit).Retry; st != nil {
			return st.Predicted
		}
		return measure.Undefined
	})))
	b.info("/"+ex.Culprit+" rejection share r (per attempt)", "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		if st := r.Endpoint(ex.Culprit).Retry; st != nil {
			return st.RetryableShare
		}
		return measure.Undefined
	})))
	b.info("/"+ex.Victim+" amplification", "×", measure.EstimateOf(c.vals(retryAmplification(ex.Victim))))
	b.notes = append(b.notes, "the prediction assumes each attempt fails independently with the measured share r; rejections that come in bursts break it")
	return b.decide()
}

func retryHurtsText(s *Summary) string {
	ex := s.Expectations
	rr := ex.Policy.Retry
	return fmt.Sprintf("%s: /%s is worse with retrying clients (%s) than without (%s): the rejected load comes straight back",
		rr.Condition, ex.Victim, rr.Storm, rr.Control)
}

// retryHurts: the retrying clients hurt the victim more than the control's
// clients, which do not retry.
func retryHurts(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	rr := ex.Policy.Retry.WithDefaults()
	b.need([2]string{rr.Condition, rr.Control}, [2]string{rr.Condition, rr.Storm})
	ctl, st := b.cells[0], b.cells[1]
	p99 := func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Victim).FaultP99Ms }
	errs := func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Victim).FaultErrorRate }
	tms := func(r measure.RunSummary) measure.Num { return r.TimeoutMs }
	harm := measure.Bootstrap([][]float64{ctl.vals(p99), st.vals(p99), ctl.vals(errs), st.vals(errs), st.vals(tms)}, func(m []float64) float64 {
		return max((m[1]-m[0])/m[4]/ex.P2MaxP99RiseT, (m[3]-m[2])/ex.DegradedErrorRate)
	})
	b.check(fmt.Sprintf("/%s harm: max(Δp99 / %.2gT, Δerror rate / %.2g)", ex.Victim, ex.P2MaxP99RiseT, ex.DegradedErrorRate), "×", harm, ">=", 1)
	b.info("/"+ex.Victim+" fault p99, "+rr.Control, "ms", ctl.VictimP99Ms)
	b.info("/"+ex.Victim+" fault p99, "+rr.Storm, "ms", st.VictimP99Ms)
	b.info("/"+ex.Victim+" fault error rate, "+rr.Control, "share", ctl.VictimErrorRate)
	b.info("/"+ex.Victim+" fault error rate, "+rr.Storm, "share", st.VictimErrorRate)
	return b.decide()
}

func retryContainedText(s *Summary) string {
	ex := s.Expectations
	rr := ex.Policy.Retry
	return fmt.Sprintf("%s: with %s, retrying clients keep /%s's amplification near 1",
		rr.Condition, strings.Join(rr.Contained, ", "), ex.Culprit)
}

// retryContained: what stops the storm — the clients of the contained modes
// (a budget, or Retry-After honoured) keep the amplification near 1.
func retryContained(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	rr := ex.Policy.Retry.WithDefaults()
	for _, m := range rr.Contained {
		b.need([2]string{rr.Condition, m})
	}
	for i, m := range rr.Contained {
		c := b.cells[i]
		b.check(m+": /"+ex.Culprit+" amplification", "×", measure.EstimateOf(c.vals(retryAmplification(ex.Culprit))), "<=", rr.ContainedMax)
		b.info(m+": /"+ex.Culprit+" share of requests whose retry was refused", "share", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			if st := r.Endpoint(ex.Culprit).Retry; st != nil {
				return st.RefusedShare
			}
			return measure.Undefined
		})))
		b.info(m+": /"+ex.Victim+" fault error rate", "share", c.VictimErrorRate)
	}
	return b.decide()
}
