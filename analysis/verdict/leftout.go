package verdict

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Reasons a run is left out besides the validity rules (measure.Rule*).
const (
	RuleDamaged    = "damaged data"
	RuleIncomplete = "incomplete"
)

// LeftOut summarises the runs no verdict uses and the attempts that were run
// again: how many, for which rules, the worst value and what to change. The
// console, report.md and index.html lead with it; the reasons themselves
// stay with each run.
type LeftOut struct {
	// Runs of Of runs are left out (INVALID, damaged or incomplete).
	Runs int `json:"runs"`
	Of   int `json:"of"`
	// ByRule counts the left-out runs per rule they broke, most first (a
	// run that broke two rules counts in both).
	ByRule []RuleCount `json:"by_rule,omitempty"`
	// Worst is the worst break of the most frequent rule, nil when that rule
	// carries no number.
	Worst *WorstBreak `json:"worst,omitempty"`
	// RetriedRuns were run again after Attempts INVALID attempts in all;
	// AttemptsByRule counts those attempts per rule.
	RetriedRuns    int         `json:"retried_runs,omitempty"`
	Attempts       int         `json:"retried_attempts,omitempty"`
	AttemptsByRule []RuleCount `json:"retried_by_rule,omitempty"`
	// Advice says what to change so that the runs count, one sentence.
	Advice string `json:"advice,omitempty"`
}

// RuleCount is how many runs (or attempts) broke one rule.
type RuleCount struct {
	Rule string `json:"rule"`
	N    int    `json:"n"`
}

// WorstBreak is a rule's worst break and the run it was in.
type WorstBreak struct {
	Run string `json:"run"`
	measure.RuleBreak
	// MachineBusy is the share of the machine's CPU that was busy during
	// that run's judged phases.
	MachineBusy measure.Num `json:"machine_busy"`
	// MachineSteal is the part of it stolen for other guests.
	MachineSteal measure.Num `json:"machine_steal"`
}

// ruleText is how a summary names each rule's breaks.
var ruleText = map[string]string{
	measure.RuleLag:         "schedule lag over its limit",
	measure.RuleCanary:      "canary slow",
	measure.RuleRate:        "send rate off the schedule",
	measure.RuleHarness:     "load-generator errors",
	measure.RuleUnsent:      "requests never sent",
	measure.RuleHealth:      "an endpoint unhealthy in the baseline",
	measure.RuleStationary:  "warm-up too short",
	measure.RuleInterrupted: "interrupted",
	measure.RuleOther:       "off the open model",
	RuleDamaged:             "damaged data",
	RuleIncomplete:          "incomplete",
}

// measuredText names the number a rule's Against compares.
var measuredText = map[string]string{
	measure.RuleLag:     "schedule lag p99",
	measure.RuleCanary:  "canary p99",
	measure.RuleRate:    "send rate",
	measure.RuleHarness: "load-generator errors",
	measure.RuleUnsent:  "requests never sent",
	measure.RuleHealth:  "baseline success",
}

// RuleText is how the report names the breaks of rule.
func RuleText(rule string) string {
	if t, ok := ruleText[rule]; ok {
		return t
	}
	return rule
}

// LeftOutRules are the rules a left-out run broke, in measure.ValidityRules
// order: its validity rules, or why else it is not used.
func LeftOutRules(r measure.RunSummary) []string {
	switch {
	case len(r.Damaged) > 0:
		return []string{RuleDamaged}
	case len(r.Problems) > 0 || r.Status != rundata.StatusComplete:
		return []string{RuleIncomplete}
	case !r.Valid:
		var out []string
		for _, b := range r.Broken {
			out = append(out, b.Rule)
		}
		if len(out) == 0 {
			out = []string{measure.RuleOther}
		}
		return out
	}
	return nil
}

// leftOut builds the LeftOut of the runs; nil when every run is used and
// none was run again.
func leftOut(runs []measure.RunSummary, ex rundata.Expectations) *LeftOut {
	lo := &LeftOut{Of: len(runs)}
	byRule, byAttempt := map[string]int{}, map[string]int{}
	worst := map[string]*WorstBreak{}
	for _, r := range runs {
		if len(r.Retried) > 0 {
			lo.RetriedRuns++
			lo.Attempts += len(r.Retried)
			for _, a := range r.Retried {
				for _, b := range measure.RuleBreaks(a.Reasons) {
					byAttempt[b.Rule]++
				}
			}
		}
		if r.Usable() {
			continue
		}
		lo.Runs++
		for _, rule := range LeftOutRules(r) {
			byRule[rule]++
		}
		for _, b := range r.Broken {
			if w := worst[b.Rule]; w == nil || b.Worse(w.RuleBreak) {
				worst[b.Rule] = &WorstBreak{Run: r.ID, RuleBreak: b, MachineBusy: r.Noise.MachineBusy, MachineSteal: r.Noise.MachineSteal}
			}
		}
	}
	if lo.Runs == 0 && lo.RetriedRuns == 0 {
		return nil
	}
	lo.ByRule, lo.AttemptsByRule = counted(byRule), counted(byAttempt)
	if len(lo.ByRule) > 0 {
		if w := worst[lo.ByRule[0].Rule]; w != nil && !math.IsNaN(float64(w.Measured)) {
			lo.Worst = w
		}
	}
	rules := lo.ByRule
	if len(rules) == 0 {
		rules = lo.AttemptsByRule
	}
	lo.Advice = advice(rules, ex)
	return lo
}

