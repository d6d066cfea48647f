package verdict

import (
	"fmt"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// memoryDecisions are the event-loop memory claim, judged when
// Expectations.Memory names its mode, on the cells of its roles
// (claims.Needs): the slow condition in the unbounded mode and in the
// bounded (control) mode.
var memoryDecisions = []decision{
	{claims.UnboundedGrows, unboundedGrowsText, unboundedGrows},
}

func unboundedGrowsText(s *Summary) string {
	ex := s.Expectations
	m := ex.Memory.WithDefaults(ex.Slow, ex.BulkheadMode)
	return fmt.Sprintf("%s: with nothing bounding the calls in flight (%s) they grow at /%s's arrival rate throughout the fault, and the service's memory with them; "+
		"with an explicit bound (%s) both stay bounded", m.Condition, m.Mode, ex.Culprit, m.Control)
}

// unboundedGrows is seed-004's "on an event-loop runtime awaits are cheap,
// so there is no natural bound at all — unbounded in-flight work grows
// memory and latency until something else fails, which means the
// semaphore must be explicit": under the slow condition, in the unbounded
// mode the calls in flight to the culprit's dependency grow at its arrival
// rate λ over the fault phase (Little's law before any call comes back:
// λ·t), still at λ in its second half, and the service's resident memory
// grows by at least MinGrowth of its size at fault start; in the control
// mode (bulkheads: the semaphore made explicit) the calls in flight no
// longer grow in the second half and the memory grows by at most Tolerance
// of the unbounded mode's growth (a garbage-collected heap settles at a
// few MiB more: a share of its own size would be noise). A run the memory
// guard stopped is judged on its numbers up to the stop: in the unbounded
// mode the memory grew past the ceiling; a control it stopped was not
// bounded.
func unboundedGrows(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	m := ex.Memory.WithDefaults(ex.Slow, ex.BulkheadMode)
	tol := m.Tolerance
	ub, ctl := b.admitStopped(b.cells[0]), b.admitStopped(b.cells[1])
	est := func(c *Cell, f func(*measure.MemoryRun) measure.Num) measure.Estimate {
		return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
			if r.Memory == nil {
				return measure.Undefined
			}
			return f(r.Memory)
		}))
	}
	mib := func(f func(*measure.MemoryRun) measure.Num) func(*measure.MemoryRun) measure.Num {
		return func(r *measure.MemoryRun) measure.Num { return f(r) / (1 << 20) }
	}
	dep := "/" + ex.Culprit + "'s dependency"
	b.check(fmt.Sprintf("calls in flight to %s, growth over the fault ÷ /%s's arrival rate, %s", dep, ex.Culprit, ub.Mode), "share",
		est(ub, func(r *measure.MemoryRun) measure.Num { return r.GrowthShare }), ">=", 1-tol)
	b.check(fmt.Sprintf("the same over the fault's second half (still growing), %s", ub.Mode), "share",
		est(ub, func(r *measure.MemoryRun) measure.Num { return r.LateGrowthShare }), ">=", 1-tol)
	b.check("service memory growth over the fault (RSS end ÷ start − 1), "+ub.Mode, "share",
		est(ub, func(r *measure.MemoryRun) measure.Num { return r.RSSGrowth }), ">=", m.MinGrowth)
	b.check(fmt.Sprintf("calls in flight to %s, growth over the fault's second half ÷ arrival rate, %s", dep, ctl.Mode), "share",
		est(ctl, func(r *measure.MemoryRun) measure.Num { return r.LateGrowthShare }), "<=", tol)
	growth := func(c *Cell) []float64 {
		return c.vals(func(r measure.RunSummary) measure.Num {
			if r.Memory == nil {
				return measure.Undefined
			}
			return r.Memory.RSSEndBytes - r.Memory.RSSStartBytes
		})
	}
	b.check(fmt.Sprintf("service memory growth over the fault, %s ÷ %s", ctl.Mode, ub.Mode), "share",
		measure.Bootstrap([][]float64{growth(ub), growth(ctl)}, func(g []float64) float64 { return measure.Ratio(max(g[1], 0), g[0]) }), "<=", tol)
	// A bounded mode the memory guard had to stop was not bounded.
	b.check("runs of "+ctl.Mode+" the memory guard stopped", "runs", measure.EstimateOf([]float64{float64(len(stoppedRuns(b.cells[1])))}), "<=", 0)
	b.info(fmt.Sprintf("/%s offered in the fault, %s", ex.Culprit, ub.Mode), "req/s", est(ub, func(r *measure.MemoryRun) measure.Num { return r.OfferedPerS }))
	for _, c := range []*Cell{ub, ctl} {
		b.info("calls in flight at the fault's end, "+c.Mode, "calls", est(c, func(r *measure.MemoryRun) measure.Num { return r.InflightEnd }))
		b.info("calls in flight, peak, "+c.Mode, "calls", est(c, func(r *measure.MemoryRun) measure.Num { return r.InflightPeak }))
		b.info("service memory at fault start, "+c.Mode, "MiB", est(c, mib(func(r *measure.MemoryRun) measure.Num { return r.RSSStartBytes })))
		b.info("service memory at the fault's end, "+c.Mode, "MiB", est(c, mib(func(r *measure.MemoryRun) measure.Num { return r.RSSEndBytes })))
		b.info("service memory growth rate, "+c.Mode, "MiB/s", est(c, mib(func(r *measure.MemoryRun) measure.Num { return r.RSSSlope })))
		b.info("live heap growth over the fault, "+c.Mode, "MiB", est(c, mib(func(r *measure.MemoryRun) measure.Num { return r.HeapEndBytes - r.HeapStartBytes })))
	}
	b.info("memory per call in flight, "+ub.Mode, "KiB", est(ub, func(r *measure.MemoryRun) measure.Num { return r.BytesPerCall / 1024 }))
	for _, c := range []*Cell{ub, ctl} {
		b.info(fmt.Sprintf("/%s fault p99, %s", ex.Culprit, c.Mode), "ms", c.CulpritP99Ms)
		b.info(fmt.Sprintf("/%s fault p99, %s", ex.Victim, c.Mode), "ms", c.VictimP99Ms)
	}
	for _, r := range stoppedRuns(b.cells[0]) {
		b.notes = append(b.notes, fmt.Sprintf("%s: stopped by the memory guard at %.0f MiB (ceiling %.0f MiB), judged on its numbers up to then",
			r.ID, float64(r.MemoryStop.RSSBytes)/(1<<20), float64(r.MemoryStop.LimitBytes)/(1<<20)))
	}
	if len(ub.UsedRuns) > 0 && ub.UsedRuns[0].Memory != nil && ub.UsedRuns[0].Memory.Source != "" {
		b.notes = append(b.notes, "calls in flight as the "+ub.UsedRuns[0].Memory.Source+" counted them")
	}
	return b.decide()
}

