//go:build e2e

package main

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestConnectionPoolNoWallPreset: bulkheads over one shared connection pool
// do not protect /b, and the connections run out first; with a pool per
// dependency /b is protected (CONNS-NO-WALL); /a's calls wait for a
// connection when its bulkhead is above its connections and not when it is
// at 0.8 × them (CONNS-SIZED): exit 0. The same runs judged with roles that
// break each claim — the walled mode as the one without a wall, the sized
// and over modes swapped — are NOT SUPPORTED.
func TestConnectionPoolNoWallPreset(t *testing.T) {
	text := shortPreset(t, "connection-pool-no-wall",
		"rates: {a: 40, b: 40}", "rates: {a: 100, b: 100}") // /a's 100/s × 0.225 s = 22 calls fill its bulkhead of 10
	code, out, dir := runSpecJudged(t, "connection-pool-no-wall", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		t.Logf("%s: exhausted first %s after %v s (then %s)", r.ID, r.Exhausted.Resource, r.Exhausted.AfterFaultS, r.Exhausted.Then())
	}
	t.Logf("/b harm without a wall %.2f; /a connection wait sized %.3f T, over %.3f T",
		measureOf(s, "CONNS-NO-WALL", "/b harm"), measureOf(s, "CONNS-SIZED", "/a mean connection wait in sized"), measureOf(s, "CONNS-SIZED", "/a mean connection wait in walled"))
	if md := readReport(t, dir); !strings.Contains(md, "## Connection waits") || !strings.Contains(md, "| slow-no-wall-r1 | /b |") {
		t.Errorf("report.md lacks the connection waits table")
	}

	for _, tc := range []struct {
		verdict string
		roles   rundata.ConnsRoles
	}{
		{"CONNS-NO-WALL", rundata.ConnsRoles{Condition: "slow", NoWall: "walled", Walled: "no-wall"}},
		{"CONNS-SIZED", rundata.ConnsRoles{Condition: "slow", NoWall: "no-wall", Walled: "walled", Sized: "walled", Over: "sized"}},
	} {
		roles := tc.roles
		if o := rejudge(t, dir, tc.verdict, func(ex *rundata.Expectations) { ex.Conns = &roles }); o != verdict.NotSupported {
			t.Errorf("%s with %+v: %s, want NOT SUPPORTED", tc.verdict, tc.roles, o)
		}
	}
}

// TestSlowQueryPreset: on a real PostgreSQL the run starts, the analytical
// statement slowed per query to 0.9 T starves the interactive endpoint of
// database connections when both share one database pool, which the
// ranking names as the exhausted resource, and does not with a pool per
// class (CONNS-NO-WALL): exit 0. Judged with the modes' roles swapped, the
// verdict is NOT SUPPORTED.
func TestSlowQueryPreset(t *testing.T) {
	text := shortPreset(t, "slow-query",
		"phases: {warmup: 1500ms, baseline: 3s, fault: 5s, recovery: 2s}", "phases: {warmup: 1s, baseline: 2s, fault: 3s, recovery: 2s}",
		"repeats: 2", "repeats: 1")
	code, out, dir := runSpecJudged(t, "slow-query", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		t.Logf("%s: exhausted first %s after %v s (then %s)", r.ID, r.Exhausted.Resource, r.Exhausted.AfterFaultS, r.Exhausted.Then())
		if strings.Contains(r.ID, "shared-db") && r.Exhausted.Resource != measure.ResourceConnections {
			t.Errorf("%s: exhausted first %q, want %q (the shared database pool)", r.ID, r.Exhausted.Resource, measure.ResourceConnections)
		}
		// Wait next to query time: the analytical query's own time rises
		// by most of T; in the shared pool /b waits for a connection while
		// its own query time stays flat ("we ran out of connections", not
		// "the database is slow").
		a, b := r.ConnWait("a"), r.ConnWait("b")
		t.Logf("%s: /a hold %.1f → %.1f ms; /b wait %.1f ms, hold %.2f → %.2f ms", r.ID, a.BaselineHoldMs, a.MeanHoldMs, b.MeanWaitMs, b.BaselineHoldMs, b.MeanHoldMs)
		if rise := float64(a.MeanHoldMs - a.BaselineHoldMs); !(rise > 0.5*float64(r.TimeoutMs)) {
			t.Errorf("%s: /a's query time rose %.1f ms, want > 0.5 T (its statement slowed by 0.9 T)", r.ID, rise)
		}
		if rise := float64(b.MeanHoldMs - b.BaselineHoldMs); !(rise < 0.05*float64(r.TimeoutMs)) {
			t.Errorf("%s: /b's query time rose %.1f ms, want < 0.05 T (its statement is not slowed)", r.ID, rise)
		}
		if w := float64(b.MeanWaitMs); strings.Contains(r.ID, "shared-db") != (w > 0.05*float64(r.TimeoutMs)) {
			t.Errorf("%s: /b waited %.1f ms for a connection; want > 0.05 T exactly in the shared pool", r.ID, w)
		}
	}
	t.Logf("/b harm without a wall %.2f", measureOf(s, "CONNS-NO-WALL", "/b harm"))
	roles := rundata.ConnsRoles{Condition: "slow", NoWall: "db-per-class", Walled: "shared-db"}
	if o := rejudge(t, dir, "CONNS-NO-WALL", func(ex *rundata.Expectations) { ex.Conns = &roles }); o != verdict.NotSupported {
		t.Errorf("CONNS-NO-WALL with the roles swapped: %s, want NOT SUPPORTED", o)
	}
}
