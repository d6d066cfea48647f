package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// cpuDecisions are the CPU claim, judged when Expectations.CPU names its
// condition, on the cells of its roles (claims.Needs).
var cpuDecisions = []decision{
	{claims.CPUNotIsolated, cpuNotIsolatedText, cpuNotIsolated},
}

func cpuNotIsolatedText(s *Summary) string {
	ex := s.Expectations
	cr := ex.CPU.WithDefaults(ex.Healthy)
	return fmt.Sprintf("%s + %s: /%s's p99 rises although no worker pool is full; the service's CPU (or GC), shared by every bulkhead, ran out first",
		cr.Mode, cr.Condition, ex.Victim)
}

// cpuNotIsolated is seed-004's "same-process bulkheads assumed to isolate
// CPU: a dependency that returns huge payloads still ... dominates garbage
// collection for everyone": with bulkheads, under the payload condition the
// victim's p99 rises (against its rise under the control condition) while
// no worker pool reached its limit, and the first exhausted resource is the
// service's CPU or its GC.
func cpuNotIsolated(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	cr := ex.CPU.WithDefaults(ex.Healthy)
	heavy, ctrl := b.cells[0], b.cells[1]
	rise := func(r measure.RunSummary) measure.Num { return r.P99RiseT(ex.Victim) }
	b.check(fmt.Sprintf("/%s p99 rise under %s − under %s", ex.Victim, cr.Condition, cr.Control), "T",
		measure.Bootstrap([][]float64{heavy.vals(rise), ctrl.vals(rise)}, func(m []float64) float64 { return m[0] - m[1] }), ">=", cr.MinP99RiseT)
	b.check("runs of "+cr.Condition+" in which no worker pool reached its limit", "share", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num {
		p := float64(measure.CPUOf(r).PeakPoolShare)
		return share(!math.IsNaN(p), p < 1)
	})), ">=", 1)
	var first []string
	b.check("runs of "+cr.Condition+" in which the CPU or GC ran out first", "share", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num {
		first = append(first, r.ID+": "+r.Exhausted.Resource)
		return share(true, r.Exhausted.Resource == measure.ResourceCPU || r.Exhausted.Resource == measure.ResourceGC)
	})), ">=", 1)
	for _, c := range []*Cell{heavy, ctrl} {
		b.info(fmt.Sprintf("/%s fault p99, %s", ex.Victim, c.Condition), "ms", c.VictimP99Ms)
	}
	b.info("/"+ex.Victim+" fault error rate, "+cr.Condition, "share", heavy.VictimErrorRate)
	b.info("/"+ex.Culprit+" fault error rate, "+cr.Condition, "share", heavy.CulpritErrorRate)
	for _, c := range []*Cell{heavy, ctrl} {
		b.info("service CPU, "+c.Condition, "cores", measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return measure.CPUOf(r).Cores })))
	}
	b.info("service GOMAXPROCS", "CPUs", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num { return measure.CPUOf(r).GOMAXPROCS })))
	b.info("GC share of the service's CPU, "+cr.Condition, "share", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num { return measure.CPUOf(r).GCShare })))
	b.info("scheduling latency p99 (median interval), "+cr.Condition, "ms", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num { return measure.CPUOf(r).SchedP99Ms })))
	b.info("/"+ex.Culprit+" mean decode time, "+cr.Condition, "ms", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num { return measure.CPUOf(r).DecodeMs })))
	b.info("peak worker-pool use, "+cr.Condition, "share", measure.EstimateOf(heavy.vals(func(r measure.RunSummary) measure.Num { return measure.CPUOf(r).PeakPoolShare })))
	if len(first) > 0 {
		b.notes = append(b.notes, "exhausted first: "+strings.Join(first, ", "))
	}
	return b.decide()
}
