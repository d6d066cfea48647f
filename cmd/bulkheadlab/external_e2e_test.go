//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestRunExternalTwoModesByCommand plays a user whose service is configured
// one way per process: the spec starts it per run by command, as a shared
// pool in one mode and as bulkheads in the other (the built-in `serve`
// stands in for the user's program, which the runner knows nothing about).
// The matrix gets P1–P4, and with no pool metrics exported the limits are
// inferred from the proxies: one shared cap in shared mode, a cap on A
// alone in bulkhead mode — and EXHAUSTED is SUPPORTED by them alone.
func TestRunExternalTwoModesByCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment of 8 runs (~45 s)")
	}
	bin := binary(t)
	deps := stubDeps(t, service.DepConfig{Latency: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 1, Size: 16})
	proxyA, proxyB, addrS, addrB := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
	start := func(mode, addr string) string {
		return fmt.Sprintf(`[%q, serve, --listen, %q, --mode, %s, --pool-size, "8", --queue, "8", --timeout, 250ms, --max-wait, 250ms, --dep-a, "http://%s", --dep-b, "http://%s"]`,
			bin, addr, mode, proxyA, proxyB)
	}
	tmp := t.TempDir()
	spec := fmt.Sprintf(`name: ext2
seed: 5
external:
  upstreams: {A: "%[1]s", B: "%[2]s"}
  proxies:   {A: "%[3]s", B: "%[4]s"}
  rules:
    - {status: 503, header: X-Bulkhead-Reject, class: rejected}
    - {status: 504, header: X-Dependency-Error, class: dep_timeout}
    - {status: 502, header: X-Dependency-Error, class: dep_error}
modes:
  - name: shared
    external:
      start: %[5]s
      targets: {a: "http://%[6]s/a", b: "http://%[6]s/b"}
      canary: "http://%[6]s/healthz"
  - name: bulkhead
    external:
      start: %[7]s
      targets: {a: "http://%[8]s/a", b: "http://%[8]s/b"}
      canary: "http://%[8]s/healthz"
service: {timeout: 250ms, max_wait: 250ms, pool_size: 8, queue: 8}
dependencies:
  A: {latency: 20ms, jitter: 2ms}
  B: {latency: 20ms, jitter: 2ms}
load: {rates: {a: 100, b: 100}}
phases: {warmup: 500ms, baseline: 1500ms, fault: 2500ms, recovery: 500ms}
expectations: {check: [P1, P2, P3, P4]}
`, deps["A"], deps["B"], proxyA, proxyB, start("shared", addrS), addrS, start("bulkhead", addrB), addrB)
	file := filepath.Join(tmp, "ext2.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var code int
	var out, dir string
	untilJudged(t, func(i int) string {
		outDir := filepath.Join(tmp, fmt.Sprintf("attempt%d", i))
		r := startRunner(t, tmp, "run", file, "--out", outDir, "--check")
		code, out, dir = r.wait(t, 240*time.Second), r.out.String(), resultsDir(outDir, "ext2")
		return dir
	})
	if code != ExitOK {
		t.Fatalf("run --check: exit %d, want 0 (P1–P4 supported); output:\n%s", code, out)
	}
	sum := readSummary(t, dir)
	// EXHAUSTED from the inferred limits alone: the caps the proxies saw
	// stand for the pools (no connection pool of the same limit).
	for _, p := range []string{"P1", "P2", "P3", "P4", "EXHAUSTED"} {
		if o := outcomeOf(sum, p); o != verdict.Supported {
			t.Errorf("%s: %s, want SUPPORTED; output:\n%s", p, o, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, "slow-shared-r1", rundata.LogsDir, rundata.ServiceComponent+".log")); err != nil {
		t.Errorf("the started service's log: %v", err)
	} else if !strings.Contains(string(b), "listening on "+addrS) {
		t.Errorf("service.log %q, want the started service's output", b)
	}
	want := map[string]string{"slow-shared-r1": "A+B=8", "slow-bulkhead-r1": "A=4"}
	for _, run := range sum.Runs {
		w, ok := want[run.ID]
		if !ok {
			continue
		}
		var got []string
		for _, l := range run.Inferred {
			got = append(got, fmt.Sprintf("%s=%d", strings.Join(l.Dependencies, "+"), l.Limit))
		}
		if strings.Join(got, ",") != w || run.Exhausted.Resource != measure.ResourcePoolInferred {
			t.Errorf("%s: inferred %v, exhausted %q; want %s and %s", run.ID, got, run.Exhausted.Resource, w, measure.ResourcePoolInferred)
		}
		// Little's law from the proxies: a slow A (~20 ms + 225 ms at
		// 100/s) plus B (20 ms at 100/s) demand ~26 permits in shared
		// mode, A alone ~24 in bulkhead mode: far above the caps.
		if len(run.Pools) != 1 || !(run.Pools[0].PredictedDemand > 18 && run.Pools[0].PredictedDemand < 35) {
			t.Errorf("%s: Little's-law rows %+v, want one inferred pool predicted at 18–35 permits", run.ID, run.Pools)
		}
	}
}
