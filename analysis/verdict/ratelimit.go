package verdict

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// rateLimitDecisions are the rate-limit claim, judged when
// Expectations.RateLimit names its mode, on the cells of its roles
// (claims.Needs): the slow condition in the rate-limited mode and in the
// bulkhead mode.
var rateLimitDecisions = []decision{
	{claims.RateLimitNotBulkhead, rateLimitText, rateLimitNotBulkhead},
}

func rateLimitText(s *Summary) string {
	ex := s.Expectations
	rl := ex.RateLimit.WithDefaults(ex.Slow)
	return fmt.Sprintf("%s: a rate limiter sized to the load (%s) refuses (almost) none of /%s's calls while /%s degrades, and bulkheads (%s) keep /%s at its baseline — "+
		"a rate limit bounds calls per second, not calls in flight", rl.Condition, rl.Mode, ex.Culprit, ex.Victim, ex.BulkheadMode, ex.Victim)
}

// rateLimitNotBulkhead is seed-004's "bulkheads are just rate limiting"
// refuted: under the slow condition, in the rate-limited mode, the
// culprit's rate limiter refuses at most MaxLimitedShare of its calls
// (measured: the results of class limited) while the victim degrades (P1's
// rule: a span of its results past degraded_p99_factor × its baseline p99
// or degraded_error_rate, beyond its noise in the rate-limited mode's
// healthy cell when the matrix has one), and in the bulkhead mode the
// victim stays at its baseline (P2's thresholds). The rate limiter's calls
// in flight, as its proxy saw them, are shown beside the bulkhead's: the
// slower dependency multiplies them at the same rate.
func rateLimitNotBulkhead(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	rl := ex.RateLimit.WithDefaults(ex.Slow)
	limited, bh := b.cells[0], b.cells[1]
	num := func(f func(*measure.RateLimitRun) measure.Num) func(measure.RunSummary) measure.Num {
		return func(r measure.RunSummary) measure.Num {
			if r.RateLimit == nil {
				return measure.Undefined
			}
			return f(r.RateLimit)
		}
	}
	est := func(c *Cell, f func(*measure.RateLimitRun) measure.Num) measure.Estimate {
		return measure.EstimateOf(c.vals(num(f)))
	}
	b.check(fmt.Sprintf("/%s results its rate limiter refused (class limited), %s", ex.Culprit, rl.Mode), "share",
		est(limited, func(r *measure.RateLimitRun) measure.Num { return r.LimitedShare }), "<=", rl.MaxLimitedShare)

	var control measure.DegradeControl
	if ctl := FindCell(s.Cells, ex.Healthy, rl.Mode); ctl != nil && len(ctl.UsedRuns) > 0 && ex.Healthy != rl.Condition {
		control = measure.ControlOf(ctl.UsedRuns)
		b.notes = append(b.notes, fmt.Sprintf("control %s/%s: /%s's worst span p99 %s× its baseline, error rate %s",
			ex.Healthy, rl.Mode, ex.Victim, words.FmtHuman(control.P99Ratio), words.FmtHuman(control.ErrorRate)))
	}
	times := limited.vals(func(r measure.RunSummary) measure.Num { return measure.TimeToDegradeAgainst(r, ex, control) })
	deg := make([]float64, len(times))
	for i, t := range times {
		deg[i] = float64(share(true, !math.IsNaN(t))) // a time: it degraded
	}
	b.check(fmt.Sprintf("repeats in which /%s degraded, %s", ex.Victim, rl.Mode), "share", measure.EstimateOf(deg), ">=", 1)
	b.victimP99AtBaseline(bh, ", "+ex.BulkheadMode)
	b.victimErrorsAtBaseline(bh, ", "+ex.BulkheadMode)

	b.info(fmt.Sprintf("/%s calls its rate limiter refused, as the service counted them, %s", ex.Culprit, rl.Mode), "calls",
		est(limited, func(r *measure.RateLimitRun) measure.Num { return r.LimiterRejected }))
	b.info(fmt.Sprintf("/%s's rate limit, %s", ex.Culprit, rl.Mode), "req/s", est(limited, func(r *measure.RateLimitRun) measure.Num { return r.LimitPerS }))
	b.info(fmt.Sprintf("/%s offered in the fault", ex.Culprit), "req/s", est(limited, func(r *measure.RateLimitRun) measure.Num { return r.OfferedPerS }))
	for _, c := range []*Cell{limited, bh} {
		b.info(fmt.Sprintf("calls in flight to /%s's dependency, baseline, %s", ex.Culprit, c.Mode), "calls",
			est(c, func(r *measure.RateLimitRun) measure.Num { return r.InflightBaseline }))
		b.info(fmt.Sprintf("calls in flight to /%s's dependency, %s, %s", ex.Culprit, c.Condition, c.Mode), "calls",
			est(c, func(r *measure.RateLimitRun) measure.Num { return r.InflightFault }))
	}
	for _, c := range []*Cell{limited, bh} {
		b.info(fmt.Sprintf("/%s fault p99, %s", ex.Victim, c.Mode), "ms", c.VictimP99Ms)
		b.info(fmt.Sprintf("/%s fault error rate, %s", ex.Victim, c.Mode), "share", c.VictimErrorRate)
	}
	exhausted := map[string]int{}
	for _, r := range limited.UsedRuns {
		exhausted[r.Exhausted.Resource]++
	}
	if len(exhausted) > 0 {
		b.notes = append(b.notes, fmt.Sprintf("exhausted first in %s: %s", rl.Mode, countsText(exhausted)))
	}
	if len(limited.UsedRuns) > 0 && limited.UsedRuns[0].RateLimit != nil && limited.UsedRuns[0].RateLimit.InflightSource != "" {
		b.notes = append(b.notes, "calls in flight as the "+limited.UsedRuns[0].RateLimit.InflightSource+" counted them")
	}
	b.notes = append(b.notes, fmt.Sprintf("degraded span (at least %d results, within the fault): p99 > %s× baseline or error rate > %s",
		measure.MinSpanResults, measure.FmtG(ex.DegradedP99Factor), measure.FmtG(ex.DegradedErrorRate)))
	return b.decide()
}

// countsText renders counts by name, "connections ×3, pool ×1", names in
// order.
func countsText(m map[string]int) string {
	out := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if out != "" {
			out += ", "
		}
		name := k
		if name == "" {
			name = "none"
		}
		out += fmt.Sprintf("%s ×%d", name, m[k])
	}
	return out
}
