package verdict

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestMatrixClaims: a run where the claim failed decides NOT SUPPORTED even
// beside a cell of only INVALID runs; SUPPORTED needs every cell judged.
func TestMatrixClaims(t *testing.T) {
	ex := rundata.DefaultExpectations()
	run := func(id, cond string, valid bool, rec *measure.RunRecovery) measure.RunSummary {
		return measure.RunSummary{ID: id, Condition: cond, Mode: "bulkhead", Status: rundata.StatusComplete, Valid: valid, Recovery: rec}
	}
	back := &measure.RunRecovery{Judged: true, Recovered: true, TimeT: 1, BoundT: 4}
	dead := &measure.RunRecovery{Judged: true, Recovered: false, TimeT: measure.Undefined, BoundT: 4,
		Endpoints: []measure.EndpointRecovery{{Endpoint: "a", Judged: true, LastErrorRate: 1, LastP99Ms: 2, LastP99RiseT: 0}}}
	unsure := &measure.RunRecovery{Judged: false, TimeT: measure.Undefined}
	for _, tt := range []struct {
		name string
		runs []measure.RunSummary
		want Outcome
		says string
	}{
		{"all back", []measure.RunSummary{run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, back)}, Supported, ""},
		{"one dead", []measure.RunSummary{run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, dead)}, NotSupported, "failing-r1: /a did not recover"},
		{"one of three repeats not back: the machine, or not always", []measure.RunSummary{run("slow-r1", "slow", true, back), run("slow-r2", "slow", true, dead), run("slow-r3", "slow", true, back)},
			Inconclusive, "100 % errors (in 1 of 3 runs of slow/bulkhead)"},
		{"two of three repeats not back", []measure.RunSummary{run("slow-r1", "slow", true, dead), run("slow-r2", "slow", true, dead), run("slow-r3", "slow", true, back)}, NotSupported, "slow-r1"},
		{"one dead beside an INVALID cell", []measure.RunSummary{run("slow-r1", "slow", false, back), run("failing-r1", "failing", true, dead)}, NotSupported, "failing-r1"},
		{"an INVALID cell and no failure", []measure.RunSummary{run("slow-r1", "slow", false, back), run("failing-r1", "failing", true, back)}, Invalid, "no valid run to judge — slow/bulkhead"},
		{"a run that cannot tell", []measure.RunSummary{run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, unsure)}, Inconclusive, "could not be judged in failing-r1"},
		{"no run judged", []measure.RunSummary{run("slow-r1", "slow", true, nil)}, Skipped, "no run it can judge"},
	} {
		v := recoveryVerdict(buildCells(tt.runs, ex), ex)
		if v.Outcome != tt.want || !strings.Contains(v.Reason, tt.says) {
			t.Errorf("%s: %s (%s), want %s with %q", tt.name, v.Outcome, v.Reason, tt.want, tt.says)
		}
	}
}
