package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// victimRuns are three repeats of condition × mode in which the victim's
// p99 stays at its baseline (12 ms, T = 250 ms) and its error rate is
// baseErr in the baseline phase and faultErr in the fault phase.
func victimRuns(cond, mode string, baseErr, faultErr float64) []measure.RunSummary {
	var out []measure.RunSummary
	for rep := 1; rep <= 3; rep++ {
		out = append(out, measure.RunSummary{ID: fmt.Sprintf("%s-%s-r%d", cond, mode, rep), Condition: cond, Mode: mode, Repeat: rep,
			Status: rundata.StatusComplete, Valid: true, TimeoutMs: 250,
			Endpoints: []measure.EndpointStats{{Endpoint: "b", BaselineP99Ms: 12, FaultP99Ms: 13, FaultErrorRate: measure.Num(faultErr),
				Phases: []measure.PhaseNumbers{{Phase: rundata.PhaseBaseline, ErrorRate: measure.Num(baseErr)}, {Phase: rundata.PhaseFault, ErrorRate: measure.Num(faultErr)}}}}})
	}
	return out
}

// TestIsolationCountsFromTheBaseline: P2 and the claims judged like it
// (here ADAPTIVE-ISOLATES) hold the victim's errors to a point above its
// own baseline's (measure.AtBaseline), as RECOVERY does: errors it had
// before the fault are not the fault's harm, errors beyond them are.
func TestIsolationCountsFromTheBaseline(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Policy = &rundata.PolicyClaims{Adaptive: &rundata.AdaptiveRoles{Mode: "adaptive"}}
	for _, tt := range []struct {
		name              string
		baseErr, faultErr float64
		want              Outcome
		says              string
	}{
		{"no errors", 0, 0, Supported, ""},
		{"errors a service makes at baseline too", 0.03, 0.035, Supported, ""},
		{"errors the fault added", 0, 0.035, NotSupported, "/b fault error rate = 0.035 share, needs <= 0.01"},
		{"errors beyond the baseline's", 0.03, 0.06, NotSupported, "/b fault error rate = 0.06 share, needs <= 0.04"},
	} {
		for _, c := range []struct{ name, mode string }{{claims.P2, ex.BulkheadMode}, {claims.AdaptiveIsolates, "adaptive"}} {
			cells := buildCells(victimRuns(ex.Slow, c.mode, tt.baseErr, tt.faultErr), ex)
			v := verdictOn(t, c.name, cells, ex)
			if v.Outcome != tt.want || !strings.Contains(v.Reason, tt.says) {
				t.Errorf("%s: %s %s (%s), want %s with %q", tt.name, c.name, v.Outcome, v.Reason, tt.want, tt.says)
			}
		}
	}
}
