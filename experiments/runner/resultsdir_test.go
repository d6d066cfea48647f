package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func TestResultsDirLifecycleAndResume(t *testing.T) {
	p := testPlan(t, "name: t\nconditions: [healthy, slow]\n", nil)
	runs := p.Runs
	root, now := t.TempDir(), time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	d, err := CreateResultsDir(root, p, now)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := CreateResultsDir(root, p, now)
	if err != nil || d2.Path == d.Path {
		t.Fatalf("second folder at the same second: %v, %q vs %q", err, d2.Path, d.Path)
	}
	if want := filepath.Join(root, "t", "20250301T120000Z"); d.Path != want {
		t.Errorf("path = %s, want %s", d.Path, want)
	}
	// run 0 completes, run 1 is cut off mid-run.
	for i, status := range []string{rundata.StatusComplete, ""} {
		m := runs[i].Meta
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
	if err := d.Finish(rundata.StatusInterrupted, now); err != nil {
		t.Fatal(err)
	}
	r, err := OpenResultsDir(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.matches(p); err != nil {
		t.Errorf("reopened folder does not match its plan: %v", err)
	}
	if st := r.Index().Runs[1].Status; st != rundata.StatusInterrupted {
		t.Errorf("cut-off run status = %s, want interrupted", st)
	}
	skip, redo, err := r.ResumePlan()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skip, []string{runs[0].ID}) || len(redo) != len(runs)-1 || redo[0] != runs[1].ID {
		t.Errorf("skip %v redo %v", skip, redo)
	}
	if _, err := os.Stat(r.RunDir(runs[1].ID) + ".interrupted-1/" + rundata.MetaFile); err != nil {
		t.Errorf("partial run not moved aside: %v", err)
	}
	if _, err := r.StartRun(runs[1].Meta, nil); err != nil {
		t.Errorf("restarting a moved-aside run: %v", err)
	}
	if _, err := r.StartRun(runs[1].Meta, nil); err == nil {
		t.Error("StartRun wrote into an existing run folder")
	}
}

// TestOpenResultsDirRefusesPathsInIDs: --resume builds folder names from the
// index's run IDs; an ID that is a path is refused before any is used.
func TestOpenResultsDirRefusesPathsInIDs(t *testing.T) {
	for _, id := range []string{"../../victim", "/etc", "a/b", "..", ".hidden", ""} {
		dir := t.TempDir()
		ix := fmt.Sprintf(`{"experiment":"t","runs":[{"id":%q,"status":"running"}]}`, id)
		if err := os.WriteFile(filepath.Join(dir, rundata.IndexFile), []byte(ix), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenResultsDir(dir); err == nil || !strings.Contains(err.Error(), "not a run ID") {
			t.Errorf("run ID %q: OpenResultsDir = %v, want it refused", id, err)
		}
	}
}

// TestOpenResultsDirRefusesSymlinks: a runs folder, or a run's folder, that
// is a symbolic link is refused: --resume would write through it, out of
// the results folder.
func TestOpenResultsDirRefusesSymlinks(t *testing.T) {
	for _, link := range []string{rundata.RunsDir, filepath.Join(rundata.RunsDir, "r1")} {
		dir, outside := t.TempDir(), t.TempDir()
		ix := `{"experiment":"t","runs":[{"id":"r1","status":"running"}]}`
		if err := os.WriteFile(filepath.Join(dir, rundata.IndexFile), []byte(ix), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenResultsDir(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s a symbolic link: OpenResultsDir = %v, want it refused", link, err)
		}
	}
}
