package verdict

import (
	"fmt"
	"math"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// processesDecisions are the processes-as-walls claim, judged when
// Expectations.Processes names its CPU condition, on the cells its roles
// name (rundata.ProcessesRoles).
var processesDecisions = []decision{
	{claims.ProcessWall, processWallText, processWall},
}

func processWallText(s *Summary) string {
	ex := s.Expectations
	r := ex.ProcessRoles()
	return fmt.Sprintf("%s keeps /%s at its baseline under %s (its own CPU) and under %s; the bulkheads of one process (%s) only under %s — they share the CPU; "+
		"one shared pool (%s) under neither: /%s degrades under %s", r.Mode, ex.Victim, r.CPU, r.Slow, r.InProcess, r.Slow, r.Shared, ex.Victim, r.Slow)
}

// processWall is seed-004's "same-process bulkheads still share memory,
// the event loop and the GC; separate processes do not" with its "a
// semaphore per dependency inside one process gives most of the benefit
// for none of the operational cost", judged on three layouts of the same
// pools, each fault against the control condition:
//
//   - under the CPU condition the victim's fault-phase p99 is above its
//     fault-phase p99 under the control by at most MaxP99RiseT in the
//     walled mode (and its error rate stays within P2's), and by at least
//     MinP99RiseT in the bulkheads of one process (the CPU-NOT-ISOLATED
//     effect);
//   - under the slow condition the victim stays at its baseline by P2's
//     thresholds (its fault-phase p99 at most P2MaxP99RiseT above the
//     control's, and its error rate) in the walled mode
//     and in the bulkheads of one process, and degrades in the shared pool
//     (P1's rule, against the shared pool's control when the matrix has
//     it).
//
// What each layout cost — its processes, their resident memory and
// GOMAXPROCS together, the CPU they used — is shown beside.
func processWall(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	r := ex.ProcessRoles()
	b.need([2]string{r.CPU, r.Mode}, [2]string{r.Control, r.Mode}, [2]string{r.CPU, r.InProcess}, [2]string{r.Control, r.InProcess},
		[2]string{r.Slow, r.Mode}, [2]string{r.Slow, r.InProcess}, [2]string{r.Slow, r.Shared})
	cpuWall, ctlWall, cpuOne, ctlOne, slowWall, slowOne, slowShared := b.cells[0], b.cells[1], b.cells[2], b.cells[3], b.cells[4], b.cells[5], b.cells[6]
	// The victim's fault-phase p99 against the control's, in T: a fault
	// phase against a fault phase, so that a baseline the machine
	// disturbed in either run cannot hide the fault's harm or pose as it.
	p99T := func(r measure.RunSummary) measure.Num {
		return r.Endpoint(ex.Victim).FaultP99Ms / measure.Num(r.TimeoutMs)
	}
	over := func(heavy, ctl *Cell) measure.Estimate {
		return measure.Bootstrap([][]float64{heavy.vals(p99T), ctl.vals(p99T)}, func(m []float64) float64 { return m[0] - m[1] })
	}
	v := "/" + ex.Victim
	b.check(fmt.Sprintf("%s fault p99 under %s − under %s, %s", v, r.CPU, r.Control, r.Mode), "T", over(cpuWall, ctlWall), "<=", r.MaxP99RiseT)
	b.victimErrorsAtBaseline(cpuWall, ", "+r.CPU+", "+r.Mode)
	b.check(fmt.Sprintf("%s fault p99 under %s − under %s, %s", v, r.CPU, r.Control, r.InProcess), "T", over(cpuOne, ctlOne), ">=", r.MinP99RiseT)
	for _, c := range [][2]*Cell{{slowWall, ctlWall}, {slowOne, ctlOne}} {
		b.check(fmt.Sprintf("%s fault p99 under %s − under %s, %s", v, r.Slow, r.Control, c[0].Mode), "T", over(c[0], c[1]), "<=", ex.P2MaxP99RiseT)
		b.victimErrorsAtBaseline(c[0], ", "+r.Slow+", "+c[0].Mode)
	}
	var control measure.DegradeControl
	if ctl := FindCell(s.Cells, r.Control, r.Shared); ctl != nil && len(ctl.UsedRuns) > 0 {
		control = measure.ControlOf(ctl.UsedRuns)
		b.notes = append(b.notes, fmt.Sprintf("control %s/%s: %s's worst span p99 %s× its baseline, error rate %s",
			r.Control, r.Shared, v, words.FmtHuman(control.P99Ratio), words.FmtHuman(control.ErrorRate)))
	}
	deg := slowShared.vals(func(rs measure.RunSummary) measure.Num {
		return share(true, !math.IsNaN(float64(measure.TimeToDegradeAgainst(rs, ex, control))))
	})
	b.check(fmt.Sprintf("repeats in which %s degraded, %s, %s", v, r.Slow, r.Shared), "share", measure.EstimateOf(deg), ">=", 1)

	for _, c := range []*Cell{cpuWall, cpuOne, ctlWall, ctlOne, slowWall, slowOne, slowShared} {
		b.info(fmt.Sprintf("%s fault p99, %s, %s", v, c.Condition, c.Mode), "ms", c.VictimP99Ms)
	}
	for _, c := range []*Cell{cpuWall, cpuOne, slowShared} {
		b.info(fmt.Sprintf("%s fault error rate, %s, %s", v, c.Condition, c.Mode), "share", c.VictimErrorRate)
	}
	// The cost, each layout in its slow cell (every layout has one): the
	// processes, their memory before the fault, the CPUs they may use; and
	// under the CPU condition what the walled and one-process layouts used.
	cost := func(c *Cell, f func(measure.ProcessesRun) measure.Num) measure.Estimate {
		return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return f(measure.ProcessesOf(r)) }))
	}
	mib := func(n measure.Num) measure.Num { return n / (1 << 20) }
	for _, c := range []*Cell{slowWall, slowOne, slowShared} {
		b.info("service processes, "+c.Mode, "processes", cost(c, func(p measure.ProcessesRun) measure.Num { return measure.Num(p.Processes) }))
		b.info("service memory before the fault (RSS, all its processes), "+c.Mode, "MiB", cost(c, func(p measure.ProcessesRun) measure.Num { return mib(p.BaselineRSSBytes) }))
		b.info("GOMAXPROCS, all its processes, "+c.Mode, "CPUs", cost(c, func(p measure.ProcessesRun) measure.Num { return p.GOMAXPROCS }))
	}
	for _, c := range []*Cell{cpuWall, cpuOne} {
		b.info(fmt.Sprintf("service memory, peak under %s, %s", c.Condition, c.Mode), "MiB", cost(c, func(p measure.ProcessesRun) measure.Num { return mib(p.PeakRSSBytes) }))
		b.info(fmt.Sprintf("service CPU under %s, %s", c.Condition, c.Mode), "cores", cost(c, func(p measure.ProcessesRun) measure.Num { return p.Cores }))
	}
	b.notes = append(b.notes, fmt.Sprintf("degraded span (at least %d results, within the fault): p99 > %s× baseline or error rate > %s",
		measure.MinSpanResults, measure.FmtG(ex.DegradedP99Factor), measure.FmtG(ex.DegradedErrorRate)))
	return b.decide()
}
