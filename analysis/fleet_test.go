package analysis

import (
	"math"
	"path/filepath"
	"strings"
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
	if got := r.metric(rundata.ServiceComponent, key); len(got) != 2 || got[0].v != 3 || got[1].v != 6 {
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
	v := instanceView(r, "service-2")
	if got := v.metric(rundata.ServiceComponent, key); len(got) != 2 || got[0].v != 2 || got[1].v != 3 {
		t.Errorf("service-2's view: in use %v, want 2 then 3", got)
	}
	if got := v.metric(rundata.ProxyComponent("A"), rundata.MetricProxyInflight); len(got) != 2 {
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

// TestFleetPrediction: Little's law for a fleet, below and above the
// dependency's capacity and with unlimited capacity.
func TestFleetPrediction(t *testing.T) {
	for _, tc := range []struct {
		nl, lambda, s, c float64
		k, w             float64
	}{
		{3, 150, 0.04, 4, 3, 0.04},            // the bulkhead fills, below capacity
		{6, 150, 0.04, 4, 6, 0.06},            // above capacity: queueing, W = K·s/C
		{12, 150, 0.04, 4, 12, 0.12},          // past T (not capped here)
		{12, 150, 0.04, 16, 6, 0.04},          // capacity enough: demand λ·s
		{12, 50, 0.04, 4, 2, 0.04},            // demand below both
		{12, 150, 0.04, math.NaN(), 6, 0.04},  // unlimited
		{4, 150, 0.04, 4, 4, 0.04},            // the budget: exactly C
		{12, 120, 0.04, 4, 12, 0.04 * 12 / 4}, // λ·s = 4.8 > C: saturated
	} {
		k, w := fleetPrediction(tc.nl, tc.lambda, tc.s, tc.c)
		if math.Abs(k-tc.k) > 1e-9 || math.Abs(w-tc.w) > 1e-9 {
			t.Errorf("N·L %v, λ %v, s %v, C %v: K %v W %v, want %v and %v", tc.nl, tc.lambda, tc.s, tc.c, k, w, tc.k, tc.w)
		}
	}
}

// TestFleetVerdictsOnReference: the committed reference supports both
// fleet claims; judged as the budget, the fleet of 4 × 3 (N·L = 12 > C = 4)
// fails FLEET-BUDGET on what it measured (A queued, slowed and timed out);
// a "comparison" of one fleet cannot decide FLEET-MULTIPLIES; and an
// experiment without fleet roles has no fleet verdicts.
func TestFleetVerdictsOnReference(t *testing.T) {
	exp, err := Load(filepath.Join("..", "results", "reference-fleet-multiplication"))
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(s Summary, name string) (Outcome, string) {
		for _, v := range s.Verdicts {
			if v.Name == name {
				return v.Outcome, v.Reason
			}
		}
		return "", ""
	}
	ex := exp.Expectations
	s := Evaluate(exp, ex)
	for _, v := range []string{"FLEET-MULTIPLIES", "FLEET-BUDGET"} {
		if o, why := outcome(s, v); o != Supported {
			t.Errorf("reference: %s %s (%s), want SUPPORTED", v, o, why)
		}
	}

	over := *ex.Fleet
	over.Budget = "fleet.instances4"
	ex2 := ex
	ex2.Fleet = &over
	o, why := outcome(Evaluate(exp, ex2), "FLEET-BUDGET")
	if o != NotSupported {
		t.Fatalf("4 × 3 judged as the budget: %s (%s), want NOT SUPPORTED", o, why)
	}
	for _, m := range []string{"N·L ÷ C", "concurrency on the dependency ÷ C", "call time ÷ s", "results the dependency failed"} {
		if !strings.Contains(why, m) {
			t.Errorf("4 × 3 judged as the budget: reason %q does not name %q", why, m)
		}
	}

	one := *ex.Fleet
	one.Modes = []string{"budget"}
	ex3 := ex
	ex3.Fleet = &one
	if o, why := outcome(Evaluate(exp, ex3), "FLEET-MULTIPLIES"); o != Inconclusive {
		t.Errorf("one fleet compared: FLEET-MULTIPLIES %s (%s), want INCONCLUSIVE", o, why)
	}

	ex4 := ex
	ex4.Fleet = nil
	s4 := Evaluate(exp, ex4)
	if o, _ := outcome(s4, "FLEET-MULTIPLIES"); o != "" {
		t.Errorf("no fleet roles: FLEET-MULTIPLIES %s, want no verdict", o)
	}
	if len(s4.Runs[1].Instances) != 2 {
		t.Errorf("no fleet roles: run %s has %d instances' numbers, want 2 (a fleet's instances are always shown)", s4.Runs[1].ID, len(s4.Runs[1].Instances))
	}
}
