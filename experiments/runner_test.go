package experiments

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis"
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

// TestRunnerInProcess runs a short matrix end to end with in-process
// components and checks the results folder and the hypothesis's shape:
// /b degrades with the shared pool and not with bulkheads.
func TestRunnerInProcess(t *testing.T) {
	spec, err := Parse("short.yaml", []byte(shortSpec))
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Spec: spec, Root: t.TempDir(), Launcher: &InProcessLauncher{}}
	dir, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	ix := dir.Index()
	if len(ix.Runs) != 2 {
		t.Fatalf("index has %d runs, want 2", len(ix.Runs))
	}
	fault := map[string]analysis.PhaseSummary{}
	for _, e := range ix.Runs {
		if e.Status != analysis.StatusComplete {
			t.Errorf("run %s status %q, want complete", e.ID, e.Status)
		}
		rd := dir.RunDir(e.ID)
		for _, f := range []string{analysis.MetaFile, analysis.SpecFile, analysis.WindowsFile, analysis.PhasesFile,
			analysis.MetricsFile, analysis.RawFilePrefix + "a.bin", analysis.RawFilePrefix + "b.bin"} {
			if st, err := os.Stat(filepath.Join(rd, f)); err != nil || st.Size() == 0 {
				t.Errorf("run %s: %s missing or empty (%v)", e.ID, f, err)
			}
		}
		var meta analysis.RunMeta
		readJSON(t, filepath.Join(rd, analysis.MetaFile), &meta)
		if len(meta.Faults) != 2 || meta.Faults[0].Action != "set" || meta.Faults[1].Action != "clear" {
			t.Errorf("run %s: fault events %+v, want set then clear", e.ID, meta.Faults)
		}
		var phases []analysis.PhaseSummary
		readJSON(t, filepath.Join(rd, analysis.PhasesFile), &phases)
		for _, p := range phases {
			if p.Endpoint == "b" && p.Phase == PhaseFault {
				fault[e.Mode] = p
			}
		}
	}
	okShare := func(p analysis.PhaseSummary) float64 {
		return float64(p.Counts[loadgen.ClassOK]) / float64(max(1, p.Counts.Total()))
	}
	sh, bh := fault[ModeShared], fault[ModeBulkhead]
	t.Logf("fault phase /b: shared %v; bulkhead %v", sh.Counts, bh.Counts)
	t.Logf("fault phase /b: shared ok %.2f p99 %s; bulkhead ok %.2f p99 %s",
		okShare(sh), sh.Latency.P99, okShare(bh), bh.Latency.P99)
	if okShare(bh) < 0.95 {
		t.Errorf("bulkhead: /b success %.2f in the fault phase, want ≥ 0.95", okShare(bh))
	}
	if okShare(sh) > 0.8 && sh.Latency.P99 < 100*1e6 {
		t.Errorf("shared: /b not degraded (success %.2f, p99 %s)", okShare(sh), sh.Latency.P99)
	}
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
