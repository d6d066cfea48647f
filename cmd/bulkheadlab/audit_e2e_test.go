//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// runAudit runs `audit` on a spec text with --check and returns the exit
// code, the output and the results folder, trying again (up to three
// times) while a run is INVALID.
func runAudit(t *testing.T, name, text string) (code int, out, dir string) {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, name+".yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	untilJudged(t, func(i int) string {
		outDir := filepath.Join(tmp, fmt.Sprintf("attempt%d", i))
		r := startRunner(t, tmp, "audit", file, "--out", outDir, "--check", "--no-images")
		code, out, dir = r.wait(t, runBound(file)+30*time.Second), r.out.String(), resultsDir(outDir, name)
		return dir
	})
	return code, out, dir
}

// TestAuditPreset runs the blast-radius preset end to end: four endpoints
// and three dependencies on the built-in service, /checkout and /cart
// sharing one pool. The measured call graph equals the configured one;
// every measured cell of the map is the class the layout predicts
// (Little's law on each run's pools), and the layout predicts the two
// findings through the shared pool — /cart down when PAY is slow,
// /checkout when INV is — and nothing else; the critical /search and
// /stock are isolated from every dependency they do not call. A stop
// condition on /search's error rate fires when SEARCH fails, and the
// fault is gone within one window of it: /search's answers after that are
// successes. That column was stopped before /stock's cell in it could be
// measured, so --check cannot pass it: exit 3 (rerun), naming the cell.
func TestAuditPreset(t *testing.T) {
	text := shortPreset(t, "blast-radius",
		"  critical: [search, stock]", "  critical: [search, stock]\n  calibration: {requests: 10, rate: 40}\n  abort:\n    - {endpoint: search, error_rate: 0.9, for: 400ms}",
		"phases: {warmup: 1s, baseline: 2s, fault: 3s, recovery: 1s}", "phases: {warmup: 1s, baseline: 1500ms, fault: 2s, recovery: 500ms}")
	code, out, dir := runAudit(t, "blast-radius", text)
	if code != ExitInvalid || !strings.Contains(out, "/stock × SEARCH failing: ABORTED (stopped before it was measured)") {
		t.Fatalf("audit --check: exit %d, want %d naming /stock's aborted cell; output:\n%s", code, ExitInvalid, out)
	}
	var g rundata.CallGraph
	readJSONFile(t, filepath.Join(dir, rundata.CallGraphFile), &g)
	if got, want := fmt.Sprint(g.Edges), "map[cart:[INV] checkout:[PAY] search:[SEARCH] stock:[INV]]"; got != want {
		t.Errorf("measured call graph %s, want %s", got, want)
	}
	sum := readSummary(t, dir)
	if len(sum.Audits) != 1 {
		t.Fatalf("%d audit maps, want 1", len(sum.Audits))
	}
	m := sum.Audits[0]
	if len(m.GraphDiffs) != 0 {
		t.Errorf("graph differences %v, want none", m.GraphDiffs)
	}
	var findings []string
	for _, f := range m.Findings {
		findings = append(findings, f.Endpoint+"×"+f.Condition)
		if f.Resource != "pool core" {
			t.Errorf("finding %s: resource %q, want pool core", f.Summary, f.Resource)
		}
	}
	slices.Sort(findings)
	if got, want := strings.Join(findings, " "), "cart×slow-pay checkout×slow-inv"; got != want {
		t.Errorf("findings %s, want %s", got, want)
	}
	if len(m.Mispredicted) != 0 {
		t.Errorf("cells not as the layout predicts: %v", m.Mispredicted)
	}
	measured := 0
	for i, e := range m.Endpoints {
		for j, c := range m.Cells[i] {
			col := m.Columns[j]
			switch {
			case col.Condition == "failing-search":
				if c.Class != verdict.CellAborted {
					t.Errorf("/%s × failing SEARCH: %s, want ABORTED (the stop condition)", e, c.Class)
				}
			case c.Class == verdict.CellDegraded || c.Class == verdict.CellIsolated:
				measured++
			case c.Class != verdict.CellExpected:
				t.Errorf("/%s × %s: %s", e, col.Condition, c.Class)
			}
		}
	}
	if v := strings.Join(m.Violations, "; "); v != "/stock × SEARCH failing: ABORTED (stopped before it was measured)" {
		t.Errorf("violations %q, want only /stock's aborted cell", v)
	}
	if measured != 13 {
		t.Errorf("%d cells measured ISOLATED or DEGRADED, want 13 (4 endpoints × the 5 columns not aborted, less the 7 cells whose endpoint calls the dependency)", measured)
	}
	// The stop condition: the fault removed within one window of the
	// condition being met, and /search served again after it.
	meta, err := readMeta(dir, "failing-search-core-shared-r1")
	if err != nil {
		t.Fatal(err)
	}
	ab := meta.Abort
	if ab == nil {
		t.Fatalf("failing-search: no abort recorded; faults %+v", meta.Faults)
	}
	var set time.Time
	for _, ev := range meta.Faults {
		if ev.Action == rundata.FaultSet {
			set = ev.Time
		}
	}
	gap, after := ab.Cleared.Sub(ab.At), ab.At.Sub(set)
	t.Logf("stop condition %q: %s; met %v after the fault was set, fault removed %v later", ab.Rule, ab.Trigger, after, gap)
	if ab.Cleared.IsZero() || gap > meta.Window || gap < 0 {
		t.Errorf("fault removed %v after the condition was met, want within one window (%v)", gap, meta.Window)
	}
	if after > 400*time.Millisecond+2*meta.Window {
		t.Errorf("condition met %v after the fault was set, want within its 400ms and two windows", after)
	}
	var wins []rundata.Window
	readJSONLines(t, filepath.Join(dir, rundata.RunsDir, meta.ID, rundata.WindowsFile), &wins)
	okAfter, allAfter := int64(0), int64(0)
	for _, w := range wins {
		if w.Endpoint == "search" && w.Phase == rundata.PhaseFault && w.Start.After(ab.Cleared.Add(meta.Window)) {
			okAfter += w.Counts[rundata.ClassOK]
			allAfter += w.Counts.Total()
		}
	}
	if allAfter == 0 || okAfter < allAfter*98/100 {
		t.Errorf("/search after the abort: %d of %d ok, want ≥ 98 %%", okAfter, allAfter)
	}
}

