package words

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func shard(i int) *int { return &i }

// ruleCases are a record of every rule with its sentence and its numbers
// as a report shows them. The sentences are the load generator's words of
// before the records, their durations rounded as the reports rounded them.
type ruleCase struct {
	b        rundata.Broken
	reason   string
	numbers  string
	longName string // to tell the cases apart
}

var ruleCases = []ruleCase{
	{rundata.Broken{Rule: rundata.RuleLag, Endpoint: "a", Phase: "baseline", Measured: 6410239, Limit: 5e6, Max: 13719160, Unit: rundata.UnitNanos},
		"a/baseline: schedule lag p99 6.41 ms is not under the 5 ms threshold (max 13.7 ms)", "6.41 ms > 5 ms", "lag"},
	{rundata.Broken{Rule: rundata.RuleCanary, Endpoint: "_canary", Phase: "fault", Measured: 31.26e6, Limit: 25e6, Unit: rundata.UnitNanos},
		"_canary/fault: canary p99 31.3 ms exceeds 25 ms (a request that does no work was slow: the service or the machine was starved)", "31.3 ms > 25 ms", "canary"},
	{rundata.Broken{Rule: rundata.RuleRate, Endpoint: "a", Phase: "fault", Measured: 202.4987, Limit: 200, Unit: rundata.UnitPerSecond, Count: 2025, Of: 2000, Tolerance: 20},
		"a/fault: achieved rate 202.50/s vs target 200.00/s: 2025 sends where the schedule had 2000 (tolerance 20)", "202/s > 200/s", "rate above"},
	{rundata.Broken{Rule: rundata.RuleRate, Endpoint: "b", Phase: "fault", Measured: 180, Limit: 200, Unit: rundata.UnitPerSecond, Count: 1800, Of: 2000, Tolerance: 20},
		"b/fault: achieved rate 180.00/s vs target 200.00/s: 1800 sends where the schedule had 2000 (tolerance 20)", "180/s < 200/s", "rate below"},
	{rundata.Broken{Rule: rundata.RuleHarness, Endpoint: "a", Phase: "fault", Measured: 0.6, Limit: 0.1, Unit: rundata.UnitPercent, Count: 12, Of: 2000},
		"a/fault: 12 load-generator errors (0.600% of 2000, limit 0.1%)", "0.6 % > 0.1 %", "harness"},
	{rundata.Broken{Rule: rundata.RuleUnsent, Endpoint: "b", Phase: "recovery", Measured: 3},
		"b/recovery: 3 scheduled requests were never sent", "3 > 0", "unsent"},
	{rundata.Broken{Rule: rundata.RuleHealth, Endpoint: "b", Phase: "baseline", Measured: 90, Limit: 99, Unit: rundata.UnitPercent, Count: 500,
		Unanswered: 4, MaxUnanswered: 1, Classes: []rundata.ClassShare{{Class: rundata.ClassRejected, Share: 6}, {Class: rundata.ClassClientTimeout, Share: 4}}},
		"b/baseline: baseline unhealthy: 6 % rejected, 4 % client_timeout on /b (success 90 %, needs ≥ 99 %; no answer 4 %, needs ≤ 1 %)", "90 % < 99 %", "health"},
	{rundata.Broken{Rule: rundata.RuleHealth, Endpoint: "a", Phase: "baseline", Limit: 99, Unit: rundata.UnitPercent, MaxUnanswered: 1},
		"a/baseline: baseline unhealthy: no results from /a", "", "health without results"},
	{rundata.Broken{Rule: rundata.RuleStationary, Endpoint: "b", Phase: "baseline", Measured: 20123456, Limit: 2e6, Unit: rundata.UnitNanos, Warmup: time.Second},
		"b/baseline: warm-up too short (baseline not stationary): /b p50 20.1 ms in its first half vs 2 ms in its second; raise phases.warmup (now 1 s) so that the service is warm before the baseline",
		"", "stationary p50"},
	{rundata.Broken{Rule: rundata.RuleStationary, Endpoint: "a", Phase: "baseline", Measured: 100 * (265.0 / 300), Limit: 100, Unit: rundata.UnitPercent, Warmup: time.Second},
		"a/baseline: warm-up too short (baseline not stationary): /a success 88.3 % in its first half vs 100 % in its second; raise phases.warmup (now 1 s) so that the service is warm before the baseline",
		"", "stationary success"},
	{rundata.Broken{Rule: rundata.RuleInterrupted, Endpoint: "a", Phase: "recovery", Measured: 3.2004e9, Limit: 10e9, Unit: rundata.UnitNanos},
		"a/recovery: interrupted after 3.2 s of 10 s", "", "interrupted"},
	{rundata.Broken{Rule: rundata.RuleShardsMissing, Endpoint: "a", Phase: "fault"},
		"a/fault: not every shard reported", "", "shards missing"},
	{rundata.Broken{Rule: rundata.RuleShardFailed, Endpoint: "a", Phase: "fault", Shard: shard(0), Error: "stream: unexpected EOF"},
		"a/fault: shard 0 failed: stream: unexpected EOF", "", "shard failed"},
	{rundata.Broken{Rule: rundata.RuleShardStopped, Endpoint: "a", Phase: "fault", Shard: shard(1)},
		"a/fault: shard 1 stopped before the end", "", "shard stopped"},
	{rundata.Broken{Rule: rundata.RuleShardLate, Endpoint: "a", Phase: "fault", Shard: shard(2), Measured: 7.3e6, Limit: 5e6, Unit: rundata.UnitNanos},
		"a/fault: shard 2 started 7.3 ms after t0 (limit 5 ms, the lag threshold)", "", "shard late"},
	{rundata.Broken{Rule: rundata.RuleShardClock, Endpoint: "a", Phase: "fault", Shard: shard(3), Measured: 70123456, Limit: 62.5e6, Unit: rundata.UnitNanos},
		"a/fault: shard 3's clock is known only within ±70.1 ms of the runner's (limit 62.5 ms)", "", "shard clock"},
	{rundata.Broken{Rule: rundata.RuleShardLag, Endpoint: "a", Phase: "fault", Shard: shard(4), Measured: 100 * 0.0345, Limit: 1, Unit: rundata.UnitPercent,
		Threshold: 5 * time.Millisecond, LatePhase: "baseline"},
		"a/fault: shard 4: schedule lag p99 is not under the 5 ms threshold in baseline (3.5 % of its requests late)", "", "shard lag"},
}

