package verdict

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
)

// TestFleetVerdictsOnReference: the committed reference supports both
// fleet claims; judged as the budget, the fleet of 4 × 3 (N·L = 12 > C = 4)
// fails FLEET-BUDGET on what it measured (A queued, slowed and timed out);
// a "comparison" of one fleet cannot decide FLEET-MULTIPLIES; and an
// experiment without fleet roles has no fleet verdicts.
func TestFleetVerdictsOnReference(t *testing.T) {
	exp, err := rundir.Load(filepath.Join("..", "..", "results", "reference-fleet-multiplication"))
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

// TestOffKBeyondSampling: a fleet's concurrency on the dependency is the
// mean of a gauge read every sampling interval; the part of its miss from
// K that two standard errors of those samples cover does not count. The
// CI run that asked for it: N = 1, K = 3, 8 samples over a 2 s fault
// averaging 2.125 (0.29 off) with a standard error near 0.17 — a correct
// fleet. A fleet whose instances do not multiply (3 calls where K = 12)
// is off far beyond its samples' scatter.
func TestOffKBeyondSampling(t *testing.T) {
	for _, tt := range []struct {
		name        string
		dep, k, se  float64
		want, delta float64
	}{
		{"a correct fleet, 8 samples", 2.125, 3, 0.17, 0.1783, 1e-3},
		{"the same without a standard error", 2.125, 3, math.NaN(), 0.2917, 1e-3},
		{"within its samples' scatter", 2.9, 3, 0.1, 0, 0},
		{"not multiplied", 3, 12, 0.3, 0.7, 1e-9},
	} {
		f := measure.FleetRun{ConcurrencyOnDep: measure.Num(tt.dep), PredictedConcurrency: measure.Num(tt.k), ConcurrencyOnDepSE: measure.Num(tt.se)}
		if got := offK(f); got < tt.want-tt.delta || got > tt.want+tt.delta {
			t.Errorf("%s: off K %v, want %v", tt.name, got, tt.want)
		}
		if (offK(f) <= 0.25) != (tt.name != "the same without a standard error" && tt.name != "not multiplied") {
			t.Errorf("%s: off K %v against the tolerance 0.25", tt.name, offK(f))
		}
	}
}
