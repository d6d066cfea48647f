package measure

import (
	"reflect"
	"testing"
)

// TestRunFamiliesOnce: each run family is listed once (two merges that
// each added a family once listed six of them twice, each computed twice
// per run).
func TestRunFamiliesOnce(t *testing.T) {
	seen := map[uintptr]int{}
	for i, f := range runFamilies {
		p := reflect.ValueOf(f).Pointer()
		if j, ok := seen[p]; ok {
			t.Errorf("runFamilies[%d] is runFamilies[%d] again", i, j)
		}
		seen[p] = i
	}
}
