package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceRegenerates: the committed reference results hold their run
// data (gzip-compressed, without the raw vegeta files), and `report` on it
// reproduces the committed summary.json and report.md byte for byte, so the
// numbers in the README can be traced to data and a change of the analysis
// that moves them shows here.
func TestReferenceRegenerates(t *testing.T) {
	if testing.Short() {
		t.Skip("renders the reference report (~3 s)")
	}
	ref := filepath.Join("..", "results", "reference")
	out := t.TempDir()
	if _, err := WriteReport(ref, Options{OutDir: out, RunFigureRepeats: 1}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.json", "report.md"} {
		want, err := os.ReadFile(filepath.Join(ref, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("results/reference/%s differs from its regeneration: run `bulkheadlab report results/reference --run-figures 1` and review the diff", f)
		}
	}
}
