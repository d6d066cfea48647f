package measure

import (
	"testing"
	"time"
)

func TestClassifyReason(t *testing.T) {
	for _, tc := range []struct {
		reason, rule, against string
		where                 string
	}{
		{"a/baseline: schedule lag p99 6.410239ms is not under the 5ms threshold (max 13.71916ms)", RuleLag, "6.41 ms > 5 ms", "a/baseline"},
		{"b/fault: schedule lag p99 7.8 ms is not under the 5 ms threshold (max 13.7 ms)", RuleLag, "7.8 ms > 5 ms", "b/fault"},
		{"_canary/fault: canary p99 31.26ms exceeds 25ms (a request that does no work was slow: the service or the machine was starved)", RuleCanary, "31.3 ms > 25 ms", "_canary/fault"},
		{"a/fault: achieved rate 180/s is 10% below target 200/s", RuleRate, "180/s < 200/s", "a/fault"},
		{"a/fault: achieved rate 201.50/s vs target 200.00/s: 2015 sends where the schedule had 2000 (tolerance 20)", RuleRate, "202/s > 200/s", "a/fault"},
		{"a/fault: 12 load-generator errors (0.600% of 2000, limit 0.1%)", RuleHarness, "0.6 % > 0.1 %", "a/fault"},
		{"a/fault: 3 scheduled requests were never sent", RuleUnsent, "3 > 0", "a/fault"},
		{"a/baseline: baseline unhealthy: 100 % transport_error on /a (success 0 %, needs ≥ 99 %; no answer 100 %, needs ≤ 1 %)", RuleHealth, "0 % < 99 %", "a/baseline"},
		{"a/baseline: warm-up too short (baseline not stationary): /a p50 12ms in its first half vs 10ms in its second", RuleStationary, RuleStationary, "a/baseline"},
		{"a/fault: interrupted after 3.2s of 10s", RuleInterrupted, RuleInterrupted, "a/fault"},
		{"the load generator did not keep the open model", RuleOther, RuleOther, ""},
	} {
		b := ClassifyReason(tc.reason)
		where := ""
		if len(b.Where) > 0 {
			where = b.Where[0]
		}
		if b.Rule != tc.rule || b.Against() != tc.against || where != tc.where {
			t.Errorf("ClassifyReason(%q) = %s %q at %q, want %s %q at %q", tc.reason, b.Rule, b.Against(), where, tc.rule, tc.against, tc.where)
		}
	}
}

func TestRuleBreaksKeepsTheWorst(t *testing.T) {
	bs := RuleBreaks([]string{
		"a/baseline: schedule lag p99 6.4ms is not under the 5ms threshold (max 13ms)",
		"b/fault: schedule lag p99 7.8ms is not under the 5ms threshold (max 9ms)",
		"_canary/fault: canary p99 30ms exceeds 25ms (slow)",
		"a/fault: schedule lag p99 5.1ms is not under the 5ms threshold (max 6ms)",
	})
	if len(bs) != 2 || bs[0].Rule != RuleLag || bs[1].Rule != RuleCanary {
		t.Fatalf("RuleBreaks = %+v, want lag then canary", bs)
	}
	if got := bs[0].Against(); got != "7.8 ms > 5 ms" || len(bs[0].Where) != 3 {
		t.Errorf("lag = %q at %v, want 7.8 ms > 5 ms at 3 places", got, bs[0].Where)
	}
}

func TestRoundReason(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"schedule lag p99 6.410239ms is not under the 5ms threshold (max 13.71916ms)", "schedule lag p99 6.41 ms is not under the 5 ms threshold (max 13.7 ms)"},
		{"interrupted after 3.2s of 1m0s", "interrupted after 3.2 s of 60 s"},
		{"canary p99 812.5µs exceeds 25ms", "canary p99 812 µs exceeds 25 ms"},
		{"achieved rate 180/s is 10% below target 200/s on slow-r1", "achieved rate 180/s is 10% below target 200/s on slow-r1"},
		{"already 6.41 ms", "already 6.41 ms"},
	} {
		if got := RoundReason(tc.in); got != tc.want {
			t.Errorf("RoundReason(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := FmtDuration(1500 * time.Microsecond); got != "1.5 ms" {
		t.Errorf("FmtDuration(1.5ms) = %q", got)
	}
}
