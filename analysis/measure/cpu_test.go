package measure

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// sched is an interval's scheduling latency: its p99, its mean wait and
// how many waits (100 if 0).
type sched struct {
	p99, mean time.Duration
	n         float64
}

// quietSched is a quiet service's: ~100 short waits in 250 ms.
var quietSched = sched{300 * time.Microsecond, 30 * time.Microsecond, 0}

// cpuRunOf builds a run whose service is sampled every 250 ms: 4 s before
// the fault (a quiet service) and 4 s of fault in which it uses cores of
// its one CPU, GC takes gcShare of that, and the scheduling latency's p99
// is p99 (its mean a tenth of it); poolFull makes pool b full with
// rejections from the second fault sample on. runtimeCPU false leaves out
// the runtime's CPU accounting (data recorded before it existed).
func cpuRunOf(cores, gcShare float64, p99 time.Duration, poolFull, runtimeCPU bool) *Run {
	return cpuRunWith(cores, gcShare, quietSched, sched{p99, p99 / 10, 0}, poolFull, runtimeCPU)
}

// cpuRunWith is cpuRunOf with the scheduling latency of the intervals
// before the fault (base) and in it (fault) given.
func cpuRunWith(cores, gcShare float64, base, fault sched, poolFull, runtimeCPU bool) *Run {
	start := time.Unix(1000, 0)
	faultAt := start.Add(4 * time.Second)
	r := &rundir.Run{Meta: rundata.RunMeta{Phases: []rundata.PhaseSpan{
		{Name: rundata.PhaseBaseline, Start: start, End: faultAt},
		{Name: rundata.PhaseFault, Start: faultAt, End: faultAt.Add(4 * time.Second)}},
		Pools: []rundata.PoolInfo{{Name: "b", Limit: 10, Queue: 10}}}}
	var cpu, gc, total, idle, rejected, waited float64
	for i := 0; i <= 32; i++ {
		at := start.Add(time.Duration(i) * 250 * time.Millisecond)
		c, g, s := 0.05, 0.02, base
		if !at.Before(faultAt.Add(250 * time.Millisecond)) {
			c, g, s = cores, gcShare, fault
		}
		cpu += c / 4
		gc += g * c / 4
		total += 0.25
		idle += (1 - c) / 4
		n := s.n
		if n == 0 {
			n = 100
		}
		waited += n * s.mean.Seconds()
		v := map[string]float64{rundata.MetricCPUSeconds: cpu, rundata.MetricGoMaxProcs: 1,
			rundata.MetricSchedLatencyP99: s.p99.Seconds(), rundata.MetricSchedLatencySum: waited,
			rundir.PoolKey(rundata.MetricPoolLimit, "b"): 10,
			rundir.PoolKey(rundata.MetricPoolInUse, "b"): 2, rundir.PoolKey(rundata.MetricPoolWaiting, "b"): 0,
			rundir.PoolKey(rundata.MetricPoolQueueLimit, "b"): 10}
		if poolFull && at.After(faultAt.Add(250*time.Millisecond)) {
			rejected += 5
			v[rundir.PoolKey(rundata.MetricPoolInUse, "b")] = 10
		}
		v[rundata.Key(rundata.MetricPoolRejected, rundata.L("pool", "b"), rundata.L("reason", "full"))] = rejected
		if runtimeCPU {
			v[rundata.MetricGoCPUGC], v[rundata.MetricGoCPUTotal], v[rundata.MetricGoCPUIdle] = gc, total, idle
		}
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: v})
	}
	return &Run{Data: r}
}

func TestCPUExhaustionRules(t *testing.T) {
	for _, tc := range []struct {
		name       string
		run        *Run
		want       string
		detailPart string
	}{
		{"busy CPU, runnable goroutines wait", cpuRunOf(0.7, 0.1, 25*time.Millisecond, false, true), ResourceCPU, "scheduling latency p99 25 ms"},
		{"GC takes a third of a busy CPU", cpuRunOf(0.7, 0.33, time.Millisecond, false, true), ResourceGC, "GC took 33 %"},
		{"CPU pinned at its GOMAXPROCS: the old cpu rule", cpuRunOf(0.95, 0.1, time.Millisecond, false, true), ResourceCPU, "service cpu 0.95 cores of 1"},
		{"waits but an idle CPU: not the CPU", cpuRunOf(0.2, 0.5, 25*time.Millisecond, false, true), ResourceNone, ""},
		{"small waits on a busy CPU", cpuRunOf(0.7, 0.1, 2*time.Millisecond, false, true), ResourceNone, ""},
		{"the pool fills after the CPU's waits began", cpuRunOf(0.7, 0.1, 25*time.Millisecond, true, true), ResourceCPU, ""},
		{"old data: no runtime CPU accounting", cpuRunOf(0.7, 0.33, 25*time.Millisecond, false, false), ResourceNone, ""},
		// A busy machine preempts an idle service now and then: each
		// baseline interval's p99 (its longest wait of ~100) is as long as
		// a saturated service's, its mean still far below.
		{"a noisy machine's long waits before the fault", cpuRunWith(0.7, 0.1, sched{25 * time.Millisecond, 150 * time.Microsecond, 0},
			sched{50 * time.Millisecond, 1500 * time.Microsecond, 0}, false, true), ResourceCPU, "0.6 goroutines waiting to run on average (baseline 0.06)"},
		{"long waits, but no more of them than before the fault", cpuRunWith(0.7, 0.1, sched{25 * time.Millisecond, 500 * time.Microsecond, 0},
			sched{25 * time.Millisecond, 1500 * time.Microsecond, 0}, false, true), ResourceNone, ""},
		// A CPU busy 70 % of the time in short bursts: twice as many waits,
		// each 7× the baseline's — the run queue 16× as long.
		{"more goroutines wait, each a little longer", cpuRunWith(0.7, 0.1, quietSched,
			sched{10 * time.Millisecond, 210 * time.Microsecond, 250}, false, true), ResourceCPU, "0.21 goroutines waiting to run on average (baseline 0.012)"},
		{"a mean ten times the baseline's but a short p99", cpuRunWith(0.7, 0.1, quietSched,
			sched{2 * time.Millisecond, 500 * time.Microsecond, 0}, false, true), ResourceNone, ""},
	} {
		e := exhaustionScan{tc.run.Data}.exhaustion(nil)
		if e.Resource != tc.want || !strings.Contains(e.Detail, tc.detailPart) {
			t.Errorf("%s: exhausted %q (%s) after %v s, want %q with %q", tc.name, e.Resource, e.Detail, e.AfterFaultS, tc.want, tc.detailPart)
		}
	}
}

