//go:build e2e

package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// sizingShort is the bulkhead-sizing preset under the light load of the
// trust tests (a pool of 6, 40/s per endpoint), with short phases, healthy
// and slow only, and the sweep's values replaced.
func sizingShort(t *testing.T, values string) string {
	t.Helper()
	return shortPreset(t, "bulkhead-sizing",
		"phases: {warmup: 1s, baseline: 2s, fault: 4s, recovery: 1s}", "phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 300ms}",
		"conditions: [healthy, busy, slow]", "conditions: [healthy, slow]",
		"values: [1, 2, 4, 8, 12, 16, 24]", "values: "+values)
}

// TestBulkheadSizingPreset: a small sweep of /a's bulkhead nested in a
// shared pool of 6 at 40/s (Little's law: 0.8 permits, size 2): 1 rejects
// healthy traffic, 8 lets a slow A (9 permits) take the pool from /b, 2 is
// good and Little's law's size: every sizing verdict SUPPORTED, exit 0,
// and `size --from` reads the good region back. A sweep that never reaches
// the good region (1 alone) makes every sizing verdict fail: exit 1.
func TestBulkheadSizingPreset(t *testing.T) {
	code, out, dir := runSpecJudged(t, "bulkhead-sizing", sizingShort(t, "[1, 2, 8]"))
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	sc := s.Sizing
	if sc == nil || len(sc.Points) != 3 || sc.LittleSize != 2 || float64(sc.GoodLo) != 2 || float64(sc.GoodHi) != 2 {
		t.Fatalf("sizing curve %+v, want 3 points, Little's size 2, good region 2–2", sc)
	}
	if !sc.Points[0].TooSmall || !sc.Points[2].Hurts {
		t.Errorf("size 1 too small %v, size 8 hurts %v", sc.Points[0].TooSmall, sc.Points[2].Hurts)
	}
	r := startRunner(t, t.TempDir(), "size", "--from", dir)
	if c := r.wait(t, 30*time.Second); c != ExitOK || !strings.Contains(r.out.String(), "good region 2–2") || !strings.Contains(r.out.String(), "Little's law: 2") {
		t.Errorf("size --from: exit %d\n%s", c, r.out.String())
	}

	code, out, dir = runSpecJudged(t, "bulkhead-sizing", sizingShort(t, "[1]"))
	if code != ExitFailed {
		t.Fatalf("a sweep that never reaches the good region: exit %d, want %d; output:\n%s", code, ExitFailed, out)
	}
	s = readSummary(t, dir)
	for v, want := range map[string]verdict.Outcome{"SIZING-TOO-SMALL": verdict.NotSupported, "SIZING-TOO-LARGE": verdict.NotSupported,
		"SIZING-LITTLE": verdict.NotSupported} {
		if o := outcomeOf(s, v); o != want {
			t.Errorf("%s: %s, want %s", v, o, want)
		}
	}
	if !math.IsNaN(float64(s.Sizing.GoodLo)) {
		t.Errorf("good region %v–%v, want none", s.Sizing.GoodLo, s.Sizing.GoodHi)
	}
}
