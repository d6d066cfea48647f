package verdict

import (
	"fmt"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// p4Cells builds the four cells P4 compares, three repeats each, from the
// victim's fault p99 (ms) and error rate per cell: slow/shared,
// slow/bulkhead, failing/shared, failing/bulkhead. T = 250 ms.
func p4Cells(p99 [4]float64, errRate [4]float64) []Cell {
	keys := [4][2]string{{"slow", "shared"}, {"slow", "bulkhead"}, {"failing", "shared"}, {"failing", "bulkhead"}}
	var cells []Cell
	for i, k := range keys {
		c := Cell{Condition: k[0], Mode: k[1]}
		for rep := range 3 {
			wobble := 1 + 0.01*float64(rep-1)
			c.UsedRuns = append(c.UsedRuns, measure.RunSummary{ID: fmt.Sprintf("%s-%s-r%d", k[0], k[1], rep+1), Condition: k[0], Mode: k[1],
				Repeat: rep + 1, Valid: true, TimeoutMs: 250,
				Endpoints: []measure.EndpointStats{{Endpoint: "b", FaultP99Ms: measure.Num(p99[i] * wobble), FaultErrorRate: measure.Num(errRate[i] * wobble)}}})
			c.Runs = append(c.Runs, c.UsedRuns[rep].ID)
		}
		cells = append(cells, c)
	}
	return cells
}

// TestP4JudgedWhereTheDifferenceIs: a fail-fast service shows the bulkhead's
// benefit in errors, a fail-slow one in latency; P4 is judged on that
// dimension, and each can fail.
func TestP4JudgedWhereTheDifferenceIs(t *testing.T) {
	ex := rundata.DefaultExpectations()
	for _, tt := range []struct {
		name    string
		p99     [4]float64
		errRate [4]float64
		want    Outcome
	}{
		// Fail-fast: a shared pool rejects /b at once (57 pp more errors
		// when slow), p99s differ by a few ms; failing A makes no difference.
		{"fail-fast service, supported", [4]float64{18, 14, 15, 14}, [4]float64{0.57, 0, 0.01, 0}, Supported},
		// The same service, but failing A hurts /b under the shared pool as
		// much as slow A does: the claim fails on the error dimension.
		{"fail-fast service, failing hurts as much", [4]float64{18, 14, 15, 14}, [4]float64{0.57, 0, 0.55, 0}, NotSupported},
		// Fail-slow: a shared pool makes /b wait (p99 +200 ms), no errors.
		{"fail-slow service, supported", [4]float64{230, 15, 16, 15}, [4]float64{0, 0, 0, 0}, Supported},
		{"fail-slow service, failing hurts as much", [4]float64{230, 15, 220, 15}, [4]float64{0, 0, 0, 0}, NotSupported},
		// The bulkhead made no difference when slow on either dimension.
		{"no difference when slow", [4]float64{20, 18, 16, 15}, [4]float64{0.02, 0.01, 0, 0}, NotSupported},
		// Both dimensions show it; errors are as bad when failing.
		{"both dimensions, errors fail", [4]float64{230, 15, 16, 15}, [4]float64{0.5, 0, 0.5, 0}, NotSupported},
	} {
		v := verdictOn(t, claims.P4, p4Cells(tt.p99, tt.errRate), ex)
		if v.Outcome != tt.want {
			t.Errorf("%s (p99 %v, errors %v): P4 %s (%s), want %s", tt.name, tt.p99, tt.errRate, v.Outcome, v.Reason, tt.want)
		}
	}
}
