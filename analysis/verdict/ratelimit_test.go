package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// rlRun is a run summary of the rate-limit claim in mode under cond: the
// victim's baseline p99 is 15 ms, its fault p99 victimP99 ms with errRate
// of errors (its spans the same throughout the fault); the culprit's
// limiter refused limited of its results.
func rlRun(mode, cond string, repeat int, victimP99, errRate, limited float64) measure.RunSummary {
	spans := make([]measure.SpanStat, 8)
	for i := range spans {
		spans[i] = measure.SpanStat{EndT: measure.Num(float64(i+1) * 0.5), P99Ratio: measure.Num(victimP99 / 15), ErrorRate: measure.Num(errRate)}
	}
	return measure.RunSummary{ID: fmt.Sprintf("%s-%s-r%d", cond, mode, repeat), Mode: mode, Condition: cond, Repeat: repeat, Status: rundata.StatusComplete, Valid: true,
		TimeoutMs: 250,
		Endpoints: []measure.EndpointStats{
			{Endpoint: "a", BaselineP99Ms: 15, FaultP99Ms: 120, FaultErrorRate: 0.5, FaultOKRate: 100},
			{Endpoint: "b", BaselineP99Ms: 15, FaultP99Ms: measure.Num(victimP99), FaultErrorRate: measure.Num(errRate), FaultOKRate: 200}},
		VictimSpans: spans,
		RateLimit: &measure.RateLimitRun{LimitedShare: measure.Num(limited), LimiterRejected: measure.Num(limited * 800), LimitPerS: 220, OfferedPerS: 200,
			InflightBaseline: 2, InflightFault: 20}}
}

// TestRateLimitNotBulkhead: the claim holds when the limiter refused
// (almost) nothing while /b degraded under it and stayed at its baseline
// behind bulkheads; it fails when the limiter did bound the culprit, when
// /b did not degrade under the limiter (a slowdown too small, or a
// rise no larger than the healthy control's), and when the bulkheads let
// /b down too. One repeat's noise (a limiter refusing 0.4 %) does not fail
// it.
func TestRateLimitNotBulkhead(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Slow = "tenfold"
	ex.RateLimit = &rundata.RateLimitRoles{}
	healthy := []measure.RunSummary{rlRun("ratelimit", "healthy", 1, 20, 0, 0), rlRun("bulkhead", "healthy", 1, 18, 0, 0)}
	for _, tc := range []struct {
		name      string
		rl, bh    measure.RunSummary
		noControl bool
		want      Outcome
		reason    string
	}{
		{"limiter untouched, /b down; bulkheads hold", rlRun("ratelimit", "tenfold", 1, 240, 0.3, 0), rlRun("bulkhead", "tenfold", 1, 17, 0, 0), false, Supported, ""},
		{"p99 alone degrades /b", rlRun("ratelimit", "tenfold", 1, 200, 0, 0.004), rlRun("bulkhead", "tenfold", 1, 17, 0, 0), false, Supported, ""},
		{"the limiter bounds A (rates too low)", rlRun("ratelimit", "tenfold", 1, 18, 0, 0.75), rlRun("bulkhead", "tenfold", 1, 17, 0, 0), false, NotSupported,
			"/a results its rate limiter refused (class limited), ratelimit = 0.75 share, needs <= 0.01"},
		{"a slowdown too small: /b unhurt", rlRun("ratelimit", "tenfold", 1, 22, 0, 0), rlRun("bulkhead", "tenfold", 1, 17, 0, 0), false, NotSupported,
			"repeats in which /b degraded, ratelimit = 0 share, needs >= 1"},
		{"bulkheads let /b down too", rlRun("ratelimit", "tenfold", 1, 240, 0.3, 0), rlRun("bulkhead", "tenfold", 1, 240, 0.3, 0), false, NotSupported,
			"/b fault p99 − baseline p99, bulkhead"},
		{"no control cell: judged against the baseline", rlRun("ratelimit", "tenfold", 1, 240, 0.3, 0), rlRun("bulkhead", "tenfold", 1, 17, 0, 0), true, Supported, ""},
	} {
		runs := []measure.RunSummary{tc.rl, tc.bh}
		if !tc.noControl {
			runs = append(runs, healthy...)
		}
		v := verdictOn(t, claims.RateLimitNotBulkhead, buildCells(runs, ex), ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
	}

	// A healthy control as noisy as the slow cell: /b's rise is the
	// machine's, not the fault's.
	noisy := []measure.RunSummary{rlRun("ratelimit", "healthy", 1, 260, 0.4, 0), rlRun("ratelimit", "tenfold", 1, 240, 0.3, 0), rlRun("bulkhead", "tenfold", 1, 17, 0, 0)}
	if v := verdictOn(t, claims.RateLimitNotBulkhead, buildCells(noisy, ex), ex); v.Outcome != NotSupported {
		t.Errorf("a control as bad as the fault: %s (%s), want NOT SUPPORTED", v.Outcome, v.Reason)
	}

	// Three repeats, one of whose limiter refused a few calls more than
	// the threshold: the interval reaches across it, INCONCLUSIVE, not a
	// failure of a correct service.
	var three []measure.RunSummary
	for i, l := range []float64{0, 0.001, 0.03} {
		three = append(three, rlRun("ratelimit", "tenfold", i+1, 240, 0.3, l), rlRun("bulkhead", "tenfold", i+1, 17, 0, 0))
	}
	if v := verdictOn(t, claims.RateLimitNotBulkhead, buildCells(three, ex), ex); v.Outcome == NotSupported {
		t.Errorf("one noisy repeat of three: %s (%s), want not NOT SUPPORTED", v.Outcome, v.Reason)
	}

	// Without expectations.ratelimit the claim is not judged; without the
	// rate-limited mode's runs it is SKIPPED.
	none := rundata.DefaultExpectations()
	for _, v := range judge(&Summary{Cells: buildCells(healthy, none), Expectations: none}) {
		if v.Name == claims.RateLimitNotBulkhead {
			t.Errorf("without expectations.ratelimit: %s judged", v.Name)
		}
	}
	if v := verdictOn(t, claims.RateLimitNotBulkhead, buildCells(healthy, ex), ex); v.Outcome != Skipped {
		t.Errorf("without a tenfold run: %s, want SKIPPED", v.Outcome)
	}
}
