package verdict

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// predictionDecisions are the hypothesis' own verdicts: P1, P2, FAILFAST,
// P3, P4 and EXHAUSTED, each on the cells of its roles (claims.Needs).
var predictionDecisions = []decision{
	{claims.P1, p1Text, p1},
	{claims.P2, p2Text, p2},
	{claims.FailFast, failFastText, failFast},
	{claims.P3, p3Text, p3},
	{claims.P4, p4Text, p4},
	{claims.Exhausted, exhaustedText, exhausted},
}

func p1Text(s *Summary) string {
	ex := s.Expectations
	return fmt.Sprintf("shared + %s: /%s's p99 and error rate climb to /%s's level within %s T of fault start",
		ex.Slow, ex.Victim, ex.Culprit, measure.FmtG(ex.P1MaxTimeToDegrade))
}

// p1 is the shared pool's harm: under the slow condition /victim degrades
// within the bound — judged over spans of at least measure.MinSpanResults
// of its results inside the fault phase, beyond both the expectations'
// thresholds and the victim's own noise in the control (healthy) cell of
// the same mode, so that neither one slow request nor a noisy machine can
// pass for the fault's harm.
func p1(b *builder, s *Summary) Verdict {
	cells, ex := s.Cells, s.Expectations
	c := b.cells[0]
	var control measure.DegradeControl
	if ctl := FindCell(cells, ex.Healthy, ex.SharedMode); ctl != nil && len(ctl.UsedRuns) > 0 {
		control = measure.ControlOf(ctl.UsedRuns)
		b.notes = append(b.notes, fmt.Sprintf("control %s/%s: /%s's worst span p99 %s× its baseline, error rate %s",
			ex.Healthy, ex.SharedMode, ex.Victim, words.FmtHuman(control.P99Ratio), words.FmtHuman(control.ErrorRate)))
	} else {
		b.notes = append(b.notes, "no control cell ("+ex.Healthy+"/"+ex.SharedMode+"): judged against the baseline alone")
	}
	times := c.vals(func(r measure.RunSummary) measure.Num { return measure.TimeToDegradeAgainst(r, ex, control) })
	deg := make([]float64, len(times))
	var within []float64
	for i, t := range times {
		if !math.IsNaN(t) {
			deg[i] = 1
			within = append(within, t)
		}
	}
	b.check("repeats in which /"+ex.Victim+" degraded", "share", measure.EstimateOf(deg), ">=", 1)
	b.check("time to degradation", "T", measure.EstimateOf(within), "<=", ex.P1MaxTimeToDegrade)
	b.info("/"+ex.Victim+" fault p99", "ms", c.VictimP99Ms)
	b.info("/"+ex.Culprit+" fault p99", "ms", c.CulpritP99Ms)
	b.info("/"+ex.Victim+" fault error rate", "share", c.VictimErrorRate)
	b.info("/"+ex.Culprit+" fault error rate", "share", c.CulpritErrorRate)
	b.notes = append(b.notes, fmt.Sprintf("degraded span (at least %d results, within the fault): p99 > %s× baseline or error rate > %s, and beyond the control's",
		measure.MinSpanResults, measure.FmtG(ex.DegradedP99Factor), measure.FmtG(ex.DegradedErrorRate)))
	return b.decide()
}

func p2Text(s *Summary) string {
	return fmt.Sprintf("bulkhead + %s: /%s stays at its baseline (p99 and error rate)", s.Expectations.Slow, s.Expectations.Victim)
}

// p2 is isolation: under bulkheads the victim stays at its baseline
// (measure.AtBaseline).
func p2(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	c := b.cells[0]
	b.victimP99AtBaseline(c, "")
	b.info("/"+ex.Victim+" fault p99 / baseline p99", "×", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		e := r.Endpoint(ex.Victim)
		return measure.Num(measure.Ratio(float64(e.FaultP99Ms), float64(e.BaselineP99Ms)))
	})))
	b.victimErrorsAtBaseline(c, "")
	return b.decide()
}

