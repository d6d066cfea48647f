package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func TestLoadErrors(t *testing.T) {
	good := synth.Write(t, t.TempDir(), "", synth.Matrix(1, func(r *synth.Run) bool { return r.Cond == "slow" }))
	badSpec := synth.Write(t, t.TempDir(), "expectations: [not, a, map\n", nil)
	badIndex := t.TempDir()
	os.WriteFile(filepath.Join(badIndex, rundata.IndexFile), []byte("{"), 0o644)
	traversal := t.TempDir()
	os.WriteFile(filepath.Join(traversal, rundata.IndexFile), []byte(`{"experiment":"x","runs":[{"id":"../../victim","status":"complete"}]}`), 0o644)
	dup := t.TempDir()
	os.WriteFile(filepath.Join(dup, rundata.IndexFile), []byte(`{"experiment":"x","runs":[{"id":"a-b-r1"},{"id":"a-b-r1"}]}`), 0o644)
	for _, tc := range []struct {
		dir, wantFile string
	}{
		{filepath.Join(good, "missing"), "missing"},
		{t.TempDir(), rundata.IndexFile},
		{badIndex, rundata.IndexFile},
		{badSpec, rundata.SpecFile},
		{traversal, `"../../victim" is not a run ID`},
		{dup, `"a-b-r1" appears twice`},
		{filepath.Join(good, rundata.IndexFile), rundata.IndexFile},
	} {
		_, err := Load(tc.dir)
		if !errors.Is(err, ErrNotResults) || !strings.Contains(err.Error(), tc.wantFile) {
			t.Errorf("Load(%s) = %v, want ErrNotResults naming %s", tc.dir, err, tc.wantFile)
		}
	}
	if _, err := Load(good); err != nil {
		t.Errorf("Load(good) = %v", err)
	}
}

func TestLoadPartialRun(t *testing.T) {
	dir := synth.Write(t, t.TempDir(), "", []synth.Run{{Cond: "slow", Mode: "shared", Repeat: 1, Truncated: true, Seed: 1}})
	os.RemoveAll(filepath.Join(dir, rundata.RunsDir, "missing"))
	exp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := exp.Runs[0]
	if r.Complete() || len(r.Windows) == 0 {
		t.Fatalf("truncated run: complete=%t windows=%d problems=%v", r.Complete(), len(r.Windows), r.Problems)
	}
	got := strings.Join(r.Problems, "; ")
	for _, want := range []string{"windows.jsonl:30: undecodable line", "phases.json: missing", "status interrupted"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}

func TestExpectationsFromSpec(t *testing.T) {
	dir := synth.Write(t, t.TempDir(), "name: x\nrunner: {a: 1}\nexpectations:\n  victim: b\n  p4_max_ratio: 0.25\n  check: [P2]\n", nil)
	exp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := exp.Expectations; e.P4MaxRatio != 0.25 || len(e.Check) != 1 || e.P1MaxTimeToDegrade != 10 {
		t.Errorf("expectations = %+v", e)
	}
}
