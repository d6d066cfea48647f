//go:build e2e

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// TestAuditStatementClasses audits a service of a user's own on one real
// PostgreSQL (the built-in serve stands in for it) whose /report runs an
// analytical statement and /interactive an interactive one, both through
// one fault proxy: dependency DB with the classes report and interactive.
// The calibration measures which class each endpoint runs; the audit
// slows each class in turn (0.9 T on its statements only). With one
// database pool of 8 connections for both endpoints (mode shared), a slow
// report class takes /interactive down: a finding "/interactive × DB/report
// slow", and /report × DB/interactive likewise; with a pool each (mode
// bulkhead) there is no finding. Little's law, given the slow fault's
// match, charges it to /report's statements only: /interactive's pool in
// mode bulkhead is predicted within a factor of 1.5 of its measured demand
// (charged to every statement, as before the classes were measured, it
// was predicted about six times too high).
func TestAuditStatementClasses(t *testing.T) {
	bin := binary(t)
	pg := pgtest.Start(t)
	proxy := testkit.FreeAddr(t)
	start := func(addr, layout string) string {
		return fmt.Sprintf(`[%q, serve, --listen, %q, --mode, bulkhead, --pool-size, "80", --queue, "0", --timeout, 250ms, --max-wait, 250ms, --conns, "8", --conns-layout, %s, --endpoint, "report=%s", --query, "report=SELECT pg_sleep(0.04), 1 AS report_total", --endpoint, "interactive=%s", --query, "interactive=SELECT pg_sleep(0.04), 2 AS interactive_row"]`,
			bin, addr, layout, pgtest.DSNAt(proxy), pgtest.DSNAt(proxy))
	}
	addrS, addrB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	text := fmt.Sprintf(`name: classes-audit
seed: 11
external:
  upstreams: {DB: "postgres://%[1]s"}
  proxies:   {DB: "%[2]s"}
  rules:
    - {status: 503, header: X-Bulkhead-Reject, class: rejected}
    - {status: 504, header: X-Dependency-Error, class: dep_timeout}
    - {status: 502, header: X-Dependency-Error, class: dep_error}
dependencies:
  DB: {classes: {report: "(?i)\\breport_", interactive: "(?i)\\binteractive_"}}
modes:
  - name: shared
    external:
      start: %[3]s
      targets: {report: "http://%[4]s/report", interactive: "http://%[4]s/interactive"}
      canary: "http://%[4]s/healthz"
      pools: [{name: db, size: 8, endpoints: [report, interactive]}]
  - name: bulkhead
    external:
      start: %[5]s
      targets: {report: "http://%[6]s/report", interactive: "http://%[6]s/interactive"}
      canary: "http://%[6]s/healthz"
      pools: [{name: db-report, size: 8, endpoints: [report]}, {name: db-interactive, size: 8, endpoints: [interactive]}]
endpoints:
  - {name: report, dependency: DB}
  - {name: interactive, dependency: DB}
service: {timeout: 250ms}
load: {rates: {report: 40, interactive: 40}}
phases: {warmup: 1s, baseline: 1s, fault: 1500ms, recovery: 500ms}
audit:
  faults: [slow]
  calibration: {requests: 10, rate: 40}
`, pg.Addr, proxy, start(addrS, "shared"), addrS, start(addrB, "per-dependency"), addrB)
	sum := runClassAudit(t, "classes-audit", text)
	checkClassAudit(t, sum, "DB", "queries")
	// Little's law with the fault's match: /interactive's own pool, with
	// the report class slow. Charged to every query, the fault would add
	// 40/s × 225 ms = 9 connections; with its match it adds none to
	// /interactive. Without it, 40/s × 40 ms ≈ 1.6 against a measured
	// 40/s × /interactive's latency.
	if pred, got, ok := poolDemand(t, sum, "slow-db-report-bulkhead-r1", "db-interactive"); !ok || !(pred <= 1.5*got && got <= 1.5*pred) {
		t.Errorf("pool db-interactive: predicted %.2f, measured %.2f (%v): want within a factor of 1.5", pred, got, ok)
	}
}

// runClassAudit runs `audit` (without --check) on text, an audit of two
// modes, shared and bulkhead, until its runs are judged, and returns its
// summary: exit 0 and a map per mode.
func runClassAudit(t *testing.T, name, text string) verdict.Summary {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, name+".yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var code int
	var out, dir string
	untilJudged(t, func(i int) string {
		outDir := filepath.Join(tmp, fmt.Sprintf("attempt%d", i))
		r := startRunner(t, tmp, "audit", file, "--out", outDir, "--no-images")
		code, out, dir = r.wait(t, runBound(file)), r.out.String(), resultsDir(outDir, name)
		return dir
	})
	t.Logf("audit took %v", time.Since(began).Round(100*time.Millisecond))
	if code != ExitOK {
		t.Fatalf("audit: exit %d; output:\n%s", code, out)
	}
	sum := readSummary(t, dir)
	if len(sum.Audits) != 2 {
		t.Fatalf("%d audit maps, want one per mode; output:\n%s", len(sum.Audits), out)
	}
	return sum
}

// checkClassAudit holds an audit of runClassAudit, of endpoints /report
// and /interactive each calling the class of its name of dependency dep
// (its calls: noun), to what the classes should show: the calibration saw
// which class each endpoint calls; with the shared pool a slow report
// class is a finding against /interactive; with a pool each there is no
// finding.
func checkClassAudit(t *testing.T, sum verdict.Summary, dep, noun string) {
	t.Helper()
	g := sum.Audits[0].CallGraph
	for _, ep := range []string{"report", "interactive"} {
		for _, cls := range []string{"report", "interactive"} {
			n, ok := g.ClassCalls(ep, dep, cls)
			if calls := n >= 0.5; !ok || calls != (cls == ep) {
				t.Errorf("/%s: %v %s of class %s per request (measured %v), want %v", ep, n, noun, cls, ok, cls == ep)
			}
		}
	}
	want := "/interactive × " + dep + "/report"
	for _, m := range sum.Audits {
		var got []string
		for _, f := range m.Findings {
			got = append(got, fmt.Sprintf("/%s × %s/%s", f.Endpoint, f.Dependency, f.Class))
			t.Logf("%s: %s", m.Mode, f.Summary)
		}
		slices.Sort(got)
		switch {
		case m.Mode == "bulkhead" && len(got) > 0:
			t.Errorf("bulkhead: findings %v, want none: the pools are separate", got)
		case m.Mode == "shared" && !slices.Contains(got, want):
			t.Errorf("shared: findings %v, want %s slow among them", got, want)
		}
	}
}

// poolDemand is pool's predicted and measured demand in run id of sum;
// false when the run has no prediction for it.
func poolDemand(t *testing.T, sum verdict.Summary, id, pool string) (pred, got float64, ok bool) {
	t.Helper()
	for _, r := range sum.Runs {
		if r.ID != id {
			continue
		}
		for _, p := range r.Pools {
			t.Logf("%s: pool %s predicted %.2f, measured %.2f", r.ID, p.Pool, float64(p.PredictedDemand), float64(p.MeasuredDemand))
			if p.Pool == pool {
				pred, got, ok = float64(p.PredictedDemand), float64(p.MeasuredDemand), !math.IsNaN(float64(p.PredictedDemand))
			}
		}
	}
	return pred, got, ok
}
