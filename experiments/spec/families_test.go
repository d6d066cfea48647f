package spec

import "testing"

// TestFamilies checks the list of families: each named once, each with
// at least one check.
func TestFamilies(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range families {
		if f.name == "" || seen[f.name] {
			t.Errorf("family %q: empty or listed twice", f.name)
		}
		seen[f.name] = true
		if f.validate == nil && f.warnings == nil && f.matrix == nil {
			t.Errorf("family %s: no validate, warnings or matrix check", f.name)
		}
	}
}
