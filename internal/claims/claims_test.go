package claims

import (
	"slices"
	"testing"
)

// TestRegistry: every claim has a name of its own, a known family and needs
// that ask for something; the families partition the registry in report
// order; Lookup finds each claim and nothing else.
func TestRegistry(t *testing.T) {
	families := []Family{Hypothesis, Aftermath, Policy, Sizing, Conns, CPU, Fleet, Priority, RateLimit, Memory, Tenants, Jobs, Processes}
	seen := map[string]bool{}
	for i, c := range All() {
		switch {
		case c.Name == "":
			t.Errorf("claim %d has no name", i)
		case seen[c.Name]:
			t.Errorf("claim %s is registered twice", c.Name)
		case !slices.Contains(families, c.Family):
			t.Errorf("claim %s: unknown family %q", c.Name, c.Family)
		case c.Needs.Zero():
			t.Errorf("claim %s needs nothing: name its sections, its cells' roles or what it must see", c.Name)
		case len(c.Needs.Conditions) > 0 != (len(c.Needs.Modes) > 0):
			t.Errorf("claim %s compares conditions %v × modes %v: a cell needs both", c.Name, c.Needs.Conditions, c.Needs.Modes)
		}
		seen[c.Name] = true
		if got, ok := Lookup(c.Name); !ok || got.Name != c.Name {
			t.Errorf("Lookup(%s) = %v, %v", c.Name, got, ok)
		}
	}
	if _, ok := Lookup("P5"); ok {
		t.Error("Lookup(P5) found a claim")
	}
	var byFamily []string
	for _, f := range families {
		if len(Of(f)) == 0 {
			t.Errorf("family %s has no claim", f)
		}
		byFamily = append(byFamily, Of(f)...)
	}
	if !slices.Equal(byFamily, Names()) {
		t.Errorf("claims family by family %v, want the registry's order %v: a family's claims are registered together", byFamily, Names())
	}
}

// TestAllIsACopy: a caller cannot change the registry through All.
func TestAllIsACopy(t *testing.T) {
	a := All()
	a[0].Name = "changed"
	if All()[0].Name == "changed" {
		t.Error("All returned the registry itself")
	}
}

func TestSectionString(t *testing.T) {
	if got, want := ConnsSizedRuns.String(), "expectations.conns names its sized and over modes"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
