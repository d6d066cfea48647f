package rundir

import (
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestCombineSamples: a fleet's sample sums what adds up, takes the largest
// of per-process levels, and calls a pool exhausted only once every
// instance's is.
func TestCombineSamples(t *testing.T) {
	inUse := rundata.Key(rundata.MetricPoolInUse, rundata.L("pool", "a"))
	since := rundata.Key(rundata.MetricPoolExhaustedSince, rundata.L("pool", "a"))
	for _, tc := range []struct {
		name string
		key  string
		vals []float64 // one per instance sampled
		n    int       // instances in the fleet
		want float64
	}{
		{"in use sums", inUse, []float64{3, 2, 1}, 3, 6},
		{"a counter sums", rundata.Key(rundata.MetricDepRequests, rundata.L("dependency", "a")), []float64{10, 20}, 2, 30},
		{"cpu seconds sum", rundata.MetricCPUSeconds, []float64{1.5, 2}, 2, 3.5},
		{"a p99 is the largest", rundata.MetricSchedLatencyP99, []float64{0.001, 0.004, 0.002}, 3, 0.004},
		{"GOMAXPROCS adds up (the summed CPU seconds are judged against it)", rundata.MetricGoMaxProcs, []float64{2, 2}, 2, 4},
		{"exhausted when all are: the latest", since, []float64{100, 102}, 2, 102},
		{"one not exhausted: not", since, []float64{100, 0}, 2, 0},
		{"one not sampled: not", since, []float64{100, 101}, 3, 0},
		{"connections exhausted when all are", rundata.Key(rundata.MetricConnPoolExhaustedSince, rundata.L("pool", "shared")), []float64{100, 0}, 2, 0},
	} {
		var samples []rundata.MetricSample
		for i, v := range tc.vals {
			samples = append(samples, rundata.MetricSample{Component: rundata.InstanceComponent(i + 1), Values: map[string]float64{tc.key: v}})
		}
		got := combineSamples(time.Unix(1, 0), samples, tc.n)
		if got.Component != rundata.ServiceComponent || got.Values[tc.key] != tc.want {
			t.Errorf("%s: %s over %v of %d = %v (component %s), want %v", tc.name, tc.key, tc.vals, tc.n, got.Values[tc.key], got.Component, tc.want)
		}
	}
}

// fleetRun is a run of two instances sampled twice, with a pool a of 3 each.
func fleetRun() *Run {
	t0 := time.Unix(1000, 0)
	key := rundata.Key(rundata.MetricPoolInUse, rundata.L("pool", "a"))
	r := &Run{Meta: rundata.RunMeta{Instances: []string{"service-1", "service-2"},
		Pools: []rundata.PoolInfo{{Name: "a", Limit: 6, Queue: 2, Endpoints: []string{"a"},
			PredictedDemand: map[string]float64{rundata.PhaseFault: 4}}}}}
	for i, v := range [][2]float64{{1, 2}, {3, 3}} {
		at := t0.Add(time.Duration(i) * time.Second)
		r.Metrics = append(r.Metrics,
			rundata.MetricSample{Time: at, Component: "service-1", Values: map[string]float64{key: v[0]}},
			rundata.MetricSample{Time: at, Component: "service-2", Values: map[string]float64{key: v[1]}},
			rundata.MetricSample{Time: at, Component: "proxy-A", Values: map[string]float64{rundata.MetricProxyInflight: v[0] + v[1]}})
	}
	return r
}

// TestFleetViewAndInstanceView: Load's fleet view puts the instances' sum
// under the service, once per tick and in time order; an instance's view is
// that instance alone as the service, with its share of the pools.
func TestFleetViewAndInstanceView(t *testing.T) {
	r := fleetRun()
	addFleetView(r)
	key := rundata.Key(rundata.MetricPoolInUse, rundata.L("pool", "a"))
	if got := r.Metric(rundata.ServiceComponent, key); len(got) != 2 || got[0].Value != 3 || got[1].Value != 6 {
		t.Fatalf("fleet's in use %v, want 3 then 6", got)
	}
	for i := 1; i < len(r.Metrics); i++ {
		if r.Metrics[i].Time.Before(r.Metrics[i-1].Time) {
			t.Fatalf("samples out of time order at %d", i)
		}
	}
	n := len(r.Metrics)
	addFleetView(r) // already there: nothing added
	if len(r.Metrics) != n {
		t.Errorf("a second fleet view added %d samples", len(r.Metrics)-n)
	}
	v := InstanceView(r, "service-2")
	if got := v.Metric(rundata.ServiceComponent, key); len(got) != 2 || got[0].Value != 2 || got[1].Value != 3 {
		t.Errorf("service-2's view: in use %v, want 2 then 3", got)
	}
	if got := v.Metric(rundata.ProxyComponent("A"), rundata.MetricProxyInflight); len(got) != 2 {
		t.Errorf("service-2's view lost the proxy's samples: %v", got)
	}
	p := v.Meta.Pools[0]
	if p.Limit != 3 || p.Queue != 1 || p.PredictedDemand[rundata.PhaseFault] != 2 || r.Meta.Pools[0].Limit != 6 {
		t.Errorf("service-2's pool %+v (fleet's %+v), want limit 3, queue 1, demand 2 and the fleet's untouched", p, r.Meta.Pools[0])
	}
	one := &Run{Metrics: []rundata.MetricSample{{Component: rundata.ServiceComponent, Values: map[string]float64{key: 1}}}}
	addFleetView(one)
	if len(one.Metrics) != 1 {
		t.Errorf("a run of one instance got a fleet view")
	}
}

// TestProcessPerPoolView: a run of a process per pool (InstanceEndpoints)
// is read as one service: each pool is its process's, so the combined
// view's pool is that process's alone and its RSS the processes' sum; a
// process's view keeps its own pools whole (limit, queue, demand) and none
// of the other's.
func TestProcessPerPoolView(t *testing.T) {
	t0 := time.Unix(1000, 0)
	inA := rundata.Key(rundata.MetricPoolInUse, rundata.L("pool", "a"))
	inB := rundata.Key(rundata.MetricPoolInUse, rundata.L("pool", "b"))
	r := &Run{Meta: rundata.RunMeta{Instances: []string{"service-1", "service-2"},
		InstanceEndpoints: map[string][]string{"service-1": {"a"}, "service-2": {"b"}},
		Pools: []rundata.PoolInfo{
			{Name: "a", Limit: 6, Queue: 6, Endpoints: []string{"a"}, PredictedDemand: map[string]float64{rundata.PhaseFault: 2}},
			{Name: "b", Limit: 20, Queue: 20, Endpoints: []string{"b"}, PredictedDemand: map[string]float64{rundata.PhaseFault: 4}}}},
		Metrics: []rundata.MetricSample{
			{Time: t0, Component: "service-1", Values: map[string]float64{inA: 5, rundata.MetricResidentBytes: 30 << 20}},
			{Time: t0, Component: "service-2", Values: map[string]float64{inB: 3, rundata.MetricResidentBytes: 28 << 20}}}}
	addFleetView(r)
	if a, b, rss := r.Metric(rundata.ServiceComponent, inA), r.Metric(rundata.ServiceComponent, inB), r.Metric(rundata.ServiceComponent, rundata.MetricResidentBytes); len(a) != 1 || a[0].Value != 5 || b[0].Value != 3 || rss[0].Value != 58<<20 {
		t.Errorf("combined view: a %v, b %v, rss %v; want 5, 3 and 58 MiB", a, b, rss)
	}
	v := InstanceView(r, "service-2")
	if len(v.Meta.Pools) != 1 || v.Meta.Pools[0].Name != "b" || v.Meta.Pools[0].Limit != 20 || v.Meta.Pools[0].Queue != 20 || v.Meta.Pools[0].PredictedDemand[rundata.PhaseFault] != 4 {
		t.Errorf("service-2's pools %+v, want b alone, whole", v.Meta.Pools)
	}
	if got := v.Metric(rundata.ServiceComponent, inB); len(got) != 1 || got[0].Value != 3 || len(v.Metric(rundata.ServiceComponent, inA)) != 0 {
		t.Errorf("service-2's view: b in use %v, a's samples %v", got, v.Metric(rundata.ServiceComponent, inA))
	}
	if v.Meta.InstanceEndpoints != nil || v.Meta.Instances != nil {
		t.Errorf("a process's view still names processes: %v %v", v.Meta.Instances, v.Meta.InstanceEndpoints)
	}
}
