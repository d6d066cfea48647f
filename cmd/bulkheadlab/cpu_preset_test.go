//go:build e2e

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/payload"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// cpuShort is the cpu-not-isolated preset with short phases and the
// bulkhead mode only (two runs of ~4 s), its payload fault of size.
func cpuShort(t *testing.T, size string) string {
	t.Helper()
	return shortPreset(t, "cpu-not-isolated",
		"phases: {warmup: 1s, baseline: 3s, fault: 8s, recovery: 1s}", "phases: {warmup: 500ms, baseline: 1s, fault: 2500ms, recovery: 300ms}",
		"modes: [shared, bulkhead]", "modes: [bulkhead]",
		"{type: payload, size: 768KiB}", "{type: payload, size: "+size+"}")
}

// cpuPayloadSize is the size of the documents that take this machine about
// as long to decode as the preset's 768 KiB took where it was made (9–10 ms
// alone, ≈ 15 ms in the service beside its GC on its one CPU, 0.7 of it at
// 45/s): on a CPU three times slower 768 KiB
// would need 1.8 CPUs, the service could not keep up, every request
// including the canary would wait, and every run would be INVALID. It
// times the decode the service does (encoding/json into a generic value)
// on the payload fault's own document, best of five.
func cpuPayloadSize(t *testing.T) string { return payloadSizeFor(t, 9*time.Millisecond) }

// payloadSizeFor is the size of the documents that take this machine
// about target to decode alone (cpuPayloadSize's way), between 96 and 768
// KiB.
func payloadSizeFor(t *testing.T, target time.Duration) string {
	t.Helper()
	const full = 768 << 10
	doc := payload.JSON(full, 1)
	best := time.Duration(math.MaxInt64)
	for range 5 {
		start := time.Now()
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	kib := int(float64(full>>10) * float64(target) / float64(best))
	kib = max(96, min(768, kib))
	t.Logf("768 KiB decode %v here: documents of %d KiB", best, kib)
	return fmt.Sprintf("%dKiB", kib)
}

// TestCPUNotIsolatedPreset: documents that take about 9 ms each to decode
// (768 KiB where the preset was made; cpuPayloadSize), decoded on the
// service's one CPU, raise /b's p99 by far more than 0.1 T with every pool far from full,
// and the CPU is named first: CPU-NOT-ISOLATED SUPPORTED, exit 0; the
// service ran on one CPU and its samples carry its GC's CPU. The same
// layout with 4 KiB documents (too small to matter) leaves /b at its
// baseline and no resource runs out: NOT SUPPORTED, exit 1.
func TestCPUNotIsolatedPreset(t *testing.T) {
	size := cpuPayloadSize(t)
	var code int
	var out, dir string
	for attempt := 1; ; attempt++ {
		code, out, dir = runSpecJudged(t, "cpu-not-isolated", cpuShort(t, size))
		// The claim's premise is a pool far from full while the CPU runs
		// out. A machine that starves the service beyond it (a pool
		// fills too, in a run still valid) says nothing about the claim:
		// once more, as for an INVALID run.
		if code != ExitFailed || attempt == 2 {
			break
		}
		s := readSummary(t, dir)
		if full := measureOf(s, "CPU-NOT-ISOLATED", "runs of payload in which no worker pool"); !(full < 1) {
			break
		}
		t.Logf("attempt %d: a worker pool filled as well (the machine starved the service beyond the claim's premise); once more", attempt)
	}
	s := readSummary(t, dir)
	if code != ExitOK {
		for _, r := range s.Runs {
			t.Logf("run %s: exhausted %+v; CPU %+v", r.ID, r.Exhausted, measure.CPUOf(r))
		}
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	rise := measureOf(s, "CPU-NOT-ISOLATED", "/b p99 rise")
	t.Logf("/b p99 rise %.3f T; service CPU %.2f cores, GC share %.2f, decode %.1f ms", rise,
		measureOf(s, "CPU-NOT-ISOLATED", "service CPU, payload"), measureOf(s, "CPU-NOT-ISOLATED", "GC share"),
		measureOf(s, "CPU-NOT-ISOLATED", "/a mean decode"))
	for _, r := range s.Runs {
		if r.CPU == nil || r.CPU.GOMAXPROCS != 1 {
			t.Errorf("run %s: CPU numbers %+v, want the service on GOMAXPROCS 1", r.ID, r.CPU)
			continue
		}
		if r.Condition == "payload" && (r.Exhausted.Resource != measure.ResourceCPU && r.Exhausted.Resource != measure.ResourceGC ||
			!(r.CPU.Cores > 0.3) || !(r.CPU.DecodeMs > 1)) {
			t.Errorf("run %s: exhausted %+v, CPU %+v; want cpu or gc first, ≥ 0.3 cores, decodes", r.ID, r.Exhausted, *r.CPU)
		}
	}
	if !serviceSampled(t, filepath.Join(dir, rundata.RunsDir, "payload-bulkhead-r1", "metrics.jsonl"), rundata.MetricGoCPUGC) {
		t.Errorf("metrics.jsonl of the payload run lacks the service's %s", rundata.MetricGoCPUGC)
	}

	code, out, dir = runSpecJudged(t, "cpu-not-isolated", cpuShort(t, "4KiB"))
	if code != ExitFailed || !strings.Contains(out, "CPU-NOT-ISOLATED") {
		t.Fatalf("4 KiB payloads: exit %d, want %d naming CPU-NOT-ISOLATED; output:\n%s", code, ExitFailed, out)
	}
	s = readSummary(t, dir)
	if o := outcomeOf(s, "CPU-NOT-ISOLATED"); o != verdict.NotSupported {
		t.Errorf("4 KiB payloads: CPU-NOT-ISOLATED = %s, want NOT SUPPORTED", o)
	}
	t.Logf("4 KiB payloads: /b p99 rise %.3f T", measureOf(s, "CPU-NOT-ISOLATED", "/b p99 rise"))
}

// serviceSampled reports whether a metrics.jsonl has a service sample with
// key.
func serviceSampled(t *testing.T, path, key string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 8<<20)
	for sc.Scan() {
		var m rundata.MetricSample
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Component == rundata.ServiceComponent {
			if _, ok := m.Values[key]; ok {
				return true
			}
		}
	}
	return false
}
