package measure

import (
	"math"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestDegradedBySpans: one slow request in a window of 50 (its p99 is its
// maximum) cannot make the victim degraded: a span of at least
// MinSpanResults results must be; a real degradation is found within the
// fault, and one after the fault's end is not counted.
func TestDegradedBySpans(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Victim = "b"
	for _, tt := range []struct {
		name string
		p99  func(t float64) float64 // /b's window p99 at t s from the fault's end
		want float64                 // time to degrade in T; NaN: never
	}{
		{"healthy, one 58 ms request at 3 s into the fault", func(t float64) float64 {
			if t >= -7 && t < -6.75 {
				return 58
			}
			return 15
		}, math.NaN()},
		{"degraded from 1 s into the fault", func(t float64) float64 {
			if t >= -9 && t < 0 {
				return 240
			}
			return 15
		}, 5}, // the span of two windows (100 results) from 0.75 s holds the first slow one: 1.25 s = 5 T
		{"degraded only after the fault", func(t float64) float64 {
			if t >= 0.5 {
				return 240
			}
			return 15
		}, math.NaN()},
	} {
		r := amRun{win: func(ep string, t float64) (float64, rundata.Class, float64) {
			if ep == "b" {
				return 0, rundata.ClassRejected, tt.p99(t)
			}
			return 0, rundata.ClassRejected, 15
		}}.build()
		got, ok := r.timeToDegrade(ex)
		if !ok {
			got = math.NaN()
		}
		if !(math.IsNaN(got) && math.IsNaN(tt.want)) && math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: time to degrade %v T, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDegradedAgainstTheControl: a span of the fault run is degraded only
// beyond the control's noise: the same run as its own control never is.
func TestDegradedAgainstTheControl(t *testing.T) {
	ex := rundata.DefaultExpectations()
	s := RunSummary{VictimSpans: []SpanStat{{EndT: 2, P99Ratio: 3.5, ErrorRate: 0}, {EndT: 4, P99Ratio: 8, ErrorRate: 0.2}}}
	for _, tt := range []struct {
		name    string
		control DegradeControl
		want    float64
	}{
		{"no control", DegradeControl{}, 2},
		{"a noisy control", DegradeControl{P99Ratio: 4}, 4},
		{"itself as control", ControlOf([]RunSummary{s}), math.NaN()},
	} {
		got := float64(TimeToDegradeAgainst(s, ex, tt.control))
		if !(math.IsNaN(got) && math.IsNaN(tt.want)) && got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPoolFirst: EXHAUSTED's reading of the first resource — an exported
// pool is the pool; a limit inferred from outside stands for one when it
// matches a declared pool or none is declared (a cap matching no declared
// pool cannot be told apart); a service's only connection pool is its
// bulkhead.
func TestPoolFirst(t *testing.T) {
	inferred := []InferredLimit{{Dependencies: []string{"A", "B"}, Limit: 20, AfterFaultS: 0.3}}
	for _, tt := range []struct {
		name     string
		resource string
		pools    []rundata.PoolInfo
		connMax  float64 // an exported connection pool "agent" of this limit; 0 none
		external bool
		want     string
	}{
		{"an exported pool", ResourcePool, nil, 0, false, PoolFirstYes},
		{"inferred, nothing declared", ResourcePoolInferred, nil, 0, true, PoolFirstYes},
		{"inferred, a declared pool of its size", ResourcePoolInferred, []rundata.PoolInfo{{Name: "shared", Limit: 20}}, 0, true, PoolFirstYes},
		{"inferred, no declared pool of its size", ResourcePoolInferred, []rundata.PoolInfo{{Name: "a", Limit: 6}, {Name: "b", Limit: 6}}, 0, true, PoolFirstUnknown},
		{"inferred, a connection pool of the same limit and nothing declared", ResourcePoolInferred, nil, 20, true, PoolFirstYes},
		{"the only connection pool of a service without worker pools", ResourceConnections, nil, 20, true, PoolFirstYes},
		{"a connection pool under declared pools of other sizes", ResourceConnections, []rundata.PoolInfo{{Name: "a", Limit: 10}}, 8, true, PoolFirstNo},
		{"connections of the built-in service", ResourceConnections, nil, 8, false, PoolFirstNo},
		{"cpu", ResourceCPU, nil, 0, true, PoolFirstNo},
		{"not observable", ResourceNotObservable, nil, 0, true, PoolFirstUnknown},
	} {
		r := amRun{noPools: true}.build()
		r.Data.Meta.External, r.Data.Meta.Pools = tt.external, tt.pools
		if tt.connMax > 0 {
			r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: amT0, Component: rundata.ServiceComponent,
				Values: map[string]float64{rundata.Key(rundata.MetricConnPoolLimit, rundata.L("pool", "agent")): tt.connMax}})
		}
		e := Exhaustion{Resource: tt.resource}
		if tt.resource == ResourceConnections {
			e.Ranked = []ResourceHit{{Resource: ResourceConnections, Name: "agent"}}
		}
		if got, why := (poolFirstRule{r.Data}).poolFirst(e, inferred); got != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, got, why, tt.want)
		}
	}
}
