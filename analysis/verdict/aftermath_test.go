package verdict

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestMatrixClaims: a run where the claim certainly failed (an endpoint
// still failing at the end) decides NOT SUPPORTED even beside healthy cells
// and a cell of only INVALID runs; a violation with a doubt (back in full,
// only late; still slow, not failing) is INCONCLUSIVE alone and NOT
// SUPPORTED when it repeats in most runs of a cell; SUPPORTED needs every
// cell judged.
func TestMatrixClaims(t *testing.T) {
	ex := rundata.DefaultExpectations()
	run := func(id, cond string, valid bool, rec *measure.RunRecovery) measure.RunSummary {
		return measure.RunSummary{ID: id, Condition: cond, Mode: "bulkhead", Status: rundata.StatusComplete, Valid: valid, Recovery: rec}
	}
	back := &measure.RunRecovery{Judged: true, Recovered: true, TimeT: 1, BoundT: 4}
	dead := &measure.RunRecovery{Judged: true, Recovered: false, TimeT: measure.Undefined, BoundT: 4,
		Endpoints: []measure.EndpointRecovery{{Endpoint: "a", Judged: true, TimeT: measure.Undefined, LastErrorRate: 1, LastP99Ms: 2, LastP99RiseT: 0}}}
	late := &measure.RunRecovery{Judged: true, Recovered: false, TimeT: measure.Undefined, BoundT: 4,
		Endpoints: []measure.EndpointRecovery{{Endpoint: "a", Judged: true, TimeT: 5.5, LastErrorRate: 0, LastP99Ms: 12, LastP99RiseT: 0}}}
	slowAtEnd := &measure.RunRecovery{Judged: true, Recovered: false, TimeT: measure.Undefined, BoundT: 4,
		Endpoints: []measure.EndpointRecovery{{Endpoint: "a", Judged: true, TimeT: measure.Undefined, LastErrorRate: 0.002, LastP99Ms: 200, LastP99RiseT: 0.75}}}
	unsure := &measure.RunRecovery{Judged: false, TimeT: measure.Undefined}
	for _, tt := range []struct {
		name string
		runs []measure.RunSummary
		want Outcome
		says string
	}{
		{"all back", []measure.RunSummary{run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, back)}, Supported, ""},
		{"one dead", []measure.RunSummary{run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, dead)}, NotSupported, "failing-r1: /a did not recover"},
		{"one dead among healthy and slow cells", []measure.RunSummary{run("healthy-r1", "healthy", true, back), run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, dead),
			run("healthy-r2", "healthy", true, back), run("slow-r2", "slow", true, back), run("failing-r2", "failing", true, back)}, NotSupported, "failing-r1: /a did not recover"},
		{"one of three repeats still failing: a counterexample", []measure.RunSummary{run("slow-r1", "slow", true, back), run("slow-r2", "slow", true, dead), run("slow-r3", "slow", true, back)},
			NotSupported, "slow-r2: /a did not recover"},
		{"one of three repeats back late: the machine, or not always", []measure.RunSummary{run("slow-r1", "slow", true, back), run("slow-r2", "slow", true, late), run("slow-r3", "slow", true, back)},
			Inconclusive, "slow-r2: /a did not recover within the bound (back after 5.5 T)"},
		{"one run back late", []measure.RunSummary{run("slow-r1", "slow", true, late)}, Inconclusive, "only late"},
		{"two of three repeats back late", []measure.RunSummary{run("slow-r1", "slow", true, late), run("slow-r2", "slow", true, late), run("slow-r3", "slow", true, back)},
			NotSupported, "(in 2 of 3 runs of slow/bulkhead)"},
		{"still slow, not failing, at the end", []measure.RunSummary{run("slow-r1", "slow", true, slowAtEnd), run("failing-r1", "failing", true, back)},
			Inconclusive, "a longer recovery phase would tell"},
		{"two of three repeats not back", []measure.RunSummary{run("slow-r1", "slow", true, dead), run("slow-r2", "slow", true, dead), run("slow-r3", "slow", true, back)}, NotSupported, "slow-r1"},
		{"one dead beside an INVALID cell", []measure.RunSummary{run("slow-r1", "slow", false, back), run("failing-r1", "failing", true, dead)}, NotSupported, "failing-r1"},
		{"an INVALID cell and no failure", []measure.RunSummary{run("slow-r1", "slow", false, back), run("failing-r1", "failing", true, back)}, Invalid, "no valid run to judge — slow/bulkhead"},
		{"a run that cannot tell", []measure.RunSummary{run("slow-r1", "slow", true, back), run("failing-r1", "failing", true, unsure)}, Inconclusive, "could not be judged in failing-r1"},
		{"no run judged", []measure.RunSummary{run("slow-r1", "slow", true, nil)}, Skipped, "no run it can judge"},
	} {
		v := verdictOn(t, claims.Recovery, buildCells(tt.runs, ex), ex)
		if v.Outcome != tt.want || !strings.Contains(v.Reason, tt.says) {
			t.Errorf("%s: %s (%s), want %s with %q", tt.name, v.Outcome, v.Reason, tt.want, tt.says)
		}
	}
}
