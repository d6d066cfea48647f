package measure

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Thresholds of the CPU rules (SchedRule, GCRule).
const (
	// cpuBusyShare is the least share of its GOMAXPROCS the service must
	// use in a sampling interval for either rule to hold: an idle service
	// whose few goroutines wait, or whose little work is mostly GC, has not
	// run out of CPU.
	cpuBusyShare = 0.5
	// schedMinP99 and schedFactor: runnable goroutines waited for a CPU in
	// an interval whose scheduling-latency p99 is at least schedMinP99 and
	// in which on average at least schedFactor times as many goroutines
	// waited to run as in the baseline's median interval.
	schedMinP99 = 5 * time.Millisecond
	schedFactor = 4
	// gcMinShare is the GC's share of the service's CPU from which GC is
	// the resource named.
	gcMinShare = 0.25
)

// SchedRule and GCRule are the exhaustion rules of the service's CPU beyond
// ExhaustionRules' cpu rule (which needs the CPU spent at ≥ 90 % of
// GOMAXPROCS in one sampling interval: a service whose CPU is busy 70 % of
// the time already makes a runnable goroutine wait for the one running).
// They apply to runs whose samples carry the Go runtime's CPU accounting
// (internal/runtimestats), and the report lists them for those runs only.
var (
	SchedRule = fmt.Sprintf("cpu: over a sampling interval in which the service's CPU ran at ≥ %.0f %% of its GOMAXPROCS, its goroutines' Go scheduling latency had a p99 ≥ %s and on average ≥ %d× as many goroutines waited to run (Δ of the latency's sum ÷ Δt) as in the baseline's median interval (runnable goroutines waited for a CPU)",
		100*cpuBusyShare, schedMinP99, schedFactor)
	GCRule = fmt.Sprintf("gc: the GC's share of the service's CPU over a sampling interval (runtime/metrics /cpu/classes/gc over total − idle) ≥ %.0f %%, while its CPU ran at ≥ %.0f %% of its GOMAXPROCS",
		100*gcMinShare, 100*cpuBusyShare)
)

// WithCPURules adds SchedRule and GCRule after the cpu rule of rules when
// any run carries the runtime's CPU accounting.
func WithCPURules(rules []string, runs []*rundir.Run) []string {
	if !slices.ContainsFunc(runs, func(r *rundir.Run) bool { return observesRuntimeCPU(r) }) {
		return rules
	}
	var out []string
	for _, rule := range rules {
		out = append(out, rule)
		if len(rule) > len(ResourceCPU) && rule[:len(ResourceCPU)+1] == ResourceCPU+":" {
			out = append(out, SchedRule, GCRule)
		}
	}
	return out
}

// observesRuntimeCPU reports whether the service's samples carry the Go
// runtime's CPU accounting.
func observesRuntimeCPU(run *rundir.Run) bool {
	for _, s := range run.Metrics {
		if s.Component == rundata.ServiceComponent {
			if _, ok := s.Values[rundata.MetricGoCPUTotal]; ok {
				return true
			}
		}
	}
	return false
}

// cpuInterval is one sampling interval of the service's CPU.
type cpuInterval struct {
	at       time.Time // its end
	cores    float64   // CPU-seconds per second, from /proc (process_cpu_seconds_total)
	procs    float64   // GOMAXPROCS
	gcShare  float64   // GC / (total − idle) of the runtime's accounting; NaN if none was used
	schedP99 float64   // seconds; NaN when not sampled
	// schedSum is how long goroutines waited to run in all over the
	// interval (seconds; NaN when not sampled), dt its length in seconds.
	schedSum, dt float64
}

// cpuSeries reads the service's CPU series: cores used, scheduler latency and
// GC.
type cpuSeries struct{ run *rundir.Run }

// cpuIntervals returns the service's CPU per sampling interval; none
// without the runtime's CPU accounting.
func (cs cpuSeries) cpuIntervals() []cpuInterval {
	if !observesRuntimeCPU(cs.run) {
		return nil
	}
	var out []cpuInterval
	var prev *rundata.MetricSample
	def := 0.0
	if n, err := strconv.Atoi(cs.run.Meta.Versions["num_cpu"]); err == nil {
		def = float64(n)
	}
	for i := range cs.run.Metrics {
		s := &cs.run.Metrics[i]
		if s.Component != rundata.ServiceComponent {
			continue
		}
		if prev != nil {
			if dt := s.Time.Sub(prev.Time).Seconds(); dt > 0 {
				out = append(out, interval(prev.Values, s.Values, s.Time, dt, def))
			}
		}
		prev = s
	}
	return out
}

