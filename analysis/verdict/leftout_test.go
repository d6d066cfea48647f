package verdict

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestLeftOutAdviceNamesTheCause: the advice names the rule that broke and
// the cause the runs show — a dead target is the service's to check (never
// "a quieter machine" or "relax" the health limit), a quieter machine only
// when the machine was busy, and a failed run is fixed, not "finished".
func TestLeftOutAdviceNamesTheCause(t *testing.T) {
	health := func(c rundata.Class) rundata.Broken {
		return rundata.Broken{Rule: rundata.RuleHealth, Endpoint: "a", Phase: rundata.PhaseBaseline, Limit: 99, Unit: rundata.UnitPercent,
			Count: 500, Unanswered: 100, MaxUnanswered: 1, Classes: []rundata.ClassShare{{Class: c, Share: 100}}}
	}
	refused, slow := health(rundata.ClassTransportError), health(rundata.ClassClientTimeout)
	lag := rundata.Broken{Rule: rundata.RuleLag, Endpoint: "a", Phase: rundata.PhaseFault, Measured: 43.3e6, Limit: 25e6, Max: 43.3e6, Unit: rundata.UnitNanos}
	run := func(status string, busy float64, broken ...rundata.Broken) measure.RunSummary {
		return measure.RunSummary{ID: "slow-shared-r1", Status: status, Invalid: words.Reasons(broken), Broken: measure.RuleBreaks(broken),
			Noise: measure.NoiseFloor{MachineBusy: measure.Num(busy)}}
	}
	nan := float64(measure.Undefined)
	for _, tt := range []struct {
		name      string
		runs      []measure.RunSummary
		want, not []string
	}{
		{"dead target, idle machine", []measure.RunSummary{run(rundata.StatusComplete, 0.07, refused)},
			[]string{"the target did not answer in 1 run", "100 % transport errors", "baseline health rule (validity.baseline_min_success)", "check that the service runs"},
			[]string{"quieter machine", "relax", "every endpoint answers"}},
		{"dead target, lag too, idle machine", []measure.RunSummary{run(rundata.StatusComplete, 0.07, refused, lag)},
			[]string{"the target did not answer", "the machine was idle (at most 7 % CPU busy)"},
			[]string{"run on a quieter machine", "relax"}},
		{"timeouts on a busy machine", []measure.RunSummary{run(rundata.StatusComplete, 0.95, slow)},
			[]string{"check that every endpoint answers", "relax validity.baseline_min_success"},
			[]string{"did not answer", "quieter machine"}},
		{"refused on a busy machine", []measure.RunSummary{run(rundata.StatusComplete, 0.95, refused)},
			[]string{"check that every endpoint answers"}, []string{"did not answer"}},
		{"lag, busy machine", []measure.RunSummary{run(rundata.StatusComplete, 0.97, lag)},
			[]string{"run on a quieter machine", "up to 97 % busy", "relax validity.max_lag_p99"}, []string{"idle"}},
		{"lag, machine not recorded", []measure.RunSummary{run(rundata.StatusComplete, nan, lag)},
			[]string{"run on a quieter machine (nothing else loading its CPU)"}, []string{"idle"}},
		{"lag, idle machine", []measure.RunSummary{run(rundata.StatusComplete, 0.1, lag)},
			[]string{"the machine was idle (at most 10 % CPU busy)", "a quieter machine will not help"},
			[]string{"run on a quieter machine", "relax"}},
		{"failed run", []measure.RunSummary{run(rundata.StatusFailed, nan)},
			[]string{"fix what made 1 run fail", "--resume"}, []string{"interrupted"}},
		{"interrupted run", []measure.RunSummary{run(rundata.StatusInterrupted, nan)},
			[]string{"finish the interrupted runs"}, []string{"fail"}},
	} {
		lo := leftOut(tt.runs, rundata.Expectations{})
		if lo == nil {
			t.Errorf("%s: nothing left out", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(lo.Advice, w) {
				t.Errorf("%s: advice %q does not say %q", tt.name, lo.Advice, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(lo.Advice, n) {
				t.Errorf("%s: advice %q says %q", tt.name, lo.Advice, n)
			}
		}
	}
}