// TestReason: every rule's record in words, and its numbers.
func TestReason(t *testing.T) {
	for _, tc := range ruleCases {
		if err := tc.b.Check(); err != nil {
			t.Errorf("%s: the case's record is not one of the contract: %v", tc.longName, err)
		}
		if got := Reason(tc.b); got != tc.reason {
			t.Errorf("%s: Reason(%+v)\n = %q\nwant %q", tc.longName, tc.b, got, tc.reason)
		}
		if got := NumbersOf(tc.b).String(); got != tc.numbers {
			t.Errorf("%s: NumbersOf(%+v) = %q, want %q", tc.longName, tc.b, got, tc.numbers)
		}
	}
}

// TestEveryRuleHasWords fails for a rule added to rundata.Rules without
// its words: a name in a report, a sentence of its own (not the words for
// a rule they do not know) and a case above.
func TestEveryRuleHasWords(t *testing.T) {
	for _, r := range rundata.Rules {
		if name, ok := names[r]; !ok || name == "" || name == Other {
			t.Errorf("rule %q has no name (%q)", r, name)
		}
		b := rundata.Broken{Rule: r, Endpoint: "a", Phase: "fault"}
		if got := sentence(b); strings.HasPrefix(got, unknownRule) {
			t.Errorf("rule %q has no sentence: %q", r, got)
		}
		if !slices.ContainsFunc(ruleCases, func(c ruleCase) bool { return c.b.Rule == r }) {
			t.Errorf("rule %q has no case in TestReason", r)
		}
	}
	want := []string{"schedule lag", "canary", "send rate", "load-generator errors", "unsent requests", "baseline health", "warm-up",
		"interrupted", Shards, Other}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

// TestNumbers: the measured value against the limit, and which of two
// breaks is worse: further past its limit, relative to it.
func TestNumbers(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		n    Numbers
		want string
	}{
		{Numbers{Measured: 7.8, Limit: 5, Unit: "ms", Higher: true}, "7.8 ms > 5 ms"},
		{Numbers{Measured: 180, Limit: 200, Unit: "/s"}, "180/s < 200/s"},
		{Numbers{Measured: 12, Limit: nan, Unit: "ms"}, "12 ms"},
		{Numbers{Measured: nan, Limit: nan}, ""},
	} {
		if got := tc.n.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.n, got, tc.want)
		}
	}
	lag := func(p99, limit float64) Numbers {
		return Numbers{Measured: p99, Limit: limit, Unit: "ms", Higher: true}
	}
	success := func(s float64) Numbers { return Numbers{Measured: s, Limit: 99, Unit: "%"} }
	for _, tc := range []struct {
		a, b Numbers
		want bool
	}{
		{lag(7.8, 5), lag(6.4, 5), true},
		{lag(6.4, 5), lag(7.8, 5), false},
		{lag(12, 10), lag(7, 5), false}, // 1.2× its limit against 1.4×
		{success(10), success(40), true},
		{lag(5.1, 5), Numbers{Measured: nan, Limit: nan}, true},
		{Numbers{Measured: nan, Limit: nan}, lag(5.1, 5), false},
	} {
		if got := tc.a.Worse(tc.b); got != tc.want {
			t.Errorf("%+v.Worse(%+v) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestGroups: a run's records gathered by rule in the report's order, the
// worst of each with every place once; Short says a group in a few words.
func TestGroups(t *testing.T) {
	lag := func(ep, phase string, p99 float64) rundata.Broken {
		return rundata.Broken{Rule: rundata.RuleLag, Endpoint: ep, Phase: phase, Measured: p99, Limit: 5e6, Unit: rundata.UnitNanos}
	}
	stopped := rundata.Broken{Rule: rundata.RuleShardStopped, Endpoint: "a", Phase: "fault", Shard: shard(1)}
	interrupted := rundata.Broken{Rule: rundata.RuleInterrupted, Endpoint: "b", Phase: "fault", Measured: 1e9, Limit: 2e9, Unit: rundata.UnitNanos}
	gs := Groups([]rundata.Broken{stopped, lag("a", "fault", 6.4e6), interrupted, lag("b", "fault", 7.8e6), lag("a", "fault", 5.5e6)})
	var got []string
	for _, g := range gs {
		got = append(got, fmt.Sprintf("%s @ %s", Short(g.Name, g.Worst), strings.Join(g.Where, " ")))
	}
	want := []string{"schedule lag 7.8 ms > 5 ms @ a/fault b/fault", "interrupted @ b/fault", "shards @ a/fault"}
	if !slices.Equal(got, want) {
		t.Errorf("Groups = %q, want %q", got, want)
	}
}

func TestFmtDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{6410239, "6.41 ms"}, {time.Minute, "60 s"}, {812500 * time.Nanosecond, "812 µs"}, {1500 * time.Microsecond, "1.5 ms"}, {0, "0 ns"},
	} {
		if got := FmtDuration(tc.d); got != tc.want {
			t.Errorf("FmtDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