func interval(a, b map[string]float64, at time.Time, dt, defProcs float64) cpuInterval {
	d := func(k string) float64 {
		x, okA := a[k]
		y, okB := b[k]
		if !okA || !okB {
			return math.NaN()
		}
		return y - x
	}
	iv := cpuInterval{at: at, cores: d(rundata.MetricCPUSeconds) / dt, procs: defProcs, schedP99: math.NaN(),
		schedSum: d(rundata.MetricSchedLatencySum), dt: dt}
	if p, ok := b[rundata.MetricGoMaxProcs]; ok && p > 0 {
		iv.procs = p
	}
	used := d(rundata.MetricGoCPUTotal) - d(rundata.MetricGoCPUIdle)
	iv.gcShare = math.NaN()
	if used > 0 {
		iv.gcShare = d(rundata.MetricGoCPUGC) / used
	}
	if v, ok := b[rundata.MetricSchedLatencyP99]; ok {
		iv.schedP99 = v
	}
	return iv
}

// busy reports whether the service ran at ≥ cpuBusyShare of its GOMAXPROCS.
func (iv cpuInterval) busy() bool { return iv.procs > 0 && iv.cores >= cpuBusyShare*iv.procs }

// waiting is the mean number of goroutines that waited to run over the
// interval — the wait-seconds its scheduling latency summed per second, the
// run queue's length by Little's law; NaN when not sampled.
func (iv cpuInterval) waiting() float64 {
	if !(iv.dt > 0) {
		return math.NaN()
	}
	return iv.schedSum / iv.dt
}

// schedBaseline is the number of goroutines waiting to run in the median
// interval of the baseline phase (of every interval before from if the run
// has none, or if none of its intervals lies within it). SchedRule compares
// an interval's run queue with it, not its p99 with the baseline's p99: a
// 250 ms interval of an idle service holds ~100 waits, so its p99 is its
// longest wait, and beside a busy core the machine's preemptions lifted the
// pre-fault median p99 from 0.5–2.5 ms to 10–25 ms, within 2–5× of a
// service waiting for its one CPU. The run queue counts every wait, and
// more of them as the service gets busy; the median interval leaves a
// baseline's one long stall out (docs/resources.md gives the numbers).
func schedBaseline(ivs []cpuInterval, base rundata.PhaseSpan, hasBase bool, from time.Time) float64 {
	median := func(in func(i int) bool) float64 {
		var w []float64
		for i, iv := range ivs {
			if x := iv.waiting(); in(i) && !math.IsNaN(x) {
				w = append(w, x)
			}
		}
		if len(w) == 0 {
			return math.NaN()
		}
		sort.Float64s(w)
		return w[len(w)/2]
	}
	before := func(i int) bool { return !ivs[i].at.After(from) }
	if hasBase {
		// An interval is the baseline's when it starts at or after the
		// baseline's start (the one before it ended there) and ends by
		// the fault's start.
		if m := median(func(i int) bool { return i > 0 && !ivs[i-1].at.Before(base.Start) && before(i) }); !math.IsNaN(m) {
			return m
		}
	}
	return median(before)
}

// schedHit applies SchedRule between from and to.
func (cs cpuSeries) schedHit(from, to time.Time) (hit, bool) {
	ivs := cs.cpuIntervals()
	base, hasBase := cs.run.PhaseSpan(rundata.PhaseBaseline)
	ref := schedBaseline(ivs, base, hasBase, from)
	if math.IsNaN(ref) {
		return hit{}, false
	}
	for _, iv := range ivs {
		if inRange(iv.at, from, to) && iv.busy() && iv.schedP99 >= schedMinP99.Seconds() && iv.waiting() >= schedFactor*ref {
			return hit{res: ResourceCPU, at: iv.at, detail: fmt.Sprintf("service scheduling latency p99 %s ms, %s goroutines waiting to run on average (baseline %s) at %s cores of %s",
				FmtG(1000*iv.schedP99), strconv.FormatFloat(iv.waiting(), 'g', 2, 64), strconv.FormatFloat(ref, 'g', 2, 64), fmt.Sprintf("%.2f", iv.cores), FmtG(iv.procs))}, true
		}
	}
	return hit{}, false
}

