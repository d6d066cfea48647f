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

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
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

// TestRunExternalMode plays a user with their own service: the test runs a
// bulkhead service and two dependencies itself, the service calls the fault
// proxies at fixed addresses, and `bulkheadlab run` starts only the proxies
// and the load. The slow fault on A must reach the service through A's proxy.
func TestRunExternalMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment (~6 s)")
	}
	deps := stubDeps(t, service.DepConfig{Latency: 5 * time.Millisecond, Seed: 1, Size: 16})
	proxyA, proxyB := testkit.FreeAddr(t), testkit.FreeAddr(t)
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
	phases := readPhases(t, dir, "slow-bulkhead-r1")
	for _, p := range phases {
		if p.Phase != "fault" {
			continue
		}
		switch {
		case p.Endpoint == "a" && (p.Counts[loadgen.ClassRejected] == 0 || p.LatencyOK.P50 < 200*time.Millisecond && p.LatencyOK.Count > 0):
			t.Errorf("/a in the fault phase: %v, ok p50 %s — the slow fault did not reach the service", p.Counts, p.LatencyOK.P50)
		case p.Endpoint == "b" && (p.Counts.Total() == 0 || p.Counts.Failed()*20 > p.Counts.Total()):
			// Behind its own bulkhead /b stays at its baseline; a
			// shared pool fails most of it. One or two failures are a
			// stall of a loaded test machine (the race detector, other
			// packages' tests), not the fault spreading.
			t.Errorf("/b in the fault phase: %v, want at least 95 %% ok behind its bulkhead", p.Counts)
		}
	}
}

// TestRunExternalBrokenSetup: a start command that does not exist, a
// service that closes every connection and a target where nothing listens
// stop `run` before any load with exit 4 and a message naming the mode,
// what failed and why, in well under 10 s, with no results folder — not
// INVALID runs, retries and a report of nothing (issue: "a broken setup is
// not noise").
func TestRunExternalBrokenSetup(t *testing.T) {
	closer := serveOn(t, func(ctx context.Context, ln net.Listener) error {
		go func() { <-ctx.Done(); ln.Close() }()
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			c.Close()
		}
	})
	binary(t) // built before the clock starts
	missing := filepath.Join(t.TempDir(), "no-such-service")
	for _, tt := range []struct {
		name, addr, start string
		want              []string
	}{
		{"missing start command", testkit.FreeAddr(t), fmt.Sprintf("[%q, --listen, \"127.0.0.1:0\"]", missing),
			[]string{"could not be set up", "mode bulkhead", fmt.Sprintf("start command %q", missing+" --listen 127.0.0.1:0"), "does not exist"}},
		{"closes every connection", closer, "",
			[]string{"could not be set up", "mode bulkhead", "endpoint a: GET http://" + closer + "/a", "closed without an answer"}},
		{"nothing listens", testkit.FreeAddr(t), "",
			[]string{"could not be set up", "mode bulkhead", "endpoint b: GET http://", "nothing listens there"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			start := ""
			if tt.start != "" {
				start = "  start: " + tt.start + "\n  ready: \"http://" + tt.addr + "/healthz\"\n"
			}
			spec := fmt.Sprintf(`name: broken
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  upstreams: {A: "http://%[2]s", B: "http://%[2]s"}
  proxies:   {A: "%[3]s", B: "%[4]s"}
%[5]svalidity: {retries: 2}
load: {rates: {a: 20, b: 20}}
phases: {warmup: 300ms, baseline: 1s, fault: 1s, recovery: 300ms}
conditions: [slow]
modes: [bulkhead]
`, tt.addr, testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t), start)
			file := filepath.Join(tmp, "broken.yaml")
			if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			r := startRunner(t, tmp, "run", file, "--out", tmp)
			code := r.wait(t, 60*time.Second)
			took := time.Since(began)
			out := r.out.String()
			if code != ExitError {
				t.Fatalf("run: exit %d, want %d; output:\n%s", code, ExitError, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, out)
				}
			}
			if took > 8*time.Second {
				t.Errorf("run took %s to give up, want well under 10 s", took)
			}
			if dir := resultsDir(tmp, "broken"); dir != "" {
				t.Errorf("results folder %s written, want none", dir)
			}
		})
	}
}

// stubDeps serves dependencies A and B on loopback, each a stub of cfg
// (its Name set), for the test's life, and returns their URLs by name.
func stubDeps(t *testing.T, cfg service.DepConfig) map[string]string {
	t.Helper()
	deps := map[string]string{}
	for _, d := range []string{"A", "B"} {
		cfg.Name = d
		dep, err := service.NewDep(cfg)
		if err != nil {
			t.Fatal(err)
		}
		deps[d] = "http://" + serveOn(t, dep.Serve)
	}
	return deps
}

// readPhases reads the per-phase records of run in the results folder dir.
func readPhases(t *testing.T, dir, run string) []rundata.PhaseStats {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, run, rundata.PhasesFile))
	if err != nil {
		t.Fatal(err)
	}
	var phases []rundata.PhaseStats
	if err := json.Unmarshal(b, &phases); err != nil {
		t.Fatal(err)
	}
	return phases
}