// failFast is the second half of P2 (docs/design.md §1), judged on its own: under
// bulkheads the culprit's failures are quick rejections, not timeouts. It
// depends on how results are classified, so it cannot be decided while
// more than MaxUnclassified of the culprit's results matched no rule.
func failFast(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	c := b.cells[0]
	share := measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FastRejectShare }))
	b.check("/"+ex.Culprit+" failures that were fast rejections", "share", share, ">=", ex.P2MinFastRejectShare)
	b.info("/"+ex.Culprit+" calls its bulkhead admitted that timed out at the dependency (left out)", "calls",
		measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).AdmittedTimeouts })))
	b.info("/"+ex.Culprit+" rejection p99", "ms", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).RejectedP99Ms })))
	unclassified := measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).UnclassifiedShare }))
	b.info("/"+ex.Culprit+" results no rule classified", "share", unclassified)
	if unclassified.Defined() && unclassified.Mean > MaxUnclassified {
		b.undecidable = append(b.undecidable, fmt.Sprintf("%.3g %% of /%s's results matched no classification rule (%s): add a rule for them",
			100*unclassified.Mean, ex.Culprit, unclassifiedStatuses(c.UsedRuns, ex.Culprit)))
	}
	t := measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.TimeoutMs }))
	b.notes = append(b.notes, fmt.Sprintf("fast = latency < %s·T = %s ms", measure.FmtG(ex.P2FastRejectMaxT), measure.FmtG(ex.P2FastRejectMaxT*t.Mean)))
	return b.decide()
}

func failFastText(s *Summary) string {
	ex := s.Expectations
	return fmt.Sprintf("bulkhead + %s: /%s's failures are fast rejections (503 from its bulkhead, < %s·T)",
		ex.Slow, ex.Culprit, measure.FmtG(ex.P2FastRejectMaxT))
}

// MaxUnclassified is the largest share of an endpoint's results that may
// match no classification rule before a verdict that depends on the
// classes becomes INCONCLUSIVE.
const MaxUnclassified = 0.01

// unclassifiedStatuses names the status codes of ep's unclassified results
// over runs, most frequent first: "429 ×2000, 418 ×3".
func unclassifiedStatuses(runs []measure.RunSummary, ep string) string {
	total := map[string]int64{}
	for _, r := range runs {
		for k, n := range r.Endpoint(ep).Unclassified {
			total[k] += n
		}
	}
	keys := slices.Sorted(maps.Keys(total))
	sort.SliceStable(keys, func(i, j int) bool { return total[keys[i]] > total[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, total[k]))
	}
	return strings.Join(parts, ", ")
}

func p3Text(s *Summary) string {
	return fmt.Sprintf("%s: /%s's successful throughput is lower with bulkheads than shared (the cost of isolation)",
		s.Expectations.Busy, s.Expectations.Culprit)
}

// p3 is the cost of isolation: under busy, bulkheads serve the culprit less
// than the shared pool.
func p3(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	sh, bh := b.cells[0], b.cells[1]
	cost := measure.Bootstrap([][]float64{
		sh.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }),
		bh.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }),
	}, func(m []float64) float64 { return 1 - measure.Ratio(m[1], m[0]) })
	b.check("throughput cost 1 − bulkhead/shared", "share", cost, ">=", ex.P3MinThroughputCost)
	b.info("/"+ex.Culprit+" ok throughput, shared", "req/s", sh.CulpritOKRate)
	b.info("/"+ex.Culprit+" ok throughput, bulkhead", "req/s", bh.CulpritOKRate)
	return b.decide()
}

func p4Text(s *Summary) string {
	ex := s.Expectations
	return fmt.Sprintf("the shared−bulkhead difference on /%s is much smaller when %s is %s than when it is %s",
		ex.Victim, culpritDependency(s.Cells, ex), ex.Failing, ex.Slow)
}

