package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// passMark is a rule a left-out run kept.
const passMark = "✓"

// ruleTable is the runs × rules table of the left-out runs: per run, ✓ for
// each rule it kept and the measured value against the limit for each it
// broke. Every output draws it from here, so they show the same cells.
type ruleTable struct {
	Rules []string // column heads: the rules any left-out run broke
	Rows  []ruleRow
	// Others is how many runs are not in Rows (every rule kept).
	Others int
}

type ruleRow struct {
	Run   string
	Cells []string // one per Rules
	// Retried is how many INVALID attempts of the run came before.
	Retried int
	// Busy is the machine's CPU busy share in the run's judged phases,
	// Steal the part of it stolen for other guests.
	Busy, Steal measure.Num
}

// leftOutTable builds the runs × rules table; Rows is empty when every run
// is used.
func leftOutTable(s *verdict.Summary) ruleTable {
	var t ruleTable
	var left []measure.RunSummary
	for _, r := range s.Runs {
		if r.Usable() {
			continue
		}
		left = append(left, r)
		for _, rule := range verdict.LeftOutRules(r) {
			if !slices.Contains(t.Rules, rule) {
				t.Rules = append(t.Rules, rule)
			}
		}
	}
	order := append(append([]string(nil), measure.ValidityRules...), verdict.RuleDamaged, verdict.RuleIncomplete, verdict.RuleMemoryGuard)
	slices.SortStableFunc(t.Rules, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	for _, r := range left {
		row := ruleRow{Run: r.ID, Retried: len(r.Retried), Busy: r.Noise.MachineBusy, Steal: r.Noise.MachineSteal}
		broken := verdict.LeftOutRules(r)
		for _, rule := range t.Rules {
			cell := passMark
			if slices.Contains(broken, rule) {
				cell = "✗"
				for _, b := range r.Broken {
					if b.Rule == rule {
						cell = b.Against()
						if cell == b.Rule {
							cell = "✗"
						}
					}
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Others = len(s.Runs) - len(left)
	return t
}

// head is the table's header row, plain text.
func (t ruleTable) head() []string {
	return append(append([]string{"run"}, t.Rules...), "CPU busy", "steal", "retried")
}

// cells is one row as plain text.
func (r ruleRow) cells() []string {
	return append(append([]string{r.Run}, r.Cells...), pct(r.Busy), pct(r.Steal), attempts(r.Retried))
}

// othersRow is the last row: the runs that kept every rule.
func (t ruleTable) othersRow() []string {
	row := []string{fmt.Sprintf("the other %d", t.Others)}
	for range t.Rules {
		row = append(row, passMark)
	}
	return append(row, "", "", "")
}

func attempts(n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprint(n)
}

// runAnchor is the id of a run's row in index.html.
func runAnchor(id string) string { return "run-" + id }

// runReasons is every reason a run was left out or run again, rounded, as
// lines: the run's own, then each earlier attempt's.
func runReasons(r measure.RunSummary) []string {
	var out []string
	for _, d := range r.Damaged {
		out = append(out, "damaged: "+d)
	}
	for _, p := range r.Problems {
		out = append(out, "incomplete: "+p)
	}
	out = append(out, r.Invalid...)
	for i, a := range r.Retried {
		where := ""
		if a.Folder != "" {
			where = " (runs/" + a.Folder + ")"
		}
		out = append(out, fmt.Sprintf("attempt %d%s: %s", i+1, where, strings.Join(a.Reasons, "; ")))
	}
	return out
}

// shortWhy is a run's validity in a few words: the rules it broke with
// their worst values and how often it was run again ("" for a valid run
// never run again).
func shortWhy(r measure.RunSummary) string {
	var parts []string
	switch {
	case len(r.Damaged) > 0:
		parts = append(parts, "damaged data")
	case len(r.Problems) > 0:
		parts = append(parts, "incomplete")
	}
	for _, b := range r.Broken {
		parts = append(parts, words.Short(b.Rule, b.Numbers()))
	}
	if n := len(r.Retried); n > 0 {
		parts = append(parts, fmt.Sprintf("run again after %d INVALID attempt%s", n, plural(n)))
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// keyNumber is a verdict's first deciding number with its threshold, "—"
// without one and for a verdict that was not judged (INVALID, SKIPPED),
// whose numbers, where some runs allowed them, are in its own section.
func keyNumber(v verdict.Verdict) string {
	if v.Outcome == verdict.Invalid || v.Outcome == verdict.Skipped {
		return "—"
	}
	for _, m := range v.Measures {
		if m.Op != "" {
			return fmt.Sprintf("%s = %s %s (%s %s)", m.Name, measure.FormatEstimate(m.Value), m.Unit, m.Op, words.Fmt3(float64(*m.Threshold)))
		}
	}
	return "—"
}

// excludedGroups groups a verdict's left-out runs by cell: the ID's stem
// ("failing-shared") and the repeats ("r1", "r2").
type excludedGroup struct {
	Stem string
	IDs  []string // full IDs
	Tags []string // what follows the stem
}

func groupExcluded(ex []verdict.Exclusion) []excludedGroup {
	var out []excludedGroup
	for _, e := range ex {
		stem, tag := "", e.Run
		if i := strings.LastIndex(e.Run, "-r"); i > 0 {
			stem, tag = e.Run[:i], e.Run[i+1:]
		}
		if n := len(out); n > 0 && out[n-1].Stem == stem {
			out[n-1].IDs, out[n-1].Tags = append(out[n-1].IDs, e.Run), append(out[n-1].Tags, tag)
			continue
		}
		out = append(out, excludedGroup{Stem: stem, IDs: []string{e.Run}, Tags: []string{tag}})
	}
	return out
}

// excludedText is a verdict's left-out runs as a count and IDs:
// "3: failing-shared r1 r2, slow-shared r3"; "" for none.
func excludedText(ex []verdict.Exclusion) string {
	if len(ex) == 0 {
		return ""
	}
	var parts []string
	for _, g := range groupExcluded(ex) {
		parts = append(parts, strings.TrimSpace(g.Stem+" "+strings.Join(g.Tags, " ")))
	}
	return fmt.Sprintf("%d: %s", len(ex), strings.Join(parts, ", "))
}

// degradeText is a run's time to degrade in T; a run no verdict uses shows
// none, since its number is not evidence.
func degradeText(r measure.RunSummary) string {
	if !r.Usable() {
		return "— (left out)"
	}
	return measure.FmtNum(r.TimeToDegradeT)
}
