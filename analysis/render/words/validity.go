package words

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Other names the break of a run INVALID without a record of any rule (a
// run the load generator called INVALID and said nothing more of).
const Other = "other"

// names are how a report names each rule's breaks: a column head, a count.
var names = map[rundata.Rule]string{
	rundata.RuleLag:         "schedule lag",
	rundata.RuleCanary:      "canary",
	rundata.RuleRate:        "send rate",
	rundata.RuleHarness:     "load-generator errors",
	rundata.RuleUnsent:      "unsent requests",
	rundata.RuleHealth:      "baseline health",
	rundata.RuleStationary:  "warm-up",
	rundata.RuleInterrupted: "interrupted",
	// The shards' rules are one column of a report: their sentences tell
	// them apart.
	rundata.RuleShardsMissing: Shards,
	rundata.RuleShardFailed:   Shards,
	rundata.RuleShardStopped:  Shards,
	rundata.RuleShardLate:     Shards,
	rundata.RuleShardClock:    Shards,
	rundata.RuleShardLag:      Shards,
}

// Shards names the breaks of every rule of a load sent by several shards.
const Shards = "shards"

// Name is how a report names the breaks of rule: "schedule lag"; the id
// itself for a rule it does not know.
func Name(rule rundata.Rule) string {
	if n, ok := names[rule]; ok {
		return n
	}
	return string(rule)
}

// Names lists the name of every rule (rundata.Rules; a name shared by
// several once) then Other: the order in which a report lists the rules.
func Names() []string {
	var out []string
	for _, r := range rundata.Rules {
		if n := Name(r); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return append(out, Other)
}

// Reason is the sentence of one broken rule, led by its endpoint and
// phase: "a/baseline: schedule lag p99 6.41 ms is not under the 5 ms
// threshold (max 13.7 ms)", its durations to three significant digits.
func Reason(b rundata.Broken) string { return b.Where() + ": " + sentence(b) }

// Reasons is Reason of each of bs, nil for none.
func Reasons(bs []rundata.Broken) []string {
	var out []string
	for _, b := range bs {
		out = append(out, Reason(b))
	}
	return out
}

// sentence is what b says, without where.
func sentence(b rundata.Broken) string {
	d := func(ns float64) string { return FmtDuration(time.Duration(ns)) }
	shard := -1
	if b.Shard != nil {
		shard = *b.Shard
	}
	switch b.Rule {
	case rundata.RuleLag:
		return fmt.Sprintf("schedule lag p99 %s is not under the %s threshold (max %s)", d(b.Measured), d(b.Limit), d(b.Max))
	case rundata.RuleCanary:
		return fmt.Sprintf("canary p99 %s exceeds %s (a request that does no work was slow: the service or the machine was starved)", d(b.Measured), d(b.Limit))
	case rundata.RuleRate:
		return fmt.Sprintf("achieved rate %.2f/s vs target %.2f/s: %d sends where the schedule had %d (tolerance %.0f)",
			b.Measured, b.Limit, b.Count, b.Of, b.Tolerance)
	case rundata.RuleHarness:
		return fmt.Sprintf("%d load-generator errors (%.3f%% of %d, limit %.1f%%)", b.Count, b.Measured, b.Of, b.Limit)
	case rundata.RuleUnsent:
		return fmt.Sprintf("%.0f scheduled requests were never sent", b.Measured)
	case rundata.RuleHealth:
		if b.Count == 0 {
			return fmt.Sprintf("%s unhealthy: no results from /%s", b.Phase, b.Endpoint)
		}
		var parts []string
		for _, c := range b.Classes {
			parts = append(parts, fmt.Sprintf("%.3g %% %s", c.Share, c.Class))
		}
		return fmt.Sprintf("%s unhealthy: %s on /%s (success %.3g %%, needs ≥ %.3g %%; no answer %.3g %%, needs ≤ %.3g %%)",
			b.Phase, strings.Join(parts, ", "), b.Endpoint, b.Measured, b.Limit, b.Unanswered, b.MaxUnanswered)
	case rundata.RuleStationary:
		why := fmt.Sprintf("success %.3g %% in its first half vs %.3g %% in its second", b.Measured, b.Limit)
		if b.Unit == rundata.UnitNanos {
			why = fmt.Sprintf("p50 %s in its first half vs %s in its second", d(b.Measured), d(b.Limit))
		}
		return fmt.Sprintf("warm-up too short (%s not stationary): /%s %s; raise phases.warmup (now %s) so that the service is warm before the baseline",
			b.Phase, b.Endpoint, why, FmtDuration(b.Warmup))
	case rundata.RuleInterrupted:
		return fmt.Sprintf("interrupted after %s of %s", d(b.Measured), d(b.Limit))
	case rundata.RuleShardsMissing:
		return "not every shard reported"
	case rundata.RuleShardFailed:
		return fmt.Sprintf("shard %d failed: %s", shard, b.Error)
	case rundata.RuleShardStopped:
		return fmt.Sprintf("shard %d stopped before the end", shard)
	case rundata.RuleShardLate:
		return fmt.Sprintf("shard %d started %s after t0 (limit %s, the lag threshold)", shard, d(b.Measured), d(b.Limit))
	case rundata.RuleShardClock:
		return fmt.Sprintf("shard %d's clock is known only within ±%s of the runner's (limit %s)", shard, d(b.Measured), d(b.Limit))
	case rundata.RuleShardLag:
		return fmt.Sprintf("shard %d: schedule lag p99 is not under the %s threshold in %s (%.1f %% of its requests late)",
			shard, FmtDuration(b.Threshold), b.LatePhase, b.Measured)
	}
	return fmt.Sprintf("%s %q (%s against %s %s)", unknownRule, b.Rule, FmtHuman(b.Measured), FmtHuman(b.Limit), b.Unit)
}

// unknownRule leads the sentence of a rule the words do not know.
const unknownRule = "broke the rule"

// Numbers are a break's measured value against its limit as a report
// shows them: durations in ms (Unit "ms"), shares in % (Unit "%"), rates
// in /s, counts without a unit; Measured NaN where the report shows the
// rule's name alone, Limit NaN where it shows no limit.
type Numbers struct {
	Measured, Limit float64
	Unit            string
	// Higher is set when Measured breaks the rule by being above Limit
	// (schedule lag), unset when by being below (success).
	Higher bool
}

// NumbersOf are the numbers a report shows of b: none for a rule whose
// numbers are not one value against a limit (stationary, interrupted), for
// the shards' rules (their column holds rules of different numbers), nor
// for a health break without results.
func NumbersOf(b rundata.Broken) Numbers {
	n := Numbers{Measured: b.Measured, Limit: b.Limit, Unit: string(b.Unit), Higher: true}
	switch {
	case b.Rule == rundata.RuleStationary, b.Rule == rundata.RuleInterrupted, b.Rule.Shard():
		return Numbers{Measured: math.NaN(), Limit: math.NaN()}
	case b.Rule == rundata.RuleHealth:
		if b.Count == 0 {
			return Numbers{Measured: math.NaN(), Limit: math.NaN()}
		}
		n.Higher = false
	case b.Rule == rundata.RuleRate:
		n.Higher = b.Measured > b.Limit
	}
	if b.Unit == rundata.UnitNanos {
		n.Measured, n.Limit, n.Unit = b.Measured/1e6, b.Limit/1e6, "ms"
	}
	return n
}

// String is "7.8 ms > 5 ms" ("180/s < 200/s"), the measured value alone
// without a limit, and "" without a measured value.
func (n Numbers) String() string {
	if math.IsNaN(n.Measured) {
		return ""
	}
	s := WithUnit(n.Measured, n.Unit)
	if math.IsNaN(n.Limit) {
		return s
	}
	op := " < "
	if n.Higher {
		op = " > "
	}
	return s + op + WithUnit(n.Limit, n.Unit)
}

// WithUnit writes v (FmtHuman) with its unit: "/s" and "" close, the
// others after a space ("180/s", "5 ms", "0.1 %").
func WithUnit(v float64, unit string) string {
	if unit == "" || unit == "/s" {
		return FmtHuman(v) + unit
	}
	return FmtHuman(v) + " " + unit
}

// Worse reports whether n is a worse break than than: further past the
// limit, relative to it (a value without numbers is never worse than one
// with).
func (n Numbers) Worse(than Numbers) bool {
	a, o := n.Measured, than.Measured
	switch {
	case math.IsNaN(o):
		return !math.IsNaN(a)
	case math.IsNaN(a):
		return false
	}
	// Compare by how far past the limit, relative to it, where both have one.
	if l1, l2 := n.Limit, than.Limit; l1 > 0 && l2 > 0 {
		a, o = a/l1, o/l2
	}
	if n.Higher {
		return a > o
	}
	return a < o
}

// Short is a rule's name with its numbers: "schedule lag 7.8 ms > 5 ms",
// or the name alone when they say nothing.
func Short(name string, n Numbers) string {
	if s := n.String(); s != "" {
		return name + " " + s
	}
	return name
}

// Group is a run's breaks of one rule: the rule's name, every endpoint's
// phase that broke it ("a/baseline"), and the numbers of the worst break.
type Group struct {
	Name  string
	Where []string
	Worst Numbers
}

// Groups gathers bs by rule, in Names order (a rule the words do not know
// last): per rule, the numbers of its worst break (Numbers.Worse; the first
// of equals) and every place that broke it, once each, in the order of bs.
func Groups(bs []rundata.Broken) []Group {
	var out []Group
	at := map[string]int{}
	for _, b := range bs {
		name, n := Name(b.Rule), NumbersOf(b)
		i, ok := at[name]
		switch {
		case !ok:
			i, at[name] = len(out), len(out)
			out = append(out, Group{Name: name, Worst: n})
		case n.Worse(out[i].Worst):
			out[i].Worst = n
		}
		if w := b.Where(); !slices.Contains(out[i].Where, w) {
			out[i].Where = append(out[i].Where, w)
		}
	}
	order := Names()
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(out, func(a, b Group) int { return rank(a.Name) - rank(b.Name) })
	return out
}
