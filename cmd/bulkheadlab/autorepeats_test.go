//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestAutoRepeatsStopWhenClear: repeats: auto (at most 5) on slow A,
// shared vs bulkhead: after 3 rounds P1 and P2 are clear of their
// thresholds (every repeat degraded; /b's p99 rise far below 0.25 T), so
// the runner stops; rounds 4 and 5 are recorded as skipped and the report
// says how many repeats each checked verdict needed.
func TestAutoRepeatsStopWhenClear(t *testing.T) {
	var code int
	var out, dir string
	untilJudged(t, func(int) string {
		code, out, dir = runSpec(t, "auto", fmt.Sprintf(trustSpec, "auto", "repeats: auto\nmax_repeats: 5\nmodes: [shared, bulkhead]\nexpectations: {check: [P1, P2]}"))
		return dir
	})
	if code != ExitOK || !strings.Contains(out, "repeats: auto: after 3 rounds every checked verdict is clear of its threshold; 2 rounds not needed") {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	exp, err := rundir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Runs) != 6 || !exp.AutoRepeats {
		t.Errorf("%d runs loaded (auto %v), want the 6 of 3 rounds", len(exp.Runs), exp.AutoRepeats)
	}
	skipped := 0
	for _, e := range exp.Index.Runs {
		if e.Status == rundata.StatusSkipped {
			skipped++
		}
	}
	if skipped != 4 {
		t.Errorf("%d runs skipped in the index, want rounds 4 and 5 (4 runs)", skipped)
	}
	s := readSummary(t, dir)
	if len(s.RepeatsNeeded) != 2 || s.RepeatsNeeded[0].Repeats != 3 || s.RepeatsNeeded[1].Repeats != 3 {
		t.Errorf("repeats needed %+v, want P1 and P2 clear at 3 of 3", s.RepeatsNeeded)
	}
	b, err := os.ReadFile(filepath.Join(dir, rundata.ReportFile))
	if err != nil || !strings.Contains(string(b), "- P2 (SUPPORTED): 3 of 3") {
		t.Errorf("report.md lacks the repeats each verdict needed (%v)", err)
	}
}