// p4 compares the bulkhead's benefit to the victim when the culprit's
// dependency fails fast with when it is slow, on the cells slow/shared,
// slow/bulkhead, failing/shared and failing/bulkhead.
func p4(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	p99 := func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Victim).FaultP99Ms }
	errR := func(r measure.RunSummary) measure.Num {
		return measure.Num(100 * float64(r.Endpoint(ex.Victim).FaultErrorRate))
	}
	groups := func(f func(measure.RunSummary) measure.Num) [][]float64 {
		g := make([][]float64, 4)
		for i, c := range b.cells {
			g[i] = c.vals(f)
		}
		return g
	}
	diff := func(f func(measure.RunSummary) measure.Num, a, c int) measure.Estimate {
		if e := measure.Bootstrap(groups(f), func(m []float64) float64 { return m[a] - m[c] }); e.Defined() {
			return e
		}
		// A condition without valid runs leaves the other's difference
		// computable on its own two cells.
		g := groups(f)
		return measure.Bootstrap([][]float64{g[a], g[c]}, func(m []float64) float64 { return m[0] - m[1] })
	}
	rat := func(f func(measure.RunSummary) measure.Num) measure.Estimate {
		return measure.Bootstrap(groups(f), func(m []float64) float64 {
			if m[0]-m[1] <= 0 {
				return math.NaN()
			}
			return (m[2] - m[3]) / (m[0] - m[1])
		})
	}
	slowP, failP := diff(p99, 0, 1), diff(p99, 2, 3)
	slowE, failE := diff(errR, 0, 1), diff(errR, 2, 3)
	b.info("p99 difference (shared − bulkhead) when "+ex.Slow, "ms", slowP)
	b.info("p99 difference (shared − bulkhead) when "+ex.Failing, "ms", failP)
	b.info("error-rate difference when "+ex.Slow, "pp", slowE)
	b.info("error-rate difference when "+ex.Failing, "pp", failE)
	// The claim is judged on the dimension(s) in which the bulkhead made a
	// difference when the dependency was slow: latency for a service that
	// makes callers wait, errors for one that fails fast. A dimension shows
	// a difference when it exceeds a floor: P2's p99 tolerance for latency,
	// but a degraded window's error rate (degraded_error_rate, not P2's
	// tighter tolerance of measure.AtBaseline) for errors.
	t := measure.EstimateOf(b.cells[0].vals(func(r measure.RunSummary) measure.Num { return r.TimeoutMs }))
	pFloor, eFloor := ex.P2MaxP99RiseT*t.Mean, 100*ex.DegradedErrorRate
	shows := func(e measure.Estimate, floor float64) bool { return e.Defined() && floor > 0 && e.Mean >= floor }
	latency, errs := shows(slowP, pFloor), shows(slowE, eFloor)
	if !latency && !errs {
		// No dimension shows a difference: the bulkhead did nothing when
		// slow, so the premise of the comparison fails.
		largest := measure.Bootstrap(append(groups(p99), groups(errR)...), func(m []float64) float64 {
			return math.Max((m[0]-m[1])/pFloor, (m[4]-m[5])/eFloor)
		})
		b.check("largest "+ex.Slow+" difference in units of its floor ("+measure.FmtG(pFloor)+" ms p99, "+measure.FmtG(eFloor)+" pp errors)", "×",
			largest, ">=", 1)
	}
	if latency {
		b.check("p99 difference ratio "+ex.Failing+"/"+ex.Slow, "×", rat(p99), "<=", ex.P4MaxRatio)
	} else {
		b.notes = append(b.notes, fmt.Sprintf("p99 not deciding: the %s difference is below %s ms (%s T)", ex.Slow, measure.FmtG(pFloor), measure.FmtG(ex.P2MaxP99RiseT)))
	}
	if errs {
		b.check("error-rate difference ratio "+ex.Failing+"/"+ex.Slow, "×", rat(errR), "<=", ex.P4MaxRatio)
	} else {
		b.notes = append(b.notes, fmt.Sprintf("error rate not deciding: the %s difference is below %s pp", ex.Slow, measure.FmtG(eFloor)))
	}
	return b.decide()
}

func exhaustedText(s *Summary) string {
	return fmt.Sprintf("under %s the first bounded resource to run out is the pool (not connections, CPU or goroutines/memory)", s.Expectations.Slow)
}

// exhausted: under the slow condition the first bounded resource to run
// out is the pool (measure.PoolFirstRule): the pool the service exports,
// a limit inferred from the proxies that stands for one, or the connection
// pool of a service whose bulkhead it is. A run where that cannot be told
// is left out of the share and makes the verdict INCONCLUSIVE, naming it.
func exhausted(b *builder, s *Summary) Verdict {
	var first, unknown []string
	for _, c := range b.cells {
		var v []float64
		for _, r := range c.UsedRuns {
			first = append(first, r.ID+": "+r.Exhausted.Resource)
			switch r.Exhausted.PoolFirst {
			case measure.PoolFirstYes:
				v = append(v, 1)
			case measure.PoolFirstUnknown:
				unknown = append(unknown, r.ID+": "+r.Exhausted.PoolFirstWhy)
			default:
				v = append(v, 0)
			}
		}
		if len(v) == 0 && len(c.UsedRuns) > 0 {
			continue // every run unknown: said below
		}
		b.check("runs of "+c.Mode+" where the pool ran out first", "share", measure.EstimateOf(v), ">=", 1)
	}
	if len(unknown) > 0 {
		b.unsure = append(b.unsure, "whether the pool ran out first cannot be told in "+strings.Join(unknown, "; "))
	}
	if len(first) > 0 {
		b.notes = append(b.notes, strings.Join(first, ", "))
	}
	return b.decide()
}

// culpritDependency names the culprit's dependency as the runs know it
// ("A"), else "/culprit's dependency".
func culpritDependency(cells []Cell, ex rundata.Expectations) string {
	for _, c := range cells {
		if d := measure.DependencyOf(c.UsedRuns, ex.Culprit); d != "" {
			return d
		}
	}
	return "/" + ex.Culprit + "'s dependency"
}
