package measure

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestUsableAgrees: a run summary is usable exactly when its run is, in
// every state that makes a run unusable.
func TestUsableAgrees(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*rundir.Run)
		want bool
	}{
		{"complete and valid", func(*rundir.Run) {}, true},
		{"INVALID", func(r *rundir.Run) { r.Meta.Valid = false }, false},
		{"interrupted", func(r *rundir.Run) { r.Meta.Status = rundata.StatusInterrupted }, false},
		{"a file missing", func(r *rundir.Run) { r.Problems = []string{"windows.jsonl missing"} }, false},
		{"damaged", func(r *rundir.Run) { r.Damaged = []string{"windows.jsonl:3: count below zero"} }, false},
	} {
		r := amRun{win: drained}.build()
		tt.edit(r.Data)
		s := Summarize(r.Data, rundata.DefaultExpectations())
		if r.Data.Usable() != tt.want || s.Usable() != tt.want {
			t.Errorf("%s: run usable %t, summary usable %t, want %t", tt.name, r.Data.Usable(), s.Usable(), tt.want)
		}
	}
}
