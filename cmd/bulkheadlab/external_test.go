package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// serveOn serves fn on a new loopback listener until the test ends.
func serveOn(t *testing.T, fn func(context.Context, net.Listener) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fn(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRunExternalMode plays a user with their own service: the test runs a
// bulkhead service and two dependencies itself, the service calls the fault
// proxies at fixed addresses, and `bulkheadlab run` starts only the proxies
// and the load. The slow fault on A must reach the service through A's proxy.
func TestRunExternalMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment (~6 s)")
	}
	deps := map[string]string{}
	for _, d := range []string{"A", "B"} {
		dep, err := service.NewDep(service.DepConfig{Name: d, Latency: 5 * time.Millisecond, Seed: 1, Size: 16})
		if err != nil {
			t.Fatal(err)
		}
		deps[d] = "http://" + serveOn(t, dep.Serve)
	}
	proxyA, proxyB := freeAddr(t), freeAddr(t)
	svc, err := service.New(service.Config{
		Layout:  service.LayoutConfig{Mode: service.ModeBulkhead, PoolSize: 6, Queue: 2, MaxWait: 250 * time.Millisecond},
		Timeout: 250 * time.Millisecond, Endpoints: service.TwoEndpoints("http://"+proxyA, "http://"+proxyB),
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, svc.Serve)

	tmp := t.TempDir()
	spec := fmt.Sprintf(`name: ext
seed: 3
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  upstreams: {A: "%[2]s", B: "%[3]s"}
  proxies:   {A: "%[4]s", B: "%[5]s"}
service: {timeout: 250ms, max_wait: 250ms}
load: {rates: {a: 40, b: 40}}
phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 500ms}
conditions: [slow]
modes: [bulkhead]
`, addr, deps["A"], deps["B"], proxyA, proxyB)
	file := filepath.Join(tmp, "ext.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRunner(t, tmp, "run", file, "--out", tmp, "--no-report")
	if code := r.wait(t, 60*time.Second); code != ExitOK {
		t.Fatalf("run: exit %d; output:\n%s", code, r.out.String())
	}
	dir := resultsDir(tmp, "ext")
	m, err := readMeta(dir, "slow-bulkhead-r1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != rundata.StatusComplete || len(m.Faults) != 2 {
		t.Fatalf("meta: status %q, fault events %+v; want complete with set and clear", m.Status, m.Faults)
	}
	b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, "slow-bulkhead-r1", rundata.PhasesFile))
	if err != nil {
		t.Fatal(err)
	}
	var phases []rundata.PhaseStats
	if err := json.Unmarshal(b, &phases); err != nil {
		t.Fatal(err)
	}
	for _, p := range phases {
		if p.Phase != "fault" {
			continue
		}
		switch {
		case p.Endpoint == "a" && (p.Counts[loadgen.ClassRejected] == 0 || p.LatencyOK.P50 < 200*time.Millisecond && p.LatencyOK.Count > 0):
			t.Errorf("/a in the fault phase: %v, ok p50 %s — the slow fault did not reach the service", p.Counts, p.LatencyOK.P50)
		case p.Endpoint == "b" && p.Counts[loadgen.ClassOK] != p.Counts.Total():
			t.Errorf("/b in the fault phase: %v, want all ok behind its bulkhead", p.Counts)
		}
	}
}

// TestRunExternalTwoModesByCommand plays a user whose service is configured
// one way per process: the spec starts it per run by command, as a shared
// pool in one mode and as bulkheads in the other (the built-in `serve`
// stands in for the user's program, which the runner knows nothing about).
// The matrix gets P1–P4, and with no pool metrics exported the limits are
// inferred from the proxies: one shared cap in shared mode, a cap on A
// alone in bulkhead mode.
func TestRunExternalTwoModesByCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment of 8 runs (~45 s)")
	}
	bin := binary(t)
	deps := map[string]string{}
	for _, d := range []string{"A", "B"} {
		dep, err := service.NewDep(service.DepConfig{Name: d, Latency: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 1, Size: 16})
		if err != nil {
			t.Fatal(err)
		}
		deps[d] = "http://" + serveOn(t, dep.Serve)
	}
	proxyA, proxyB, addrS, addrB := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
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
	for _, p := range []string{"P1", "P2", "P3", "P4"} {
		if o := outcomeOf(sum, p); o != analysis.Supported {
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
		if strings.Join(got, ",") != w || run.Exhausted.Resource != analysis.ResourcePoolInferred {
			t.Errorf("%s: inferred %v, exhausted %q; want %s and %s", run.ID, got, run.Exhausted.Resource, w, analysis.ResourcePoolInferred)
		}
		// Little's law from the proxies: a slow A (~20 ms + 225 ms at
		// 100/s) plus B (20 ms at 100/s) demand ~26 permits in shared
		// mode, A alone ~24 in bulkhead mode: far above the caps.
		if len(run.Pools) != 1 || !(run.Pools[0].PredictedDemand > 18 && run.Pools[0].PredictedDemand < 35) {
			t.Errorf("%s: Little's-law rows %+v, want one inferred pool predicted at 18–35 permits", run.ID, run.Pools)
		}
	}
}
