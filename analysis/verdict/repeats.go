package verdict

import (
	"fmt"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Clear reports whether v is decided beyond the repeats' noise: SUPPORTED
// or NOT SUPPORTED, and every deciding number has a confidence interval
// (MinRepeatsForCI repeats or more) that lies wholly on one side of its
// threshold. More repeats would not change such a verdict, so an
// experiment whose checked verdicts are all clear can stop (repeats: auto).
func (v Verdict) Clear() bool {
	if v.Outcome != Supported && v.Outcome != NotSupported {
		return false
	}
	for _, m := range v.Measures {
		if m.Threshold == nil {
			continue
		}
		e, thr := m.Value, float64(*m.Threshold)
		if !e.Defined() || !e.HasCI() || holds(e.Lo, m.Op, thr) != holds(e.Hi, m.Op, thr) {
			return false
		}
	}
	return true
}

// RepeatNeed is how many repeats a checked verdict needed to be clear.
type RepeatNeed struct {
	Verdict string  `json:"verdict"`
	Outcome Outcome `json:"outcome"`
	// Repeats is the first number of repeats from which the verdict was
	// clear (see Verdict.Clear) and stayed clear; 0 when it was not clear
	// after all of them.
	Repeats int `json:"repeats"`
	// Of is how many repeats the experiment ran.
	Of int `json:"of"`
}

// Unclear lists the checked verdicts of s that are not clear, and an
// audit's measured cells whose repeats disagree on whether the endpoint
// degraded (none: the experiment can stop, see repeats: auto).
func (s *Summary) Unclear() []string {
	var out []string
	for _, name := range s.Expectations.Check {
		i := slices.IndexFunc(s.Verdicts, func(v Verdict) bool { return v.Name == name })
		if i < 0 || !s.Verdicts[i].Clear() {
			out = append(out, name)
		}
	}
	for _, m := range s.Audits {
		for i, e := range m.Endpoints {
			for j, c := range m.Cells[i] {
				measured := c.Class == CellIsolated || c.Class == CellDegraded || c.Class == CellExpected
				if measured && c.DegradedRuns > 0 && c.DegradedRuns < c.Runs {
					out = append(out, fmt.Sprintf("audit %s: /%s × %s %s (%d of %d runs degraded)", m.Mode, e, m.Columns[j].Dependency, m.Columns[j].Fault, c.DegradedRuns, c.Runs))
				}
			}
		}
	}
	return out
}

// repeatsNeeded evaluates the experiment on its first k repeats, for every
// k from MinRepeatsForCI to the last, and reports per checked verdict the
// first k from which it stayed clear.
func repeatsNeeded(exp *rundir.Experiment, ex rundata.Expectations) []RepeatNeed {
	last := 0
	for _, r := range exp.Runs {
		last = max(last, r.Entry.Repeat)
	}
	clearAt := map[string]int{}
	var final Summary
	for k := measure.MinRepeatsForCI; k <= last; k++ {
		sub := *exp
		sub.Runs = nil
		for _, r := range exp.Runs {
			if r.Entry.Repeat <= k {
				sub.Runs = append(sub.Runs, r)
			}
		}
		final = evaluate(&sub, ex)
		for _, name := range ex.Check {
			i := slices.IndexFunc(final.Verdicts, func(v Verdict) bool { return v.Name == name })
			switch {
			case i >= 0 && final.Verdicts[i].Clear():
				if clearAt[name] == 0 {
					clearAt[name] = k
				}
			default:
				clearAt[name] = 0
			}
		}
	}
	var out []RepeatNeed
	for _, name := range ex.Check {
		n := RepeatNeed{Verdict: name, Repeats: clearAt[name], Of: last}
		if i := slices.IndexFunc(final.Verdicts, func(v Verdict) bool { return v.Name == name }); i >= 0 {
			n.Outcome = final.Verdicts[i].Outcome
		}
		out = append(out, n)
	}
	return out
}