func TestCPUExhaustionPoolFirst(t *testing.T) {
	r := cpuRunOf(0.7, 0.1, 25*time.Millisecond, true, true)
	// The CPU's waits start one sample later than the pool's rejections.
	for i := range r.Data.Metrics {
		if r.Data.Metrics[i].Time.Before(time.Unix(1004, 750e6)) {
			r.Data.Metrics[i].Values[rundata.MetricSchedLatencyP99] = 300e-6
			r.Data.Metrics[i].Values[rundata.MetricSchedLatencySum] = float64(i) * 100 * 30e-6
		}
	}
	if e := (exhaustionScan{r.Data}).exhaustion(nil); e.Resource != ResourcePool {
		t.Errorf("exhausted %q (%s), want the pool, full one sample before the CPU's waits", e.Resource, e.Detail)
	}
}

func TestWithCPURules(t *testing.T) {
	old := WithCPURules(ExhaustionRules, []*rundir.Run{cpuRunOf(0.7, 0.1, time.Millisecond, false, false).Data})
	if len(old) != len(ExhaustionRules) {
		t.Errorf("rules of old data: %d, want the %d of ExhaustionRules", len(old), len(ExhaustionRules))
	}
	got := WithCPURules(ExhaustionRules, []*rundir.Run{cpuRunOf(0.7, 0.1, time.Millisecond, false, true).Data})
	if len(got) != len(ExhaustionRules)+2 {
		t.Fatalf("rules: %d, want %d", len(got), len(ExhaustionRules)+2)
	}
	for i, r := range got {
		if strings.HasPrefix(r, "cpu: process_cpu") && (got[i+1] != SchedRule || got[i+2] != GCRule) {
			t.Errorf("rules after the cpu rule: %q, %q; want SchedRule, GCRule", got[i+1], got[i+2])
		}
	}
}

func TestCPUStats(t *testing.T) {
	ex := rundata.DefaultExpectations()
	r := cpuRunOf(0.7, 0.2, 25*time.Millisecond, false, true)
	s := Summarize(r.Data, ex)
	if s.CPU != nil {
		t.Fatalf("CPU numbers without expectations.cpu: %+v", s.CPU)
	}
	ex.CPU = &rundata.CPURoles{Condition: "payload"}
	c := Summarize(r.Data, ex).CPU
	if c == nil || math.Abs(float64(c.Cores)-0.7) > 0.01 || math.Abs(float64(c.GCShare)-0.2) > 0.02 ||
		float64(c.SchedP99Ms) != 25 || float64(c.GOMAXPROCS) != 1 || math.Abs(float64(c.BaselineCores)-0.05) > 0.01 || float64(c.PeakPoolShare) != 0.2 {
		t.Errorf("CPU numbers %+v, want 0.7 cores, GC 0.2, sched 25 ms, 1 CPU, baseline 0.05, peak pool 0.2", c)
	}
}

// TestSchedBaseline: the baseline's run queue is its median interval's — one
// long stall in it (a machine's preemption with goroutines runnable) does
// not lift it — and a run without a baseline phase (its phases not
// recorded, or the fault set by hand) takes every interval before the
// fault.
func TestSchedBaseline(t *testing.T) {
	ivs := cpuSeries{cpuRunOf(0.7, 0.1, 25*time.Millisecond, false, true).Data}.cpuIntervals()
	base := rundata.PhaseSpan{Name: rundata.PhaseBaseline, Start: time.Unix(1001, 0), End: time.Unix(1004, 0)}
	ivs[6].schedSum += 0.5 // 2 goroutines waiting over its 250 ms
	if m := schedBaseline(ivs, base, true, base.End); math.Abs(m-0.012) > 1e-9 {
		t.Errorf("baseline run queue %g, want 0.012 (100 waits of 30 µs in 250 ms), the stall left out", m)
	}
	r := cpuRunWith(0.7, 0.1, quietSched, sched{25 * time.Millisecond, 2500 * time.Microsecond, 0}, false, true)
	r.Data.Meta.Phases = r.Data.Meta.Phases[1:]
	if e := (exhaustionScan{r.Data}).exhaustion(nil); e.Resource != ResourceCPU || !strings.Contains(e.Detail, "(baseline 0.012)") {
		t.Errorf("without a baseline phase: exhausted %q (%s), want the CPU against the pre-fault run queue 0.012", e.Resource, e.Detail)
	}
}