// stoppedRuns are the runs of c the memory guard stopped.
func stoppedRuns(c *Cell) []measure.RunSummary {
	var out []measure.RunSummary
	for _, r := range c.excluded {
		if r.MemoryStop != nil && len(r.Damaged) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// admitStopped returns cell c with the runs the memory guard stopped among
// its used runs: for the memory claim such a run is evidence — the memory
// grew until the guard stopped it — judged on its numbers up to the stop.
// A cell whose only runs were stopped is then neither missing nor INVALID.
func (b *builder) admitStopped(c *Cell) *Cell {
	stopped := stoppedRuns(c)
	if len(stopped) == 0 {
		return c
	}
	if len(c.UsedRuns) == 0 {
		key, left := c.Condition+"/"+c.Mode, cellLeftOut(c)
		b.missing = slices.DeleteFunc(b.missing, func(s string) bool { return s == key })
		b.invalid = slices.DeleteFunc(b.invalid, func(s string) bool { return s == left })
	}
	for _, r := range stopped {
		b.v.Excluded = slices.DeleteFunc(b.v.Excluded, func(e Exclusion) bool { return e.Run == r.ID })
	}
	out := *c
	out.UsedRuns = append(append([]measure.RunSummary(nil), c.UsedRuns...), stopped...)
	return &out
}
