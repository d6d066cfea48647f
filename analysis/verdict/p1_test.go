package verdict

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
)

// TestP1AgainstTheControl: P1 holds where the shared pool takes /b down
// under slow; the same matrix re-judged with the healthy condition as the
// fault run gives NOT SUPPORTED (nothing degraded beyond the control's
// noise), as does a slow run where /b never degraded.
func TestP1AgainstTheControl(t *testing.T) {
	for _, tt := range []struct {
		name      string
		slow      string
		degradeAt float64
		want      Outcome
	}{
		{"slow degrades /b", "slow", 1, Supported},
		{"the healthy run re-judged as the fault run", "healthy", 1, NotSupported},
		{"/b never degraded", "slow", -1, NotSupported},
	} {
		runs := synth.Matrix(2, func(r *synth.Run) bool {
			r.DegradeAt = tt.degradeAt
			return r.Mode == "shared" && (r.Cond == "healthy" || r.Cond == "slow")
		})
		exp, err := rundir.Load(synth.Write(t, t.TempDir(), "", runs))
		if err != nil {
			t.Fatal(err)
		}
		ex := exp.Expectations
		ex.Slow = tt.slow
		s := Evaluate(exp, ex)
		v, _ := s.Lookup("P1")
		if v.Outcome != tt.want {
			t.Errorf("%s: P1 %s (%s), want %s", tt.name, v.Outcome, v.Reason, tt.want)
		}
	}
}
