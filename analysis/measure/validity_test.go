package measure

import (
	"slices"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestRuleBreaksKeepsTheWorst: the records of a run read as one break per
// rule, in the report's order, with its worst value (furthest past its
// limit) and every place once.
func TestRuleBreaksKeepsTheWorst(t *testing.T) {
	lag := func(where string, p99 float64) rundata.Broken {
		return rundata.Broken{Rule: rundata.RuleLag, Endpoint: where[:1], Phase: where[2:], Measured: p99, Limit: 5e6, Max: 2 * p99, Unit: rundata.UnitNanos}
	}
	canary := rundata.Broken{Rule: rundata.RuleCanary, Endpoint: rundata.CanaryEndpoint, Phase: "fault", Measured: 30e6, Limit: 25e6, Unit: rundata.UnitNanos}
	bs := RuleBreaks([]rundata.Broken{canary, lag("a/baseline", 6.4e6), lag("b/fault", 7.8e6), lag("a/fault", 5.1e6), lag("a/baseline", 6e6)})
	if len(bs) != 2 || bs[0].Rule != RuleLag || bs[1].Rule != RuleCanary {
		t.Fatalf("RuleBreaks = %+v, want lag then canary", bs)
	}
	if got, where := bs[0].Against(), []string{"a/baseline", "b/fault", "a/fault"}; got != "7.8 ms > 5 ms" || !slices.Equal(bs[0].Where, where) {
		t.Errorf("lag = %q at %v, want 7.8 ms > 5 ms at %v", got, bs[0].Where, where)
	}
	if got := bs[1].Against(); got != "30 ms > 25 ms" || !slices.Equal(bs[1].Where, []string{"_canary/fault"}) {
		t.Errorf("canary = %q at %v", got, bs[1].Where)
	}
}

// TestRuleBreaksHealth: a broken health rule carries the largest share of
// transport errors of its records (what says the target was down), and
// its success against the limit; a phase without results shows no number.
func TestRuleBreaksHealth(t *testing.T) {
	health := func(ep string, success float64, classes ...rundata.ClassShare) rundata.Broken {
		return rundata.Broken{Rule: rundata.RuleHealth, Endpoint: ep, Phase: "baseline", Measured: success, Limit: 99, Unit: rundata.UnitPercent,
			Count: 100, Unanswered: 100 - success, MaxUnanswered: 1, Classes: classes}
	}
	bs := RuleBreaks([]rundata.Broken{
		health("a", 40, rundata.ClassShare{Class: rundata.ClassRejected, Share: 10}, rundata.ClassShare{Class: rundata.ClassTransportError, Share: 50}),
		health("b", 10, rundata.ClassShare{Class: rundata.ClassTransportError, Share: 90}),
	})
	if len(bs) != 1 || bs[0].Rule != RuleHealth || bs[0].Against() != "10 % < 99 %" || bs[0].TransportErrors != 90 {
		t.Errorf("RuleBreaks = %+v, want health 10 %% < 99 %% with 90 %% transport errors", bs)
	}
	none := rundata.Broken{Rule: rundata.RuleHealth, Endpoint: "a", Phase: "baseline", Limit: 99, Unit: rundata.UnitPercent, MaxUnanswered: 1}
	if bs := RuleBreaks([]rundata.Broken{none}); len(bs) != 1 || bs[0].Against() != RuleHealth || bs[0].TransportErrors != 0 {
		t.Errorf("no results: %+v, want the rule's name alone", bs)
	}
}
