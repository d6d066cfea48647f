package verdict

import (
	"path/filepath"
	"strings"
	"testing"

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