// gcHit applies GCRule between from and to.
func (cs cpuSeries) gcHit(from, to time.Time) (hit, bool) {
	for _, iv := range cs.cpuIntervals() {
		if inRange(iv.at, from, to) && iv.busy() && iv.gcShare >= gcMinShare {
			return hit{res: ResourceGC, at: iv.at, detail: fmt.Sprintf("GC took %.0f %% of the service's CPU at %s cores of %s",
				100*iv.gcShare, fmt.Sprintf("%.2f", iv.cores), FmtG(iv.procs))}, true
		}
	}
	return hit{}, false
}

// cpuAnyHit is the CPU's one hit: the earlier of ExhaustionRules' cpu rule
// (cpuHit) and SchedRule (schedHit), so that the ranking lists the CPU
// once.
func (cs cpuSeries) cpuAnyHit(from, to time.Time) (hit, bool) {
	a, okA := exhaustionScan{cs.run}.cpuHit(from, to)
	b, okB := cs.schedHit(from, to)
	return earlier(a, okA, b, okB)
}

// earlier returns the earlier of two hits that may each be missing (ok
// false); the first on a tie.
func earlier(a hit, okA bool, b hit, okB bool) (hit, bool) {
	switch {
	case okA && (!okB || !b.at.Before(a.at)):
		return a, true
	case okB:
		return b, true
	}
	return hit{}, false
}

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

// cpuFamily adds the service's CPU numbers.
func cpuFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	s.CPU = cpuSeries{r}.cpuStats(s, ex)
}

// cpuStats computes CPURun for a run of s; nil unless the experiment names
// the CPU claim.
func (cs cpuSeries) cpuStats(s *RunSummary, ex rundata.Expectations) *CPURun {
	if ex.CPU == nil {
		return nil
	}
	c := &CPURun{Cores: Undefined, BaselineCores: Undefined, GOMAXPROCS: Undefined, GCShare: Undefined, SchedP99Ms: Undefined, DecodeMs: Undefined, PeakPoolShare: Undefined}
	from, ok := cs.run.FaultStart()
	if !ok {
		from = cs.run.Origin()
	}
	to := cs.run.FaultEnd()
	cpu := cs.run.Metric(rundata.ServiceComponent, rundata.MetricCPUSeconds)
	if d, ok := rundir.DeltaOver(cpu, from, to); ok && to.After(from) {
		c.Cores = Num(d / to.Sub(from).Seconds())
	}
	if b, ok := cs.run.PhaseSpan(rundata.PhaseBaseline); ok && b.End.After(b.Start) {
		if d, ok := rundir.DeltaOver(cpu, b.Start, b.End); ok {
			c.BaselineCores = Num(d / b.End.Sub(b.Start).Seconds())
		}
	}
	if p := cs.run.Metric(rundata.ServiceComponent, rundata.MetricGoMaxProcs); len(p) > 0 {
		c.GOMAXPROCS = Num(p[len(p)-1].Value)
	}
	delta := func(key string) float64 {
		d, ok := rundir.DeltaOver(cs.run.Metric(rundata.ServiceComponent, key), from, to)
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
	for _, p := range cs.run.Metric(rundata.ServiceComponent, rundata.MetricSchedLatencyP99) {
		if inRange(p.Time, from, to) {
			sched = append(sched, p.Value)
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
		if sh := Ratio(float64(p.PeakInUse), float64(p.Limit)); !math.IsNaN(sh) && (math.IsNaN(peak) || sh > peak) {
			peak = sh
		}
	}
	c.PeakPoolShare = Num(peak)
	return c
}

// CPUOf returns r's CPU numbers, all undefined when it has none.
func CPUOf(r RunSummary) CPURun {
	if r.CPU == nil {
		return CPURun{Cores: Undefined, BaselineCores: Undefined, GOMAXPROCS: Undefined, GCShare: Undefined, SchedP99Ms: Undefined, DecodeMs: Undefined, PeakPoolShare: Undefined}
	}
	return *r.CPU
}
