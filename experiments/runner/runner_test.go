package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// shortSpec is a few-second matrix: A slow, shared vs bulkhead. Rates and
// pools are small so that it holds under the race detector: a slow A needs
// 40/s × 235 ms ≈ 9 permits, more than the shared pool of 6 and far more
// than its bulkhead of 3, while /b needs 0.5.
const shortSpec = `
name: short
seed: 7
repeats: 1
service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 1T, conns: 64}
dependencies:
  A: {latency: 10ms, jitter: 2ms}
  B: {latency: 10ms, jitter: 2ms}
load: {rates: {a: 40, b: 40}, window: 250ms}
phases: {warmup: 500ms, baseline: 1s, fault: 2s, recovery: 500ms}
conditions: [slow]
modes: [shared, bulkhead]
`

// testPlan parses a spec text (after edit, if any) and plans it.
func testPlan(t *testing.T, text string, edit func(*spec.Spec)) *plan.Plan {
	t.Helper()
	s, err := spec.Parse("short.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(s)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunnerInProcess runs a short matrix end to end with in-process
// components and checks the results folder and the hypothesis's shape:
// /b degrades with the shared pool and not with bulkheads. The shape is
// judged only from valid runs, as every verdict is: when the machine left
// a run INVALID (load generator, service and dependencies share one
// race-instrumented process here) and the shape did not hold, the matrix
// runs once more, and the test is skipped with the reasons
// if the machine never let it measure.
func TestRunnerInProcess(t *testing.T) {
	var invalid []string
	for attempt := 1; attempt <= 2; attempt++ {
		shape, inv := runInProcessOnce(t)
		if len(shape) == 0 {
			return
		}
		if len(inv) == 0 {
			for _, m := range shape {
				t.Error(m)
			}
			return
		}
		invalid = inv
		t.Logf("attempt %d: the shape did not hold (%s) and runs were INVALID (%s): once more", attempt, strings.Join(shape, "; "), strings.Join(inv, "; "))
	}
	t.Skipf("no valid matrix in 2 attempts on this machine: %s", strings.Join(invalid, "; "))
}

// runInProcessOnce runs the short matrix once, fails t on anything wrong
// with the results folder, and returns what is wrong with the
// hypothesis's shape and which runs were INVALID (with their reasons).
func runInProcessOnce(t *testing.T) (shape, invalid []string) {
	r := &Runner{Plan: testPlan(t, shortSpec, nil), Root: t.TempDir(), Launcher: inProcess(), HdrLogs: true}
	dir, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	ix := dir.Index()
	for _, e := range ix.Runs {
		for _, ep := range []string{"a", "b"} {
			b, err := os.ReadFile(filepath.Join(dir.RunDir(e.ID), rundata.HdrLogPrefix+ep+".hlog"))
			if err != nil || !strings.Contains(string(b), "Tag=intended") {
				t.Errorf("run %s: HdrHistogram log of /%s missing or without intended-time histograms (%v)", e.ID, ep, err)
			}
		}
	}
	if len(ix.Runs) != 2 {
		t.Fatalf("index has %d runs, want 2", len(ix.Runs))
	}
	fault := map[string]rundata.PhaseStats{}
	for _, e := range ix.Runs {
		if e.Status != rundata.StatusComplete {
			t.Errorf("run %s status %q, want complete", e.ID, e.Status)
		}
		rd := dir.RunDir(e.ID)
		for _, f := range []string{rundata.MetaFile, rundata.SpecFile, rundata.WindowsFile, rundata.PhasesFile,
			rundata.MetricsFile, rundata.RawFilePrefix + "a.bin", rundata.RawFilePrefix + "b.bin"} {
			if st, err := os.Stat(filepath.Join(rd, f)); err != nil || st.Size() == 0 {
				t.Errorf("run %s: %s missing or empty (%v)", e.ID, f, err)
			}
		}
		var meta rundata.RunMeta
		readJSON(t, filepath.Join(rd, rundata.MetaFile), &meta)
		if len(meta.Faults) != 2 || meta.Faults[0].Action != "set" || meta.Faults[1].Action != "clear" {
			t.Errorf("run %s: fault events %+v, want set then clear", e.ID, meta.Faults)
		}
		if !meta.Valid {
			var why []string
			for _, v := range meta.Validity {
				why = append(why, words.Reasons(v.Broken)...)
			}
			invalid = append(invalid, e.ID+": "+strings.Join(why, ", "))
		}
		var phases []rundata.PhaseStats
		readJSON(t, filepath.Join(rd, rundata.PhasesFile), &phases)
		for _, p := range phases {
			if p.Endpoint == "b" && p.Phase == rundata.PhaseFault {
				fault[e.Mode] = p
			}
		}
	}
	okShare := func(p rundata.PhaseStats) float64 {
		return float64(p.Counts[loadgen.ClassOK]) / float64(max(1, p.Counts.Total()))
	}
	sh, bh := fault[spec.ModeShared], fault[spec.ModeBulkhead]
	t.Logf("fault phase /b: shared %v; bulkhead %v", sh.Counts, bh.Counts)
	t.Logf("fault phase /b: shared ok %.2f p99 %s; bulkhead ok %.2f p99 %s",
		okShare(sh), sh.Latency.P99, okShare(bh), bh.Latency.P99)
	// A stall of the whole process (GC, the race detector) can reject a
	// few of /b's requests even behind its bulkhead: /b must keep most of
	// its requests and clearly more than with the shared pool, which a
	// slow A takes whole.
	if okShare(bh) < 0.85 {
		shape = append(shape, fmt.Sprintf("bulkhead: /b success %.2f in the fault phase, want ≥ 0.85", okShare(bh)))
	}
	if okShare(sh) > 0.8 && sh.Latency.P99 < 100*1e6 {
		shape = append(shape, fmt.Sprintf("shared: /b not degraded (success %.2f, p99 %s)", okShare(sh), sh.Latency.P99))
	}
	if okShare(bh)-okShare(sh) < 0.2 && bh.Latency.P99*2 > sh.Latency.P99 {
		shape = append(shape, fmt.Sprintf("/b with bulkheads (success %.2f, p99 %s) is not clearly better off than shared (%.2f, %s)",
			okShare(bh), bh.Latency.P99, okShare(sh), sh.Latency.P99))
	}
	return shape, invalid
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// dyingLauncher launches in-process components and reports the service as
// having exited on its own, as a crashed child process would be, from its
// second launch on (the first is the pre-flight's).
type dyingLauncher struct {
	InProcessLauncher
	launches int
}

func (l *dyingLauncher) Launch(ctx context.Context, r plan.Run, logPath func(string) string) (*Stack, error) {
	st, err := l.InProcessLauncher.Launch(ctx, r, logPath)
	if l.launches++; st != nil && l.launches > 1 {
		st.died = func() []string { return []string{"service (exit status 2)"} }
	}
	return st, err
}

// TestRunnerMarksRunWithDeadComponentFailed: data measured against a
// crashed component must not pass for a complete run.
func TestRunnerMarksRunWithDeadComponentFailed(t *testing.T) {
	p := testPlan(t, strings.Replace(shortSpec, "modes: [shared, bulkhead]", "modes: [shared]", 1), func(s *spec.Spec) {
		s.Phases = spec.Phases{Baseline: spec.Abs(300 * time.Millisecond)}
	})
	r := &Runner{Plan: p, Root: t.TempDir(), Launcher: &dyingLauncher{}}
	dir, err := r.Run(context.Background())
	if !errors.Is(err, ErrRunsFailed) {
		t.Fatalf("Run error = %v, want ErrRunsFailed", err)
	}
	var meta rundata.RunMeta
	readJSON(t, filepath.Join(dir.RunDir("slow-shared-r1"), rundata.MetaFile), &meta)
	if meta.Status != rundata.StatusFailed || !strings.Contains(meta.Error, "service (exit status 2)") {
		t.Errorf("meta status %q error %q, want failed naming the service", meta.Status, meta.Error)
	}
	if ix := dir.Index(); ix.Runs[0].Status != rundata.StatusFailed {
		t.Errorf("index status %q, want failed", ix.Runs[0].Status)
	}
}

// deafProxyLauncher launches in-process components but points the runner at
// a control address where nothing listens, so the fault switch fails.
type deafProxyLauncher struct{ InProcessLauncher }

func (l *deafProxyLauncher) Launch(ctx context.Context, r plan.Run, logPath func(string) string) (*Stack, error) {
	st, err := l.InProcessLauncher.Launch(ctx, r, logPath)
	if st != nil {
		st.Controls["proxy-A"] = "http://127.0.0.1:1"
	}
	return st, err
}

// TestRunnerFailedFaultSwitchStopsTheRun: a fault phase without its fault
// measures nothing, so the run stops at once and is marked failed.
func TestRunnerFailedFaultSwitchStopsTheRun(t *testing.T) {
	p := testPlan(t, strings.Replace(shortSpec, "modes: [shared, bulkhead]", "modes: [shared]", 1), func(s *spec.Spec) {
		s.Phases = spec.Phases{Baseline: spec.Abs(200 * time.Millisecond), Fault: spec.Abs(20 * time.Second)}
	})
	r := &Runner{Plan: p, Root: t.TempDir(), Launcher: &deafProxyLauncher{}}
	start := time.Now()
	dir, err := r.Run(context.Background())
	if !errors.Is(err, ErrRunsFailed) {
		t.Fatalf("Run error = %v, want ErrRunsFailed", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("run took %s: the 20 s fault phase was not cut short", d)
	}
	var meta rundata.RunMeta
	readJSON(t, filepath.Join(dir.RunDir("slow-shared-r1"), rundata.MetaFile), &meta)
	if meta.Status != rundata.StatusFailed || !strings.Contains(meta.Error, "set fault on A") {
		t.Errorf("meta status %q error %q, want failed with the switch error", meta.Status, meta.Error)
	}
}

// TestRunnerThreeEndpoints: a third endpoint is a change of the spec only;
// the runner starts its dependency and proxy, loads it and records it.
func TestRunnerThreeEndpoints(t *testing.T) {
	text := strings.Replace(shortSpec, "load: {rates: {a: 40, b: 40}, window: 250ms}",
		"load: {rates: {a: 40, b: 40, c: 20}, window: 250ms}\nendpoints: [{name: a, dependency: A}, {name: b, dependency: B}, {name: c, dependency: C}]", 1)
	text = strings.Replace(text, "modes: [shared, bulkhead]", "modes: [bulkhead]", 1)
	text = strings.Replace(text, "pool_size: 6", "pool_size: 9", 1)
	p := testPlan(t, text, func(s *spec.Spec) {
		s.Phases = spec.Phases{Baseline: spec.Abs(500 * time.Millisecond), Fault: spec.Abs(500 * time.Millisecond)}
	})
	dir, err := (&Runner{Plan: p, Root: t.TempDir(), Launcher: inProcess()}).Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rd := dir.RunDir("slow-bulkhead-r1")
	var phases []rundata.PhaseStats
	readJSON(t, filepath.Join(rd, rundata.PhasesFile), &phases)
	seen := map[string]int64{}
	for _, ph := range phases {
		seen[ph.Endpoint] += ph.Counts[rundata.ClassOK]
	}
	if seen["c"] == 0 || seen["a"] == 0 || seen["b"] == 0 || len(seen) != 4 { // and the canary
		t.Errorf("ok results per endpoint %v, want a, b, c and the canary", seen)
	}
	if st, err := os.Stat(filepath.Join(rd, rundata.RawFilePrefix+"c.bin")); err != nil || st.Size() == 0 {
		t.Errorf("raw results of /c: %v", err)
	}
	var meta rundata.RunMeta
	readJSON(t, filepath.Join(rd, rundata.MetaFile), &meta)
	if len(meta.Pools) != 3 || len(meta.Endpoints) != 3 {
		t.Errorf("meta pools %+v endpoints %+v", meta.Pools, meta.Endpoints)
	}
	b, _ := os.ReadFile(filepath.Join(rd, rundata.MetricsFile))
	for _, c := range []string{`"dep-C"`, `"proxy-C"`, `bulkhead_pool_in_use{pool=\"c\"}`} {
		if !strings.Contains(string(b), c) {
			t.Errorf("metrics.jsonl has no %s", c)
		}
	}
}
