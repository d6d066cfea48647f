package verdict

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Reasons a run is left out besides the validity rules (measure.Rule*).
const (
	RuleDamaged    = "damaged data"
	RuleIncomplete = "incomplete"
	// RuleMemoryGuard: the memory guard stopped the run, the service's
	// memory having reached validity.max_service_memory (rundata.MemoryStop).
	RuleMemoryGuard = "memory guard"
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
	measure.RuleShards:      "a load-generator shard failed, lagged or was missing",
	measure.RuleOther:       "off the open model",
	RuleDamaged:             "damaged data",
	RuleIncomplete:          "incomplete",
	RuleMemoryGuard:         "stopped by the memory guard",
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
	case r.Status == rundata.StatusStopped:
		return []string{RuleMemoryGuard}
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
				for _, b := range a.Broken {
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
	lo.Advice = advice(rules, causesOf(runs))
	return lo
}

// counted sorts rule counts most first, then in measure.ValidityRules order.
func counted(by map[string]int) []RuleCount {
	var out []RuleCount
	for _, rule := range append(append([]string(nil), measure.ValidityRules...), RuleDamaged, RuleIncomplete, RuleMemoryGuard) {
		if n := by[rule]; n > 0 {
			out = append(out, RuleCount{Rule: rule, N: n})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].N > out[j].N })
	return out
}

// IdleMachine is the share of the machine's CPU below which a run's
// machine counts as idle: a rule the machine's load breaks (lag, canary,
// rate, load-generator errors, unsent requests) did not break for want
// of CPU there, and a quieter machine would not help.
const IdleMachine = 0.25

// TargetDownShare is the share of transport errors (no HTTP answer) in a
// health rule's break above which the target counts as down: the service
// did not answer, which no machine load explains.
const TargetDownShare = 50.0 // %

// machineRules are the rules a busy machine breaks.
var machineRules = []string{measure.RuleLag, measure.RuleCanary, measure.RuleRate, measure.RuleHarness, measure.RuleUnsent}

// causes is what the left-out runs tell of why they broke their rules.
type causes struct {
	// busiest is the largest machine CPU share among the runs that broke
	// a machine rule; NaN when one of them did not record it.
	busiest float64
	// machineRuns counts the runs that broke a machine rule.
	machineRuns int
	// down counts the runs whose health break was the target not
	// answering (transport errors ≥ TargetDownShare, machine not busy);
	// downShare is the largest such share, in %.
	down      int
	downShare float64
	// unhealthy counts the other runs that broke the health rule.
	unhealthy int
	// failed counts the runs that failed in the harness, interrupted the
	// runs stopped by Ctrl-C.
	failed, interrupted int
}

// causesOf reads the causes from the runs no verdict uses.
func causesOf(runs []measure.RunSummary) causes {
	c := causes{}
	for _, r := range runs {
		if r.Usable() {
			continue
		}
		busy := float64(r.Noise.MachineBusy)
		switch {
		case r.Status == rundata.StatusFailed:
			c.failed++
		case r.Status == rundata.StatusStopped:
			// what the service did: nothing to finish
		case r.Status != rundata.StatusComplete:
			c.interrupted++
		}
		if slices.ContainsFunc(r.Broken, func(b measure.RuleBreak) bool { return slices.Contains(machineRules, b.Rule) }) {
			c.machineRuns++
			if math.IsNaN(busy) || math.IsNaN(c.busiest) {
				c.busiest = math.NaN()
			} else {
				c.busiest = max(c.busiest, busy)
			}
		}
		if !slices.ContainsFunc(r.Broken, func(b measure.RuleBreak) bool { return b.Rule == measure.RuleHealth }) {
			continue
		}
		if share := transportShare(r.Broken); share >= TargetDownShare && !(busy >= IdleMachine) {
			c.down++
			c.downShare = max(c.downShare, share)
		} else {
			c.unhealthy++
		}
	}
	return c
}

// transportShare is the share of transport errors, in %, of the health
// rule's break among bs; 0 if none.
func transportShare(bs []measure.RuleBreak) float64 {
	for _, b := range bs {
		if b.Rule == measure.RuleHealth {
			return float64(b.TransportErrors)
		}
	}
	return 0
}

// machineIdle reports whether every run that broke a machine rule had an
// idle machine (and recorded it).
func (c causes) machineIdle() bool {
	return c.machineRuns > 0 && !math.IsNaN(c.busiest) && c.busiest < IdleMachine
}

