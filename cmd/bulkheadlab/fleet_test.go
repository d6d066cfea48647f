//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// fleetShort is the fleet-multiplication preset with short phases.
func fleetShort(t *testing.T, edits ...string) string {
	t.Helper()
	return shortPreset(t, "fleet-multiplication", append([]string{
		"phases: {warmup: 1s, baseline: 2s, fault: 4s, recovery: 1s}", "phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 300ms}"},
		edits...)...)
}

// TestFleetMultiplicationPreset: fleets of 1, 2 and 4 instances, each with
// a bulkhead of 3 for A, against A of capacity 4 (40 ms a call, T = 100
// ms): the calls on A grow as N·L, A queues at N = 2 and times out at N = 4,
// and the budget of 1 per instance keeps A within capacity — both verdicts
// SUPPORTED, exit 0, every instance's process started (its own log) and
// none left behind. A layout whose N·L never crosses C (C = 16, N = 1 and
// 4) cannot show the multiplication — A's calls stop growing at λ·s = 6 and
// its call time stays at s — and a "budget" of 5 per instance does not fit
// in C: both NOT SUPPORTED, exit 1.
func TestFleetMultiplicationPreset(t *testing.T) {
	bin := binary(t)
	code, out, dir := runSpecJudged(t, "fleet-multiplication", fleetShort(t))
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, v := range []string{"FLEET-MULTIPLIES", "FLEET-BUDGET"} {
		if o := outcomeOf(s, v); o != verdict.Supported {
			t.Errorf("%s: %s, want SUPPORTED", v, o)
		}
	}
	onA := map[string]float64{}
	for _, r := range s.Runs {
		f := r.Fleet
		if f == nil {
			t.Fatalf("run %s has no fleet numbers", r.ID)
		}
		onA[r.Mode] = float64(f.ConcurrencyOnDep)
		if f.Instances > 1 && len(r.Instances) != f.Instances {
			t.Errorf("run %s: %d instances' numbers, want %d", r.ID, len(r.Instances), f.Instances)
		}
		for i := 1; f.Instances > 1 && i <= f.Instances; i++ {
			log := filepath.Join(dir, "runs", r.ID, "logs", "service-"+strconv.Itoa(i)+".log")
			if _, err := os.Stat(log); err != nil {
				t.Errorf("run %s: instance %d left no log: %v", r.ID, i, err)
			}
		}
	}
	if onA["fleet.instances4"] < 3*onA["fleet.instances1"] {
		t.Errorf("calls on A per fleet %v: want N = 4 to put about 4 × N = 1's", onA)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(report), "## Fleet") || !strings.Contains(string(report), "| surge-fleet.instances4-r1 | service-4 |") {
		t.Errorf("report.md has no fleet section with every instance (%v)", err)
	}
	if left := processesOf(bin); len(left) > 0 {
		t.Errorf("processes of the harness left running after the run: %v", left)
	}

	code, out, dir = runSpecJudged(t, "fleet-multiplication", fleetShort(t,
		"A: {latency: 40ms, jitter: 2ms, capacity: 4}", "A: {latency: 40ms, jitter: 2ms, capacity: 16}",
		"pool_sizes: {a: 1, b: 12}", "pool_sizes: {a: 5, b: 8}",
		"values: [1, 2, 4]", "values: [1, 4]"))
	if code != ExitFailed {
		t.Fatalf("C = 16: N·L never above it, and a budget of 4 × 5 above it: exit %d, want %d; output:\n%s", code, ExitFailed, out)
	}
	s = readSummary(t, dir)
	for _, v := range []string{"FLEET-MULTIPLIES", "FLEET-BUDGET"} {
		if o := outcomeOf(s, v); o != verdict.NotSupported {
			t.Errorf("%s: %s, want NOT SUPPORTED", v, o)
		}
	}
}

// processesOf lists the live processes running the executable bin.
func processesOf(bin string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
