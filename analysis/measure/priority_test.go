package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// priorityRun is a run of /checkout (critical) and /recommend (sheddable)
// whose fault phase lasts 4 s from t0+1s: the service's samples every
// second come from sample(i, t), i = 0..6.
func priorityRun(pools []rundata.PoolInfo, sample func(i int) map[string]float64) *Run {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	pool := func(ep string) string {
		for _, p := range pools {
			for _, e := range p.Endpoints {
				if e == ep {
					return p.Name
				}
			}
		}
		return ""
	}
	r := &rundir.Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "checkout", Dependency: "catalog", Pool: pool("checkout")}, {Name: "recommend", Dependency: "catalog", Pool: pool("recommend")}},
		Pools:     pools,
		Phases:    []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: t0.Add(time.Second), End: t0.Add(5 * time.Second)}},
	}}
	for i := 0; i <= 6; i++ {
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: t0.Add(time.Duration(i) * time.Second), Component: rundata.ServiceComponent, Values: sample(i)})
	}
	return &Run{Data: r}
}

// TestPriorityStats: the numbers of the priority claim from the service's
// samples — the reserved permits and the mean of those idle (the rate of
// their time integral over the fault phase), the critical class's calls
// in flight, its demand by Little's law from its rate and call time; for a
// pool of the victim's own, its size and free permits; for a pool without
// a reservation, nothing held and nothing idle.
func TestPriorityStats(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Victim, ex.Culprit = "checkout", "recommend"
	ex.Priority = &rundata.PriorityRoles{Condition: "surge", Reserved: "reserved", Unreserved: "shared"}
	victim := EndpointStats{Endpoint: "checkout", FaultCounts: rundata.Counts{rundata.ClassOK: 120}}
	culprit := EndpointStats{Endpoint: "recommend", FaultCounts: rundata.Counts{rundata.ClassOK: 560, rundata.ClassRejected: 640}}
	calls := func(i int, v map[string]float64) map[string]float64 {
		dep := rundata.L("dependency", "checkout")
		// 30 calls a second of 0.1 s each.
		v[rundata.Key(rundata.MetricDepDurationCount, dep)] = float64(30 * i)
		v[rundata.Key(rundata.MetricDepDurationSum, dep)] = 3 * float64(i)
		return v
	}
	shared := []rundata.PoolInfo{{Name: "shared", Limit: 24, Endpoints: []string{"checkout", "recommend"}}}
	crit := rundata.Key(rundata.MetricPriorityInflight, rundata.L("pool", "shared"), rundata.L("class", rundata.PriorityCritical))

	reserved := priorityStats(priorityRun(shared, func(i int) map[string]float64 {
		return calls(i, map[string]float64{
			rundir.PoolKey(rundata.MetricPoolLimit, "shared"):           24,
			rundir.PoolKey(rundata.MetricPriorityReserved, "shared"):    10,
			rundir.PoolKey(rundata.MetricPriorityIdleSeconds, "shared"): 6.5 * float64(i), // 6.5 permits idle all along
			crit: 3.5,
		})
	}).Data, ex, victim, culprit)
	want := PriorityRun{Pool: "shared", Size: 24, Reserved: 10, CriticalPerS: 30, CriticalCallMs: 100, CriticalDemand: 3, CriticalInFlight: 3.5,
		IdleReserved: 6.5, PredictedIdle: 7, SheddableRejectedShare: 640.0 / 1200, SheddableRejectedPerS: 160}
	checkPriorityRun(t, "reserved", *reserved, want)

	own := priorityStats(priorityRun([]rundata.PoolInfo{{Name: "checkout", Limit: 10, Endpoints: []string{"checkout"}}, {Name: "recommend", Limit: 14, Endpoints: []string{"recommend"}}},
		func(i int) map[string]float64 {
			return calls(i, map[string]float64{
				rundir.PoolKey(rundata.MetricPoolLimit, "checkout"): 10,
				rundir.PoolKey(rundata.MetricPoolInUse, "checkout"): 2.5,
			})
		}).Data, ex, victim, culprit)
	want = PriorityRun{Pool: "checkout", Size: 10, Reserved: 10, Partition: true, CriticalPerS: 30, CriticalCallMs: 100, CriticalDemand: 3, CriticalInFlight: 2.5,
		IdleReserved: 7.5, PredictedIdle: 7, SheddableRejectedShare: 640.0 / 1200, SheddableRejectedPerS: 160}
	checkPriorityRun(t, "a pool of its own", *own, want)

	none := priorityStats(priorityRun(shared, func(i int) map[string]float64 {
		return calls(i, map[string]float64{rundir.PoolKey(rundata.MetricPoolLimit, "shared"): 24, rundir.PoolKey(rundata.MetricPoolInUse, "shared"): 24})
	}).Data, ex, victim, culprit)
	want = PriorityRun{Pool: "shared", Size: 24, Reserved: 0, CriticalPerS: 30, CriticalCallMs: 100, CriticalDemand: 3, CriticalInFlight: Undefined,
		IdleReserved: 0, PredictedIdle: 0, SheddableRejectedShare: 640.0 / 1200, SheddableRejectedPerS: 160}
	checkPriorityRun(t, "no reservation", *none, want)

	var s RunSummary
	priorityFamily(&rundir.Run{}, &s, rundata.DefaultExpectations())
	if s.Priority != nil {
		t.Errorf("without expectations.priority: %+v, want none", s.Priority)
	}
}

func checkPriorityRun(t *testing.T, name string, got, want PriorityRun) {
	t.Helper()
	same := func(a, b Num) bool {
		return math.IsNaN(float64(a)) && math.IsNaN(float64(b)) || math.Abs(float64(a-b)) < 1e-9
	}
	if got.Pool != want.Pool || got.Size != want.Size || got.Partition != want.Partition ||
		!same(got.Reserved, want.Reserved) || !same(got.CriticalPerS, want.CriticalPerS) || !same(got.CriticalCallMs, want.CriticalCallMs) ||
		!same(got.CriticalDemand, want.CriticalDemand) || !same(got.CriticalInFlight, want.CriticalInFlight) || !same(got.IdleReserved, want.IdleReserved) ||
		!same(got.PredictedIdle, want.PredictedIdle) || !same(got.SheddableRejectedShare, want.SheddableRejectedShare) || !same(got.SheddableRejectedPerS, want.SheddableRejectedPerS) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
	}
}

// TestRateOver: a counter's increase per second between the samples at or
// before each end, undefined without two distinct ones.
func TestRateOver(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := []rundir.Point{{Time: t0, Value: 0}, {Time: t0.Add(time.Second), Value: 2}, {Time: t0.Add(3 * time.Second), Value: 10}}
	for _, tc := range []struct {
		from, to time.Duration
		want     float64
	}{
		{0, 3 * time.Second, 10.0 / 3},
		{1500 * time.Millisecond, 3500 * time.Millisecond, 4}, // samples at 1 s and 3 s
		{-time.Second, 3 * time.Second, math.NaN()},           // nothing at or before from
		{1200 * time.Millisecond, 1500 * time.Millisecond, math.NaN()},
	} {
		got := float64(rateOver(s, t0.Add(tc.from), t0.Add(tc.to)))
		if !(math.IsNaN(tc.want) && math.IsNaN(got)) && math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("rateOver(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}
