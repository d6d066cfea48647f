package verdict

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// fleetDecisions are the fleet claims, judged when Expectations.Fleet
// names the fleets compared.
var fleetDecisions = []decision{
	{claims.FleetMultiplies, fleetMultipliesText, fleetMultiplies},
	{claims.FleetBudget, fleetBudgetText, fleetBudget},
}

// fleetCell is a cell of a fleet and its size.
type fleetCell struct {
	cell  *Cell
	n     int     // instances
	nl    float64 // N·L
	c     float64 // capacity, NaN: unlimited
	k, w  float64 // predicted concurrency and call time (ms)
	t     float64 // T, ms
	label string
}

// fleetCells are the cells of condition cond whose mode is one of modes or
// a swept variant of one, smallest fleet first.
func fleetCells(cells []Cell, cond string, modes []string) []fleetCell {
	var out []fleetCell
	for i := range cells {
		c := &cells[i]
		rs := append(append([]measure.RunSummary(nil), c.UsedRuns...), c.excluded...)
		if c.Condition != cond || len(rs) == 0 || rs[0].Fleet == nil {
			continue
		}
		origin := c.Mode
		if sw := rs[0].Sweep; sw != nil {
			origin = sw.Mode
		}
		if !slices.Contains(modes, c.Mode) && !slices.Contains(modes, origin) {
			continue
		}
		f := rs[0].Fleet
		mean := func(g func(measure.FleetRun) measure.Num) float64 { return fleetMean(c, g) }
		out = append(out, fleetCell{cell: c, n: f.Instances, nl: float64(f.FleetLimit), c: float64(f.Capacity),
			k: mean(func(f measure.FleetRun) measure.Num { return f.PredictedConcurrency }), w: mean(func(f measure.FleetRun) measure.Num { return f.PredictedWaitMs }),
			t: float64(rs[0].TimeoutMs), label: fmt.Sprintf("N=%d (%s)", f.Instances, c.Mode)})
	}
	slices.SortStableFunc(out, func(a, b fleetCell) int { return a.n - b.n })
	return out
}

// fleetMean is the mean of g over the cell's usable runs, else over all its
// runs (a prediction does not need a valid run).
func fleetMean(c *Cell, g func(measure.FleetRun) measure.Num) float64 {
	rs := c.UsedRuns
	if len(rs) == 0 {
		rs = c.excluded
	}
	var sum float64
	n := 0
	for _, r := range rs {
		if r.Fleet != nil && !math.IsNaN(float64(g(*r.Fleet))) {
			sum += float64(g(*r.Fleet))
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// fleetVals estimates g over the cell's usable runs.
func fleetVals(c *Cell, g func(measure.FleetRun) float64) measure.Estimate {
	return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
		if r.Fleet == nil {
			return measure.Undefined
		}
		return measure.Num(g(*r.Fleet))
	}))
}

func fleetNeeds(fcs []fleetCell, cond, fallback string) [][2]string {
	var need [][2]string
	for _, fc := range fcs {
		need = append(need, [2]string{cond, fc.cell.Mode})
	}
	if len(need) == 0 {
		need = append(need, [2]string{cond, fallback})
	}
	return need
}

func fleetMultipliesText(s *Summary) string {
	ex := s.Expectations
	return fmt.Sprintf("%s: N instances with a bulkhead of L each put N·L calls on /%s's dependency; "+
		"where N·L exceeds its capacity C it queues (call time N·L·s/C) and past T fails, although every instance is protected",
		ex.Fleet.Condition, ex.Culprit)
}

// fleetMultiplies is seed-004's "per-instance limits on a large fleet, so
// the effective concurrency against the dependency is the limit multiplied
// by instance count": in every fleet the calls on the dependency are
// Little's law's min(N·L, λ·W); they grow with N as N·L; where N·L > C the
// dependency queues (W = N·L·s/C) and, past T, fails, while where N·L ≤ C
// it does not — and the largest fleet did push it past its capacity.
func fleetMultiplies(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	roles := ex.Fleet.WithDefaults()
	tol := roles.Tolerance
	fcs := fleetCells(s.Cells, roles.Condition, roles.Modes)
	b.need(fleetNeeds(fcs, roles.Condition, strings.Join(roles.Modes, "+"))...)
	if len(fcs) > 0 {
		lo, hi := fcs[0], fcs[len(fcs)-1]
		if hi.nl <= lo.nl {
			// The claim compares fleets: one size alone cannot show it.
			b.undecidable = append(b.undecidable, "the fleets compared do not differ in N·L: name fleets of different sizes")
		}
		kLo := fleetVals(lo.cell, func(f measure.FleetRun) float64 { return float64(f.ConcurrencyOnDep) })
		kHi := fleetVals(hi.cell, func(f measure.FleetRun) float64 { return float64(f.ConcurrencyOnDep) })
		b.check(fmt.Sprintf("concurrency on the dependency, %s ÷ %s, over N·L's ratio %s", hi.label, lo.label, measure.FmtG(hi.nl/lo.nl)), "×",
			measure.EstimateOf([]float64{kHi.Mean / kLo.Mean / (hi.nl / lo.nl)}), ">=", 1-tol)
		b.check(fmt.Sprintf("%s: the dependency's call time ÷ s (the largest fleet pushed it past its capacity)", hi.label), "×",
			fleetVals(hi.cell, func(f measure.FleetRun) float64 { return float64(f.MeasuredWaitMs / f.ServiceMs) }), ">=", 1+tol)
	}
	for _, fc := range fcs {
		fleetCellChecks(b, fc, ex, tol)
	}
	b.notes = append(b.notes, fmt.Sprintf("Little's law: concurrency K = min(N·L, λ·W), call time W = s·max(1, K/C); tolerance %s", measure.FmtG(tol)))
	return b.decide()
}

