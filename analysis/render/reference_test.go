package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceRegenerates: every committed reference (each folder of
// results/ with a summary.json: the default experiment's and the presets')
// holds its run data (gzip-compressed, without the raw vegeta files), and
// `report` on it reproduces the committed summary.json and report.md byte
// for byte, so the numbers in the README and docs/ can be traced to data and a
// change of the analysis that moves them shows here.
func TestReferenceRegenerates(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates the reference results (~1 s each)")
	}
	refs, err := filepath.Glob(filepath.Join("..", "..", "results", "*", "summary.json"))
	if err != nil || len(refs) == 0 {
		t.Fatalf("no reference results under results/: %v", err)
	}
	for _, sum := range refs {
		ref := filepath.Dir(sum)
		name := filepath.Base(ref)
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			if _, err := WriteReport(ref, Options{OutDir: out, RunFigureRepeats: 1, namesOnly: true}); err != nil {
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
					t.Errorf("results/%s/%s differs from its regeneration: run `bulkheadlab report results/%s --run-figures 1` and review the diff", name, f, name)
				}
			}
		})
	}
}
