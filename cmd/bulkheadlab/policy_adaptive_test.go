//go:build e2e

package main

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// adaptiveShort is the adaptive-limit preset, light and short, on the two
// conditions its verdicts need and the two modes they compare, its
// limiters scaled to the light pool of 6 (bulkheads of 3) as the preset's
// are to 20 (bulkheads of 10).
func adaptiveShort(t *testing.T, edits ...string) string {
	return shortPreset(t, "adaptive-limit", append([]string{
		"{limiter: {min: 1, max: 20, initial: 10,", "{limiter: {min: 1, max: 6, initial: 3,",
		"conditions: [healthy, slow, failing, busy]", "conditions: [slow, busy]",
		"modes:\n  - shared\n  - bulkhead", "modes:\n  - bulkhead",
		"phases: {warmup: 1s, baseline: 3s, fault: 6s, recovery: 1s}", "phases: {warmup: 500ms, baseline: 1500ms, fault: 2s, recovery: 300ms}",
	}, edits...)...)
}

// TestAdaptiveLimitPreset: the preset runs end to end and decides both
// verdicts on the limiter's own numbers. Measured (docs/policies.md): the limit grows
// to the whole pool while A is healthy, so under a slow A it isolates worse
// than a bulkhead (ADAPTIVE-ISOLATES NOT SUPPORTED) and under busy it serves
// A more (ADAPTIVE-COST SUPPORTED); the test asserts a decision, not which.
func TestAdaptiveLimitPreset(t *testing.T) {
	code, out, dir := runSpecJudged(t, "adaptive-limit", adaptiveShort(t))
	s := readSummary(t, dir)
	for _, v := range []string{"ADAPTIVE-ISOLATES", "ADAPTIVE-COST"} {
		if o := outcomeOf(s, v); o != verdict.Supported && o != verdict.NotSupported {
			t.Errorf("%s = %s, want a decision; exit %d, output:\n%s", v, o, code, out)
		}
	}
	if lim := measureOf(s, "ADAPTIVE-ISOLATES", "/a adaptive limit"); !(lim >= 1 && lim <= 6) {
		t.Errorf("/a's adaptive limit in the fault phase: minimum %v, want between 1 and 6 (sampled from the service)", lim)
	}
	t.Logf("exit %d\n%s", code, out)
}

// TestAdaptiveVerdictsCanFail: a limiter that may not exceed the bulkhead's
// 3 permits isolates like a bulkhead (ADAPTIVE-ISOLATES SUPPORTED) and so
// costs as much under busy (ADAPTIVE-COST NOT SUPPORTED, exit 1); with the
// preset's measured outcomes (the other way round) each verdict is seen
// turning with the layout.
func TestAdaptiveVerdictsCanFail(t *testing.T) {
	code, out, dir := runSpecJudged(t, "adaptive-limit", adaptiveShort(t, "{limiter: {min: 1, max: 6, initial: 3,", "{limiter: {min: 1, max: 3, initial: 3,"))
	s := readSummary(t, dir)
	if code != ExitFailed || outcomeOf(s, "ADAPTIVE-ISOLATES") != verdict.Supported || outcomeOf(s, "ADAPTIVE-COST") != verdict.NotSupported {
		t.Errorf("exit %d, ADAPTIVE-ISOLATES %s, ADAPTIVE-COST %s; want 1, SUPPORTED, NOT SUPPORTED; output:\n%s",
			code, outcomeOf(s, "ADAPTIVE-ISOLATES"), outcomeOf(s, "ADAPTIVE-COST"), out)
	}
}

// TestAdaptivePinnedToThePoolDoesNotIsolate: a "limiter" pinned at the
// whole pool of 6 leaves /b unprotected: ADAPTIVE-ISOLATES NOT SUPPORTED.
func TestAdaptivePinnedToThePoolDoesNotIsolate(t *testing.T) {
	_, out, dir := runSpecJudged(t, "adaptive-limit", adaptiveShort(t, "{limiter: {min: 1, max: 6, initial: 3,", "{limiter: {min: 6, max: 6, initial: 6,"))
	if o := outcomeOf(readSummary(t, dir), "ADAPTIVE-ISOLATES"); o != verdict.NotSupported {
		t.Errorf("ADAPTIVE-ISOLATES = %s, want NOT SUPPORTED; output:\n%s", o, out)
	}
}