// counted sorts rule counts most first, then in measure.ValidityRules order.
func counted(by map[string]int) []RuleCount {
	var out []RuleCount
	for _, rule := range append(append([]string(nil), measure.ValidityRules...), RuleDamaged, RuleIncomplete) {
		if n := by[rule]; n > 0 {
			out = append(out, RuleCount{Rule: rule, N: n})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].N > out[j].N })
	return out
}

// advice is what to change for the rules broken, as one sentence.
func advice(rules []RuleCount, ex rundata.Expectations) string {
	has := map[string]bool{}
	for _, r := range rules {
		has[r.Rule] = true
	}
	var do []string
	if has[measure.RuleLag] || has[measure.RuleCanary] || has[measure.RuleRate] || has[measure.RuleHarness] || has[measure.RuleUnsent] {
		do = append(do, "run on a quieter machine (nothing else loading its CPU)")
	}
	if has[measure.RuleLag] || has[measure.RuleCanary] || has[measure.RuleStationary] {
		do = append(do, "give it a longer warm-up (phases.warmup)")
	}
	var keys []string
	if has[measure.RuleLag] {
		keys = append(keys, "validity.max_lag_p99")
	}
	if has[measure.RuleCanary] {
		keys = append(keys, "validity.canary_max_p99")
	}
	if has[measure.RuleHealth] {
		keys = append(keys, "validity.baseline_min_success")
	}
	if len(keys) > 0 {
		do = append(do, "or, if this machine is always this busy, relax "+strings.Join(keys, " or ")+" in the spec (the verdicts are then only as sharp as the limit)")
	}
	if has[measure.RuleHealth] {
		do = append([]string{"check that every endpoint answers before the fault"}, do...)
	}
	if has[RuleIncomplete] {
		do = append(do, "finish the interrupted runs with bulkheadlab run --resume DIR")
	}
	if has[RuleDamaged] {
		do = append(do, "run the damaged runs again (damaged data are never evidence)")
	}
	if len(do) == 0 {
		return ""
	}
	return "To have them count: " + strings.Join(do, "; ") + "."
}

// Sentence is the summary as a reader reads it first: "12 of 24 runs left
// out — schedule lag over its limit (10), canary slow (2); worst: schedule
// lag p99 7.8 ms against 5 ms (slow-shared-r2, machine CPU 97 % busy)".
func (lo *LeftOut) Sentence() string {
	if lo.Runs == 0 {
		return ""
	}
	them := "them"
	if lo.Runs == 1 {
		them = "it"
	}
	s := fmt.Sprintf("%d of %s left out (no verdict uses %s) — %s", lo.Runs, Runs(lo.Of), them, countText(lo.ByRule, "%s (%d)", false))
	if w := lo.Worst; w != nil {
		s += "; worst: " + worstText(w)
	}
	return s
}

// RetriedSentence says which runs were run again after INVALID attempts.
func (lo *LeftOut) RetriedSentence() string {
	if lo.RetriedRuns == 0 {
		return ""
	}
	were := " were"
	if lo.RetriedRuns == 1 {
		were = " was"
	}
	return fmt.Sprintf("%s%s run again after %d INVALID attempts (%s); the attempts are kept under runs/<id>.invalid-N",
		Runs(lo.RetriedRuns), were, lo.Attempts, countText(lo.AttemptsByRule, "%s ×%d", true))
}

// countText lists rule counts, each as format of its text and count;
// short names each rule by its name instead of RuleText.
func countText(cs []RuleCount, format string, short bool) string {
	var parts []string
	for _, c := range cs {
		name := RuleText(c.Rule)
		if short {
			name = c.Rule
		}
		parts = append(parts, fmt.Sprintf(format, name, c.N))
	}
	return strings.Join(parts, ", ")
}

func worstText(w *WorstBreak) string {
	name := measuredText[w.Rule]
	if name == "" {
		name = w.Rule
	}
	b := w.RuleBreak
	s := name + " " + measure.FmtHuman(float64(b.Measured)) + unitText(b.Unit)
	if !math.IsNaN(float64(b.Limit)) {
		s += " against " + measure.FmtHuman(float64(b.Limit)) + unitText(b.Unit)
	}
	s += " (" + w.Run
	if !math.IsNaN(float64(w.MachineBusy)) {
		s += ", machine CPU " + measure.FmtHuman(100*float64(w.MachineBusy)) + " % busy"
		if st := float64(w.MachineSteal); !math.IsNaN(st) && st > 0 {
			s += ", " + measure.FmtHuman(100*st) + " % of it stolen by the hypervisor"
		}
	}
	return s + ")"
}

func unitText(u string) string {
	if u == "" || u == "/s" {
		return u
	}
	return " " + u
}

// cellLeftOut says, for the runs of a cell none of which a verdict can use,
// how many were left out for what: "slow/shared: 3 left out (schedule lag
// 3)".
func cellLeftOut(c *Cell) string {
	by := map[string]int{}
	for _, r := range c.excluded {
		for _, rule := range LeftOutRules(r) {
			by[rule]++
		}
	}
	return fmt.Sprintf("%s/%s: %s left out (%s)", c.Condition, c.Mode, Runs(len(c.excluded)), countText(counted(by), "%s ×%d", true))
}

// Runs is "1 run" or "n runs".
func Runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
