package analysis

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// inflightRun is a run whose proxies report in-flight counts a(i), b(i) at
// 40 samples over a 10 s fault phase.
func inflightRun(a, b func(i int) float64) *Run {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A"}, {Name: "b", Dependency: "B"}},
		Phases:    []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: start, End: start.Add(10 * time.Second)}},
	}}
	for i := range 40 {
		t := start.Add(time.Duration(i)*250*time.Millisecond + time.Millisecond)
		r.Metrics = append(r.Metrics,
			rundata.MetricSample{Time: t, Component: "proxy-A", Values: map[string]float64{rundata.MetricProxyInflight: a(i)}},
			rundata.MetricSample{Time: t, Component: "proxy-B", Values: map[string]float64{rundata.MetricProxyInflight: b(i)}})
	}
	return r
}

// TestInferLimits: a shared pool of 20 shows as one cap on A+B, bulkheads of
// 10 as a cap on A alone; an unlimited service, or a cap that nobody ran
// into, shows none.
func TestInferLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(lo, hi int) func(int) float64 {
		return func(int) float64 { return float64(lo + rng.IntN(hi-lo+1)) }
	}
	ramp := func(top float64) func(int) float64 { // fills in 1 s, then sits at top (a permit free now and then)
		return func(i int) float64 {
			switch {
			case i < 4:
				return top * float64(i) / 4
			case i%7 == 0:
				return top - 1
			}
			return top
		}
	}
	shared := func(i int) float64 { // A takes what B does not hold: the sum is 20
		if i < 4 {
			return 5 * float64(i)
		}
		return 20 - float64(i%3)
	}
	sharedB := func(i int) float64 {
		if i < 4 {
			return 0
		}
		return float64(i % 3)
	}
	for _, tt := range []struct {
		name   string
		a, b   func(int) float64
		errors map[string]float64
		want   string
	}{
		{"shared pool of 20", shared, sharedB, map[string]float64{"a": 0.6, "b": 0.6}, "calls to A+B capped at 20 → one shared limit"},
		{"bulkheads of 10", ramp(10), noise(0, 4), map[string]float64{"a": 0.5, "b": 0}, "calls to A capped at 10"},
		// As measured: B's count nearly constant, so the sum sits at 12 ± 1.
		{"bulkheads of 10, B steady", ramp(10), func(i int) float64 { return float64(2 + i%11/10) }, map[string]float64{"a": 0.5, "b": 0}, "calls to A capped at 10"},
		{"A alone at the cap, B idle and fine", ramp(20), func(int) float64 { return 0 }, map[string]float64{"a": 0.5, "b": 0}, "calls to A capped at 20"},
		{"no limit: in flight varies", noise(30, 60), noise(0, 4), map[string]float64{"a": 0, "b": 0}, ""},
		{"a plateau but nothing failed", ramp(45), noise(0, 4), map[string]float64{"a": 0, "b": 0}, ""},
	} {
		got := describeInferred(inflightRun(tt.a, tt.b).inferLimits(tt.errors))
		if got != tt.want {
			t.Errorf("%s: inferred %q, want %q", tt.name, got, tt.want)
		}
	}
}
