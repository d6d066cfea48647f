package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// CPURun holds a run's numbers about the service's CPU over the fault phase
// (the run, without one), for the CPU claim. Shares are 0–1; a number the
// run's samples cannot give is null.
type CPURun struct {
	// Cores is the CPU the service used, in cores (from /proc), and
	// BaselineCores the same over the baseline.
	Cores         Num `json:"cores"`
	BaselineCores Num `json:"baseline_cores"`
	// GOMAXPROCS is the service's (go_sched_gomaxprocs_threads).
	GOMAXPROCS Num `json:"gomaxprocs"`
	// GCShare is the GC's share of the CPU the service used (the runtime's
	// accounting).
	GCShare Num `json:"gc_share"`
	// SchedP99Ms is the median over the sampling intervals of the Go
	// scheduling latency's p99, in ms.
	SchedP99Ms Num `json:"sched_p99_ms"`
	// DecodeMs is the culprit's mean JSON decode time, in ms.
	DecodeMs Num `json:"decode_ms"`
	// PeakPoolShare is the highest in_use / limit any worker pool reached.
	PeakPoolShare Num `json:"peak_pool_share"`
}

// cpuStats computes CPURun for a run of s; nil unless the experiment names
// the CPU claim.
func (r *Run) cpuStats(s *RunSummary, ex Expectations) *CPURun {
	if ex.CPU == nil {
		return nil
	}
	c := &CPURun{Cores: nan, BaselineCores: nan, GOMAXPROCS: nan, GCShare: nan, SchedP99Ms: nan, DecodeMs: nan, PeakPoolShare: nan}
	from, ok := r.faultStart()
	if !ok {
		from = r.origin()
	}
	to := r.faultEnd()
	cpu := r.metric(rundata.ServiceComponent, rundata.MetricCPUSeconds)
	if d, ok := deltaOver(cpu, from, to); ok && to.After(from) {
		c.Cores = Num(d / to.Sub(from).Seconds())
	}
	if b, ok := r.phaseSpan(rundata.PhaseBaseline); ok && b.End.After(b.Start) {
		if d, ok := deltaOver(cpu, b.Start, b.End); ok {
			c.BaselineCores = Num(d / b.End.Sub(b.Start).Seconds())
		}
	}
	if p := r.metric(rundata.ServiceComponent, rundata.MetricGoMaxProcs); len(p) > 0 {
		c.GOMAXPROCS = Num(p[len(p)-1].v)
	}
	delta := func(key string) float64 {
		d, ok := deltaOver(r.metric(rundata.ServiceComponent, key), from, to)
		if !ok {
			return math.NaN()
		}
		return d
	}
	used := delta(rundata.MetricGoCPUTotal) - delta(rundata.MetricGoCPUIdle)
	if used > 0 {
		c.GCShare = Num(delta(rundata.MetricGoCPUGC) / used)
	}
	var sched []float64
	for _, p := range r.metric(rundata.ServiceComponent, rundata.MetricSchedLatencyP99) {
		if inRange(p.t, from, to) {
			sched = append(sched, p.v)
		}
	}
	if len(sched) > 0 {
		sort.Float64s(sched)
		c.SchedP99Ms = Num(1000 * sched[len(sched)/2])
	}
	dl := rundata.L("dependency", ex.Culprit)
	sum, cnt := delta(rundata.Key(rundata.MetricDecodeSum, dl)), delta(rundata.Key(rundata.MetricDecodeCount, dl))
	if cnt > 0 {
		c.DecodeMs = Num(1000 * sum / cnt)
	}
	peak := math.NaN()
	for _, p := range s.Pools {
		if sh := ratio(float64(p.PeakInUse), float64(p.Limit)); !math.IsNaN(sh) && (math.IsNaN(peak) || sh > peak) {
			peak = sh
		}
	}
	c.PeakPoolShare = Num(peak)
	return c
}

// cpuRun returns r's CPU numbers, all undefined when it has none.
func cpuRun(r RunSummary) CPURun {
	if r.CPU == nil {
		return CPURun{Cores: nan, BaselineCores: nan, GOMAXPROCS: nan, GCShare: nan, SchedP99Ms: nan, DecodeMs: nan, PeakPoolShare: nan}
	}
	return *r.CPU
}

