package verdict

import (
	"slices"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestSynthConnectionsFirst runs the whole analysis on synthetic run data
// of a slow A behind bulkheads of 10 + 10 whose service shares 3
// connections: the connections ran out at fault start, before A's
// bulkhead; the summary names them and lists the measured rule.
func TestSynthConnectionsFirst(t *testing.T) {
	dir := synth.Write(t, t.TempDir(), "", []synth.Run{
		{Cond: "slow", Mode: "bulkhead", Repeat: 1, Seed: 1, Conns: 3},
		{Cond: "slow", Mode: "bulkhead", Repeat: 2, Seed: 2},
	})
	exp, err := rundir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := Evaluate(exp, rundata.DefaultExpectations())
	if !slices.Contains(s.ExhaustionRules, measure.ConnPoolRule) {
		t.Errorf("rules lack the measured connections rule: %q", s.ExhaustionRules)
	}
	for _, tc := range []struct {
		run, resource string
		at            float64
	}{{"slow-bulkhead-r1", measure.ResourceConnections, 0}, {"slow-bulkhead-r2", measure.ResourcePool, 0.25}} {
		i := slices.IndexFunc(s.Runs, func(r measure.RunSummary) bool { return r.ID == tc.run })
		if i < 0 {
			t.Fatalf("no run %s", tc.run)
		}
		if e := s.Runs[i].Exhausted; e.Resource != tc.resource || float64(e.AfterFaultS) != tc.at {
			t.Errorf("%s: exhausted %s after %v s (%s), want %s after %v s", tc.run, e.Resource, e.AfterFaultS, e.Detail, tc.resource, tc.at)
		}
	}
}