// fleetCellChecks adds one fleet's checks: its concurrency on the
// dependency against K, its call time against W (or s below capacity), and
// its dependency failures (some where W > T, none otherwise).
func fleetCellChecks(b *builder, fc fleetCell, ex rundata.Expectations, tol float64) {
	c := fc.cell
	b.info(fc.label+": N·L (capacity C: "+measure.FmtG(fc.c)+")", "calls", measure.EstimateOf([]float64{fc.nl}))
	b.info(fc.label+": predicted concurrency K", "calls", measure.EstimateOf([]float64{fc.k}))
	b.check(fc.label+": concurrency on the dependency off K by (relative, beyond 2 standard errors of its samples)", "share", fleetVals(c, offK), "<=", tol)
	b.info(fc.label+": waiting at the dependency", "calls", fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.DepWaiting) }))
	queues := !math.IsNaN(fc.c) && fc.k > fc.c*(1+1e-9)
	if queues {
		want := min(fc.w, fc.t)
		b.info(fc.label+": predicted call time W = K·s/C", "ms", measure.EstimateOf([]float64{fc.w}))
		b.check(fmt.Sprintf("%s: call time off min(W, T) = %s ms by (relative)", fc.label, measure.FmtG(want)), "share", fleetVals(c, func(f measure.FleetRun) float64 {
			return math.Abs(float64(f.MeasuredWaitMs)/want - 1)
		}), "<=", tol)
	} else {
		b.check(fc.label+": call time ÷ s (no queue: K ≤ C)", "×", fleetVals(c, func(f measure.FleetRun) float64 {
			return float64(f.MeasuredWaitMs / f.ServiceMs)
		}), "<=", 1+tol)
	}
	failed := fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.DepFailedShare) })
	if fc.w > fc.t {
		b.check(fc.label+": /"+ex.Culprit+" results the dependency failed (W > T: timeouts)", "share", failed, ">=", ex.DegradedErrorRate)
	} else {
		b.check(fc.label+": /"+ex.Culprit+" results the dependency failed (W ≤ T)", "share", failed, "<=", ex.P2MaxErrorRate)
	}
	b.info(fc.label+": /"+ex.Culprit+" rejected by the instances' bulkheads", "share", fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.RejectedShare) }))
	b.info(fc.label+": /"+ex.Culprit+" successes", "req/s", fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.OKPerS) }))
}

// offK is how far the fleet's concurrency on the dependency (the mean of
// the proxy's in-flight samples) is from K, relative to K, beyond two
// standard errors of that mean: the part of the miss that the samples'
// own scatter cannot explain (a short fault phase gives a handful of
// them). Without a standard error it is the whole miss.
func offK(f measure.FleetRun) float64 {
	k := float64(f.PredictedConcurrency)
	miss := math.Abs(float64(f.ConcurrencyOnDep) - k)
	if se := float64(f.ConcurrencyOnDepSE); se > 0 {
		miss = max(0, miss-2*se)
	}
	return miss / k
}

func fleetBudgetText(s *Summary) string {
	ex := s.Expectations
	return fmt.Sprintf("%s + %s: a limit of C/N per instance (the dependency's capacity split over the fleet) keeps /%s's dependency within its capacity",
		ex.Fleet.Condition, ex.Fleet.Budget, ex.Culprit)
}

// fleetBudget is the remedy: a fleet whose per-instance limits add up to
// at most the dependency's capacity keeps it within capacity — no queue,
// its call time at s, no failures from it.
func fleetBudget(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	roles := ex.Fleet.WithDefaults()
	tol := roles.Tolerance
	fcs := fleetCells(s.Cells, roles.Condition, []string{roles.Budget})
	b.need(fleetNeeds(fcs, roles.Condition, roles.Budget)...)
	for _, fc := range fcs {
		c := fc.cell
		b.check(fc.label+": N·L ÷ C", "×", measure.EstimateOf([]float64{fc.nl / fc.c}), "<=", 1)
		b.check(fc.label+": concurrency on the dependency ÷ C", "×", fleetVals(c, func(f measure.FleetRun) float64 {
			return float64(f.ConcurrencyOnDep / f.Capacity)
		}), "<=", 1+tol)
		b.check(fc.label+": call time ÷ s", "×", fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.MeasuredWaitMs / f.ServiceMs) }), "<=", 1+tol)
		b.check(fc.label+": /"+ex.Culprit+" results the dependency failed", "share",
			fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.DepFailedShare) }), "<=", ex.P2MaxErrorRate)
		b.info(fc.label+": /"+ex.Culprit+" rejected by the instances' bulkheads", "share", fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.RejectedShare) }))
		b.info(fc.label+": /"+ex.Culprit+" successes", "req/s", fleetVals(c, func(f measure.FleetRun) float64 { return float64(f.OKPerS) }))
	}
	if len(fcs) > 1 {
		b.unsure = append(b.unsure, "the budget names a mode with several variants: name one fleet")
	}
	return b.decide()
}
