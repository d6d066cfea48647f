package experiments

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis"
)

func TestResultsDirLifecycleAndResume(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nconditions: [healthy, slow]\n"))
	if err != nil {
		t.Fatal(err)
	}
	runs := s.Expand()
	root, now := t.TempDir(), time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	d, err := CreateResultsDir(root, s, runs, now)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := CreateResultsDir(root, s, runs, now)
	if err != nil || d2.Path == d.Path {
		t.Fatalf("second folder at the same second: %v, %q vs %q", err, d2.Path, d.Path)
	}
	if want := filepath.Join(root, "t", "20250301T120000Z"); d.Path != want {
		t.Errorf("path = %s, want %s", d.Path, want)
	}
	// run 0 completes, run 1 is cut off mid-run.
	for i, status := range []string{analysis.StatusComplete, ""} {
		m := s.Meta(runs[i])
		if _, err := d.StartRun(m, []byte("name: t\n")); err != nil {
			t.Fatal(err)
		}
		if status != "" {
			m.Status = status
			if err := d.FinishRun(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Finish(analysis.StatusInterrupted, now); err != nil {
		t.Fatal(err)
	}
	r, spec, err := OpenResultsDir(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "t" || len(spec.Expand()) != len(runs) {
		t.Errorf("reopened spec %q with %d runs", spec.Name, len(spec.Expand()))
	}
	if st := r.Index().Runs[1].Status; st != analysis.StatusInterrupted {
		t.Errorf("cut-off run status = %s, want interrupted", st)
	}
	skip, redo, err := r.ResumePlan()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skip, []string{runs[0].ID}) || len(redo) != len(runs)-1 || redo[0] != runs[1].ID {
		t.Errorf("skip %v redo %v", skip, redo)
	}
	if _, err := os.Stat(r.RunDir(runs[1].ID) + ".interrupted-1/" + analysis.MetaFile); err != nil {
		t.Errorf("partial run not moved aside: %v", err)
	}
	if _, err := r.StartRun(s.Meta(runs[1]), nil); err != nil {
		t.Errorf("restarting a moved-aside run: %v", err)
	}
	if _, err := r.StartRun(s.Meta(runs[1]), nil); err == nil {
		t.Error("StartRun wrote into an existing run folder")
	}
}