// TestAuditOnePool: the same shop with one pool for every endpoint (a
// layout that breaks the isolation the critical endpoints need): a slow
// PAY takes /search and /stock down, the layout predicts it, and --check
// fails naming the critical cells.
func TestAuditOnePool(t *testing.T) {
	text := shortPreset(t, "blast-radius",
		"pool_groups: {core: [checkout, cart]}", "pool_groups: {all: [checkout, cart, search, stock]}",
		"pool_size: 30", "pool_size: 14",
		"  critical: [search, stock]", "  critical: [search, stock]\n  faults: [slow]\n  calibration: {requests: 10, rate: 40}",
		"phases: {warmup: 1s, baseline: 2s, fault: 3s, recovery: 1s}", "phases: {warmup: 1s, baseline: 1500ms, fault: 2s, recovery: 500ms}")
	code, out, dir := runAudit(t, "blast-radius", text)
	if code != ExitFailed {
		t.Fatalf("audit --check with one pool: exit %d, want %d; output:\n%s", code, ExitFailed, out)
	}
	for _, want := range []string{"/search × PAY slow: DEGRADED", "/stock × PAY slow: DEGRADED"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := readSummary(t, dir).Audits[0]
	if len(m.Mispredicted) != 0 {
		t.Errorf("cells not as the layout predicts: %v", m.Mispredicted)
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readJSONLines[T any](t *testing.T, path string, out *[]T) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		*out = append(*out, v)
	}
}

// TestAuditExternal audits a user's service (the built-in serve, started
// by its command, stands in for it) whose two endpoints share one pool of
// 8 without a queue: the call graph is measured through the external
// proxies (/a → A, /b → B), and a slow A takes /b down — DEGRADED, a
// dependency it does not call — so --check fails naming it (the map has
// no prediction: the harness does not know a user's service's pools).
func TestAuditExternal(t *testing.T) {
	bin := binary(t)
	deps := stubDeps(t, service.DepConfig{Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 1, Size: 16})
	proxyA, proxyB, addr := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
	text := fmt.Sprintf(`name: ext-audit
seed: 9
external:
  upstreams: {A: "%[1]s", B: "%[2]s"}
  proxies:   {A: "%[3]s", B: "%[4]s"}
  start: [%[5]q, serve, --listen, %[6]q, --mode, shared, --pool-size, "8", --queue, "0", --timeout, 250ms, --dep-a, "http://%[3]s", --dep-b, "http://%[4]s"]
  targets: {a: "http://%[6]s/a", b: "http://%[6]s/b"}
  canary: "http://%[6]s/healthz"
  rules:
    - {status: 503, header: X-Bulkhead-Reject, class: rejected}
    - {status: 504, header: X-Dependency-Error, class: dep_timeout}
    - {status: 502, header: X-Dependency-Error, class: dep_error}
service: {timeout: 250ms}
load: {rates: {a: 60, b: 60}, arrivals: poisson}
phases: {warmup: 1s, baseline: 1500ms, fault: 2s, recovery: 500ms}
audit:
  faults: [slow]
  critical: [b]
  calibration: {requests: 10, rate: 40}
`, deps["A"], deps["B"], proxyA, proxyB, bin, addr)
	code, out, dir := runAudit(t, "ext-audit", text)
	if code != ExitFailed || !strings.Contains(out, "/b × A slow: DEGRADED") {
		t.Fatalf("audit --check: exit %d, want %d naming /b × A slow; output:\n%s", code, ExitFailed, out)
	}
	var g rundata.CallGraph
	readJSONFile(t, filepath.Join(dir, rundata.CallGraphFile), &g)
	if got, want := fmt.Sprint(g.Edges), "map[a:[A] b:[B]]"; got != want {
		t.Errorf("call graph measured through the external proxies %s, want %s", got, want)
	}
	m := readSummary(t, dir).Audits[0]
	if c := m.Cells[1][0]; c.Class != verdict.CellDegraded || c.Predicted != "" {
		t.Errorf("/b under slow A: %+v, want DEGRADED and no prediction", c)
	}
}
