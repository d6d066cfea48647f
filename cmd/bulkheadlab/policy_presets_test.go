//go:build e2e

package main

// End-to-end tests of the policy presets: each runs on loopback with short
// phases and a light load, and each verdict is shown able to fail against a
// layout that breaks its claim.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// shortPreset returns the preset's YAML with the service, load and phases
// lines replaced by the light ones of the trust tests where the preset has
// them, and then every (old, new) pair of edits applied; each must apply.
func shortPreset(t *testing.T, name string, edits ...string) string {
	t.Helper()
	b, err := spec.PresetSource(name)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{
		"service: {timeout: 250ms, pool_size: 20, queue: 20, max_wait: 1T, conns: 64}", "service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 1T}",
		"rates: {a: 200, b: 200}", "rates: {a: 40, b: 40}",
		"phases: {warmup: 1s, baseline: 3s, fault: 6s, recovery: 2s}", "phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 500ms}",
	}
	var all []string
	for i := 0; i < len(base); i += 2 {
		if strings.Contains(string(b), base[i]) {
			all = append(all, base[i], base[i+1])
		}
	}
	return presetEdited(t, name, append(all, edits...)...)
}

// presetEdited returns the preset's YAML with every (old, new) pair of
// edits applied (each must apply) and two retries for a run the busy
// machine made INVALID. Unlike shortPreset it leaves the load alone: these
// presets' claims are about their rates.
func presetEdited(t *testing.T, name string, edits ...string) string {
	t.Helper()
	b, err := spec.PresetSource(name)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i := 0; i < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("preset %s has no %q to edit", name, edits[i])
		}
		text = strings.Replace(text, edits[i], edits[i+1], -1)
	}
	if strings.Contains(text, "\nvalidity: {") {
		return strings.Replace(text, "\nvalidity: {", "\nvalidity: {retries: 2, ", 1)
	}
	return text + "validity: {retries: 2}\n"
}

// TestBreakerAfterDrainPreset: the breaker on a hanging A opens only after
// the shared pool ran out, with /b hurt before (BREAKER-LATE), and behind
// bulkheads /b is not hurt (BREAKER-ISOLATED): exit 0.
func TestBreakerAfterDrainPreset(t *testing.T) {
	code, out, dir := runSpecJudged(t, "breaker-after-drain", shortPreset(t, "breaker-after-drain"))
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	open, exh := measureOf(s, "BREAKER-LATE", "time to open"), measureOf(s, "BREAKER-LATE", "time to pool exhaustion")
	if !(exh < open) {
		t.Errorf("time to exhaustion %.3f s, to open %.3f s: want exhaustion first", exh, open)
	}
	t.Logf("time to exhaustion %.3f s, to open %.3f s", exh, open)
}

// TestBreakerVerdictsCanFail: an aggressive stack (a timeout of 0.1T per
// call and a breaker of 2 failures) opens before the shared pool runs out,
// so BREAKER-LATE is NOT SUPPORTED; bulkheads that share one semaphore
// (the test defect) let the breaker open only after /b was hurt, so
// BREAKER-ISOLATED is NOT SUPPORTED: exit 1 naming both.
func TestBreakerVerdictsCanFail(t *testing.T) {
	text := shortPreset(t, "breaker-after-drain",
		"    pools: shared\n    policies:\n      A:\n        breaker: {failures: 10,",
		"    pools: shared\n    policies:\n      A:\n        timeout: 0.1T\n        breaker: {failures: 2,")
	code, out, dir := runSpecJudged(t, "breaker-after-drain", text, "--"+defectFlag)
	if code != ExitFailed || !strings.Contains(out, "BREAKER-LATE") || !strings.Contains(out, "BREAKER-ISOLATED") {
		t.Fatalf("exit %d, want %d naming BREAKER-LATE and BREAKER-ISOLATED; output:\n%s", code, ExitFailed, out)
	}
	s := readSummary(t, dir)
	for _, v := range []string{"BREAKER-LATE", "BREAKER-ISOLATED"} {
		if o := outcomeOf(s, v); o != verdict.NotSupported {
			t.Errorf("%s = %s, want NOT SUPPORTED", v, o)
		}
	}
	fmt.Fprintln(testWriter{t}, out)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
