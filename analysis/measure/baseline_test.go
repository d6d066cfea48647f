package measure

import (
	"math"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestAtBaseline: P2's tolerance (0.25 T of p99, 1 point of errors) counted
// from the endpoint's own baseline, its edges included; an undefined number
// does not count against it; Harm is above 1 exactly where it is not at
// its baseline.
func TestAtBaseline(t *testing.T) {
	ex := rundata.DefaultExpectations()
	nan := math.NaN()
	for _, tt := range []struct {
		name                   string
		riseT, errRate, baseEr float64
		want                   bool
	}{
		{"unchanged", 0, 0, 0, true},
		{"p99 at the edge", 0.25, 0, 0, true},
		{"p99 past it", 0.26, 0, 0, false},
		{"p99 fell", -0.5, 0, 0, true},
		{"errors at the edge", 0, 0.01, 0, true},
		{"errors past it", 0, 0.011, 0, false},
		{"errors as at baseline", 0, 0.6, 0.6, true},
		{"errors a point above a busy baseline", 0, 0.605, 0.6, true},
		{"errors two points above it", 0, 0.62, 0.6, false},
		{"no baseline p99: errors alone", nan, 0.005, 0, true},
		{"no baseline p99, errors past it", nan, 0.5, 0, false},
		{"no results", nan, nan, 0, true},
		{"slow and failing", 1, 1, 0, false},
	} {
		if got := AtBaseline(tt.riseT, tt.errRate, tt.baseEr, ex); got != tt.want {
			t.Errorf("%s: AtBaseline(rise %v T, errors %v, baseline errors %v) = %t, want %t", tt.name, tt.riseT, tt.errRate, tt.baseEr, got, tt.want)
		}
		if h := Harm(tt.riseT, tt.errRate, tt.baseEr, ex); !math.IsNaN(h) && (h > 1) == tt.want {
			t.Errorf("%s: Harm %v while AtBaseline is %t", tt.name, h, tt.want)
		}
	}
	if got := MaxErrorRate(0, ex); got != ex.P2MaxErrorRate {
		t.Errorf("MaxErrorRate without baseline errors = %v, want P2MaxErrorRate %v", got, ex.P2MaxErrorRate)
	}
}

// TestBaselineErrorRate: read from the baseline phase's numbers; a run
// without results there (or without the phase) has none.
func TestBaselineErrorRate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		phases []PhaseNumbers
		want   float64
	}{
		{"errors at baseline", []PhaseNumbers{{Phase: rundata.PhaseWarmup, ErrorRate: 0.5}, {Phase: rundata.PhaseBaseline, ErrorRate: 0.2}}, 0.2},
		{"no results at baseline", []PhaseNumbers{{Phase: rundata.PhaseBaseline, ErrorRate: Undefined}}, 0},
		{"no baseline phase", []PhaseNumbers{{Phase: rundata.PhaseFault, ErrorRate: 1}}, 0},
	} {
		if got := (EndpointStats{Phases: tt.phases}).BaselineErrorRate(); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRecoveryAndSummaryShareTheBaseline: the run's recovery and its
// summary read the same baseline error rate, so RECOVERY and P2 judge an
// endpoint against the same baseline.
func TestRecoveryAndSummaryShareTheBaseline(t *testing.T) {
	r := amRun{win: func(ep string, t float64) (float64, rundata.Class, float64) {
		if ep == "a" && t < -10 {
			return 0.3, rundata.ClassRejected, 15
		}
		return 0, rundata.ClassRejected, 15
	}}.build()
	s := Summarize(r.Data, rundata.DefaultExpectations())
	if got, want := s.Endpoint("a").BaselineErrorRate(), (endpointWindows{r.Data}).baselineErrorRate("a"); got != want || got != 0.3 {
		t.Errorf("summary's baseline error rate %v, recovery's %v, want both 0.3", got, want)
	}
}
