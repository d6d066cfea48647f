//go:build e2e

package main

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// retryArms are modes added to the short retry-storm preset so that one
// matrix also holds the layouts that break each retry claim: clients that
// retry a class the pool never answers, and bulkheads with and without
// retrying clients.
const retryArms = `  - bulkhead
  - name: bulkhead-retry
    pools: bulkhead
    clients:
      retry: {attempts: 4, on: [rejected], backoff: 10ms, max_backoff: 40ms, jitter: 0.5, endpoints: [a]}
  - name: shared-retry-errors
    pools: shared
    clients:
      retry: {attempts: 4, on: [dep_error], backoff: 10ms, max_backoff: 40ms, jitter: 0.5, endpoints: [a]}

expectations:`

// TestRetryStormPreset: on loopback with short phases, clients that retry
// the shared pool's rejections multiply /a's load as 1 + r + r² + r³
// (RETRY-AMPLIFIES) and hurt /b (RETRY-HURTS); a token budget and an
// honoured Retry-After keep the amplification near 1 (RETRY-CONTAINED):
// exit 0. The same runs judged with the roles that break each claim: a
// client that retries only dependency errors (which a hanging A never
// returns) does not amplify; behind bulkheads the retries do not reach /b;
// clients without a budget are not contained.
func TestRetryStormPreset(t *testing.T) {
	text := shortPreset(t, "retry-storm",
		"budget: {ratio: 0.1}", "budget: {ratio: 0.1, reserve: 2}",
		"\nexpectations:", "\n"+retryArms)
	code, out, dir := runSpecJudged(t, "retry-storm", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, v := range []string{"RETRY-AMPLIFIES", "RETRY-HURTS", "RETRY-CONTAINED"} {
		if o := outcomeOf(s, v); o != verdict.Supported {
			t.Errorf("%s: %s, want SUPPORTED", v, o)
		}
	}
	t.Logf("amplification %.2f, predicted %.2f, harm %.2f", measureOf(s, "RETRY-AMPLIFIES", "/a amplification"),
		measureOf(s, "RETRY-AMPLIFIES", "/a predicted"), measureOf(s, "RETRY-HURTS", "/b harm"))
	if md := readReport(t, dir); !strings.Contains(md, "## Retrying clients: offered and delivered load") || !strings.Contains(md, "| hang-shared-retry-r1 | /a | 4 |") {
		t.Errorf("report.md lacks the retrying clients' table")
	}

	for _, tc := range []struct {
		verdict string
		roles   rundata.RetryRoles
	}{
		{"RETRY-AMPLIFIES", rundata.RetryRoles{Condition: "hang", Control: "shared", Storm: "shared-retry-errors"}},
		{"RETRY-HURTS", rundata.RetryRoles{Condition: "hang", Control: "bulkhead", Storm: "bulkhead-retry"}},
		{"RETRY-CONTAINED", rundata.RetryRoles{Condition: "hang", Control: "shared", Storm: "shared-retry", Contained: []string{"shared-retry"}}},
	} {
		roles := tc.roles
		if o := rejudge(t, dir, tc.verdict, func(ex *rundata.Expectations) { ex.Policy = &rundata.PolicyClaims{Retry: &roles} }); o != verdict.NotSupported {
			t.Errorf("%s with %+v: %s, want NOT SUPPORTED", tc.verdict, tc.roles, o)
		}
	}
}