// cpuVerdicts judges the CPU claim the experiment names (Expectations.CPU);
// none when it names none.
func cpuVerdicts(cells []Cell, ex Expectations) []Verdict {
	if ex.CPU == nil {
		return nil
	}
	return []Verdict{cpuNotIsolated(cells, ex)}
}

// cpuNotIsolated is seed-004's "same-process bulkheads assumed to isolate
// CPU: a dependency that returns huge payloads still ... dominates garbage
// collection for everyone": with bulkheads, under the payload condition the
// victim's p99 rises (against its rise under the control condition) while
// no worker pool reached its limit, and the first exhausted resource is the
// service's CPU or its GC.
func cpuNotIsolated(cells []Cell, ex Expectations) Verdict {
	cr := ex.CPU.WithDefaults(ex.Healthy)
	b := newBuilder("CPU-NOT-ISOLATED", fmt.Sprintf("%s + %s: /%s's p99 rises although no worker pool is full; the service's CPU (or GC), shared by every bulkhead, ran out first",
		cr.Mode, cr.Condition, ex.Victim), cells, ex, [2]string{cr.Condition, cr.Mode}, [2]string{cr.Control, cr.Mode})
	heavy, ctrl := b.cells[0], b.cells[1]
	rise := func(r RunSummary) Num { return r.p99RiseT(ex.Victim) }
	b.check(fmt.Sprintf("/%s p99 rise under %s − under %s", ex.Victim, cr.Condition, cr.Control), "T",
		bootstrap([][]float64{heavy.vals(rise), ctrl.vals(rise)}, func(m []float64) float64 { return m[0] - m[1] }), ">=", cr.MinP99RiseT)
	b.check("runs of "+cr.Condition+" in which no worker pool reached its limit", "share", estimate(heavy.vals(func(r RunSummary) Num {
		p := float64(cpuRun(r).PeakPoolShare)
		return share(!math.IsNaN(p), p < 1)
	})), ">=", 1)
	var first []string
	b.check("runs of "+cr.Condition+" in which the CPU or GC ran out first", "share", estimate(heavy.vals(func(r RunSummary) Num {
		first = append(first, r.ID+": "+r.Exhausted.Resource)
		return share(true, r.Exhausted.Resource == ResourceCPU || r.Exhausted.Resource == ResourceGC)
	})), ">=", 1)
	for _, c := range []*Cell{heavy, ctrl} {
		b.info(fmt.Sprintf("/%s fault p99, %s", ex.Victim, c.Condition), "ms", c.VictimP99Ms)
	}
	b.info("/"+ex.Victim+" fault error rate, "+cr.Condition, "share", heavy.VictimErrorRate)
	b.info("/"+ex.Culprit+" fault error rate, "+cr.Condition, "share", heavy.CulpritErrorRate)
	for _, c := range []*Cell{heavy, ctrl} {
		b.info("service CPU, "+c.Condition, "cores", estimate(c.vals(func(r RunSummary) Num { return cpuRun(r).Cores })))
	}
	b.info("service GOMAXPROCS", "CPUs", estimate(heavy.vals(func(r RunSummary) Num { return cpuRun(r).GOMAXPROCS })))
	b.info("GC share of the service's CPU, "+cr.Condition, "share", estimate(heavy.vals(func(r RunSummary) Num { return cpuRun(r).GCShare })))
	b.info("scheduling latency p99 (median interval), "+cr.Condition, "ms", estimate(heavy.vals(func(r RunSummary) Num { return cpuRun(r).SchedP99Ms })))
	b.info("/"+ex.Culprit+" mean decode time, "+cr.Condition, "ms", estimate(heavy.vals(func(r RunSummary) Num { return cpuRun(r).DecodeMs })))
	b.info("peak worker-pool use, "+cr.Condition, "share", estimate(heavy.vals(func(r RunSummary) Num { return cpuRun(r).PeakPoolShare })))
	if len(first) > 0 {
		b.notes = append(b.notes, "exhausted first: "+strings.Join(first, ", "))
	}
	return b.decide()
}