// advice is what to change for the rules broken, as one sentence, by what
// the runs tell of the cause: a dead target is the service's to fix, a
// quieter machine is advised only when the machine was busy (or did not
// say), and a limit is offered for relaxing only where the machine's load
// may have broken it.
func advice(rules []RuleCount, c causes) string {
	has := map[string]bool{}
	for _, r := range rules {
		has[r.Rule] = true
	}
	machine := slices.ContainsFunc(machineRules, func(rule string) bool { return has[rule] })
	idle := machine && c.machineIdle()
	var do []string
	if has[measure.RuleHealth] && c.down > 0 {
		do = append(do, fmt.Sprintf("the target did not answer in %s (up to %s %% transport errors: refused, reset or closed connections, which no machine load causes), so the baseline health rule (validity.baseline_min_success) broke: check that the service runs and answers at its target URLs (its log), then run again",
			Runs(c.down), words.FmtHuman(c.downShare)))
	}
	if has[measure.RuleHealth] && (c.unhealthy > 0 || c.down == 0) {
		do = append(do, "check that every endpoint answers before the fault")
	}
	switch {
	case idle:
		do = append(do, fmt.Sprintf("the machine was idle (at most %s %% CPU busy), so a quieter machine will not help: see each run's reasons (--verbose) for what held the load generator or the service up (connections, file descriptors, the target)",
			words.FmtHuman(100*c.busiest)))
	case machine && c.machineRuns > 0 && !math.IsNaN(c.busiest):
		do = append(do, fmt.Sprintf("run on a quieter machine (nothing else loading its CPU; it was up to %s %% busy)", words.FmtHuman(100*c.busiest)))
	case machine:
		do = append(do, "run on a quieter machine (nothing else loading its CPU)")
	}
	if has[measure.RuleLag] || has[measure.RuleCanary] || has[measure.RuleStationary] {
		do = append(do, "give it a longer warm-up (phases.warmup)")
	}
	var keys []string
	if has[measure.RuleLag] && !idle {
		keys = append(keys, "validity.max_lag_p99")
	}
	if has[measure.RuleCanary] && !idle {
		keys = append(keys, "validity.canary_max_p99")
	}
	if has[measure.RuleHealth] && (c.unhealthy > 0 || c.down == 0) {
		keys = append(keys, "validity.baseline_min_success")
	}
	if len(keys) > 0 {
		do = append(do, "or, if this machine is always this busy, relax "+strings.Join(keys, " or ")+" in the spec (the verdicts are then only as sharp as the limit)")
	}
	if has[RuleIncomplete] {
		do = append(do, incompleteAdvice(c)...)
	}
	if has[RuleDamaged] {
		do = append(do, "run the damaged runs again (damaged data are never evidence)")
	}
	if has[RuleMemoryGuard] {
		do = append(do, "a run the memory guard stopped is what the service did (its memory grew to validity.max_service_memory), not noise: raise the ceiling only if the machine has the memory, or bound the service")
	}
	if len(do) == 0 {
		return ""
	}
	return "To have them count: " + strings.Join(do, "; ") + "."
}

// incompleteAdvice is what to do about runs that did not complete.
func incompleteAdvice(c causes) []string {
	var do []string
	if c.failed > 0 {
		do = append(do, "fix what made "+Runs(c.failed)+" fail (the error is in runs/<id>/meta.json, the components' output in runs/<id>/logs) and redo them with bulkheadlab run --resume DIR")
	}
	if c.interrupted > 0 || c.failed == 0 {
		do = append(do, "finish the interrupted runs with bulkheadlab run --resume DIR")
	}
	return do
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
	s := name + " " + words.WithUnit(float64(b.Measured), b.Unit)
	if !math.IsNaN(float64(b.Limit)) {
		s += " against " + words.WithUnit(float64(b.Limit), b.Unit)
	}
	s += " (" + w.Run
	if !math.IsNaN(float64(w.MachineBusy)) {
		s += ", machine CPU " + words.FmtHuman(100*float64(w.MachineBusy)) + " % busy"
		if st := float64(w.MachineSteal); !math.IsNaN(st) && st > 0 {
			s += ", " + words.FmtHuman(100*st) + " % of it stolen by the hypervisor"
		}
	}
	return s + ")"
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
