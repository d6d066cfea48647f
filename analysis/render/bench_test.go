package render

import (
	"os"
	"runtime"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
)

// BenchmarkWriteReport measures `report` on a folder the size of the default
// matrix: 8 runs × 22 one-second windows × 2 endpoints, 89 metric samples ×
// 4 components per run, all figures.
func BenchmarkWriteReport(b *testing.B) {
	dir := synth.Write(b, b.TempDir(), "", synth.Matrix(1, nil))
	out := b.TempDir()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		if _, err := WriteReport(dir, Options{OutDir: out}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/1e6, "MB-alloc/op")
	b.ReportMetric(float64(after.HeapSys)/1e6, "MB-heap-sys")
}

// TestWriteSynthFolder writes the default-matrix synthetic folder to
// $BULKHEADLAB_SYNTH_DIR, for timing the real command with /usr/bin/time.
func TestWriteSynthFolder(t *testing.T) {
	dir := os.Getenv("BULKHEADLAB_SYNTH_DIR")
	if dir == "" {
		t.Skip("set BULKHEADLAB_SYNTH_DIR to write a synthetic results folder")
	}
	synth.Write(t, dir, "name: synthetic\nexpectations:\n  check: [P1, P2]\n", synth.Matrix(1, nil))
}
