//go:build e2e

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// leakHuntShort is the leak-hunt preset in bulkhead mode with the given
// conditions and the built-in service's test defect (none: "").
func leakHuntShort(t *testing.T, conditions, defect string) string {
	t.Helper()
	// shortPreset's light load (40/s, bulkheads of 3) needs a longer
	// recovery for a hold span of 100 results.
	edits := []string{"conditions: [failing, reset, slow, hang, cancel, spike]", "conditions: [" + conditions + "]",
		"modes: [shared, bulkhead]", "modes: [bulkhead]",
		"phases: {warmup: 1500ms, baseline: 3s, fault: 4s, recovery: 3s}", "phases: {warmup: 1500ms, baseline: 2s, fault: 3s, recovery: 4s}"}
	if defect != "" {
		edits = append(edits, "service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 1T}",
			"service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 1T, defects: ["+defect+"]}")
	}
	return shortPreset(t, "leak-hunt", edits...)
}

// TestLeakHuntPreset: the correct service releases every permit on every
// path (a 503, a reset, a timeout, a client gone) and holds its limit under
// bursts: RECOVERY, NO-LEAK and LIMIT-HOLDS SUPPORTED, exit 0.
// (TestLeakHuntDefects: each of the built-in service's test defects makes
// the matching detector fire, exit 1: a permit kept on the error path (the bulkhead of /a lost whole, so /a
// never comes back; its failing run decides although the healthy and slow
// runs beside it show nothing), on the timeout path, on the path of a client gone
// mid-call, and a check-then-increment counter that lets a burst past the
// limit.)
func TestLeakHuntPreset(t *testing.T) {
	code, out, dir := runSpecJudged(t, "leak-hunt", leakHuntShort(t, "failing, hang, cancel, spike", ""))
	if code != ExitOK {
		t.Fatalf("correct service: exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, v := range []string{"RECOVERY", "NO-LEAK", "LIMIT-HOLDS"} {
		if o := outcomeOf(s, v); o != verdict.Supported {
			t.Errorf("correct service: %s %s, want SUPPORTED", v, o)
		}
	}
	for _, r := range s.Runs {
		if r.Leaks == nil || !r.Leaks.Judged || r.Leaks.Leaked != 0 {
			t.Errorf("correct service, %s: leaks %+v, want judged, none", r.ID, r.Leaks)
		}
	}
}

// TestLeakHuntDefects: each of the built-in service's test defects makes
// the matching detector of the leak hunt fire, exit 1, and the report says
// what it found (TestLeakHuntPreset's doc lists them).
func TestLeakHuntDefects(t *testing.T) {
	for _, tt := range []struct {
		defect, condition string
		fail              []string
		says              string
	}{
		// Beside healthy and slow cells, which cannot exercise the error
		// path: the failing run decides, undiluted by them.
		{string(service.DefectLeakOnError), "healthy, slow, failing", []string{"NO-LEAK", "RECOVERY"}, "permits leaked"},
		{string(service.DefectLeakOnTimeout), "hang", []string{"NO-LEAK"}, "permits leaked"},
		{string(service.DefectLeakOnCancel), "cancel", []string{"NO-LEAK"}, "permits leaked"},
		{string(service.DefectRacyCounter), "spike", []string{"LIMIT-HOLDS"}, "the limit does not hold"},
	} {
		code, out, dir := runSpecJudged(t, "leak-hunt", leakHuntShort(t, tt.condition, tt.defect))
		if code != ExitFailed {
			t.Errorf("%s: exit %d, want %d; output:\n%s", tt.defect, code, ExitFailed, out)
			continue
		}
		s := readSummary(t, dir)
		for _, v := range tt.fail {
			if o := outcomeOf(s, v); o != verdict.NotSupported {
				t.Errorf("%s under %s: %s %s, want NOT SUPPORTED", tt.defect, tt.condition, v, o)
			}
		}
		if report := readReport(t, dir); !strings.Contains(report, tt.says) {
			t.Errorf("%s: report.md does not say %q", tt.defect, tt.says)
		}
	}
}

// TestLeakInAnotherRuntime: a Node service (examples/node-service) that
// forgets to release a permit on a path, run in external mode without any
// pool metrics: the probes before and after the fault, and its rejections
// while nothing is in flight, show the permits it lost, and its /a never
// comes back — NO-LEAK and RECOVERY NOT SUPPORTED, exit 1. The same service
// without the leak passes.
func TestLeakInAnotherRuntime(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the service of another runtime cannot run")
	}
	server, err := filepath.Abs(filepath.Join("..", "..", "examples", "node-service", "server.js"))
	if err != nil {
		t.Fatal(err)
	}
	deps := stubDeps(t, service.DepConfig{Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 1, Size: 16})
	spec := func(leak, condition string) string {
		svc, pa, pb := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
		port := svc[strings.LastIndex(svc, ":")+1:]
		return fmt.Sprintf(`name: node-leak
seed: 9
external:
  upstreams: {A: %q, B: %q}
  proxies: {A: %q, B: %q}
  rules:
    - {status: "503", header: X-Reject, value: bulkhead, class: rejected}
    - {status: "504", class: dep_timeout}
    - {status: "502", class: dep_error}
modes:
  - name: bulkhead
    external:
      start: [%q, %q, --mode, bulkhead, --pool, "20", --port, %q, --leak, %s]
      targets: {a: "http://%s/a", b: "http://%s/b"}
      canary: "http://%s/healthz"
service: {timeout: 250ms, pool_size: 20, queue: 0, max_wait: 0s}
load: {rates: {a: 200, b: 200}, probe: {}}
phases: {warmup: 1500ms, baseline: 2s, fault: 3s, recovery: 2500ms}
conditions: [%s]
validity: {retries: 2}
expectations: {check: [RECOVERY, NO-LEAK]}
`, deps["A"], deps["B"], pa, pb, node, server, port, leak, svc, svc, svc, condition)
	}
	code, out, dir := runSpecJudged(t, "node-leak", spec("none", "failing"))
	if code != ExitOK {
		t.Fatalf("no leak: exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	for _, tt := range []struct{ leak, condition string }{{"error", "failing"}, {"timeout", "hang"}} {
		code, out, dir = runSpecJudged(t, "node-leak", spec(tt.leak, tt.condition))
		if code != ExitFailed {
			t.Errorf("leak on the %s path: exit %d, want %d; output:\n%s", tt.leak, code, ExitFailed, out)
			continue
		}
		s := readSummary(t, dir)
		for _, v := range []string{"NO-LEAK", "RECOVERY"} {
			if o := outcomeOf(s, v); o != verdict.NotSupported {
				t.Errorf("leak on the %s path: %s %s, want NOT SUPPORTED", tt.leak, v, o)
			}
		}
		if r := s.Runs[0]; r.Leaks == nil || r.Leaks.Leaked < 8 { // of the bulkhead's 10
			t.Errorf("leak on the %s path: %+v, want about the bulkhead's 10 permits lost", tt.leak, r.Leaks)
		}
	}
}
