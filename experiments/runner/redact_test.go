package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
)

// failingLauncher fails every launch with err.
type failingLauncher struct{ err error }

func (l failingLauncher) Launch(context.Context, plan.Run, func(string) string) (*Stack, error) {
	return nil, l.err
}

// TestResultsKeepNoPassword: a spec with passwords (in a URL, under a
// password key) and a run whose error names a URL with one leave none in
// any file of the results folder.
func TestResultsKeepNoPassword(t *testing.T) {
	const pw = "hunter2pw"
	p := testPlan(t, shortSpec, nil)
	p.Spec = append(p.Spec, []byte("# upstream: postgres://app:"+pw+"@db:5432/x\n# password: "+pw+"\n")...)
	root := t.TempDir()
	// The pre-flight passes; the runs' launches then fail.
	l := &failingAfterPreflight{err: errors.New("dial http://app:" + pw + "@10.0.0.1/: refused")}
	_, err := (&Runner{Plan: p, Root: root, Launcher: l}).Run(context.Background())
	if err == nil {
		t.Fatal("a run whose launch fails succeeded")
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("the run's error holds the password: %v", err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), pw) {
			t.Errorf("%s holds the password:\n%s", path, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("the results folder has %d files; want the spec, the index and the runs' meta at least", files)
	}
}

// failingAfterPreflight launches in-process for the pre-flight (the first
// launch of each mode) and fails every run's launch with err.
type failingAfterPreflight struct {
	modes map[string]bool
	err   error
}

func (l *failingAfterPreflight) Launch(ctx context.Context, r plan.Run, logPath func(string) string) (*Stack, error) {
	if l.modes == nil {
		l.modes = map[string]bool{}
	}
	if !l.modes[r.Mode] {
		l.modes[r.Mode] = true
		return inProcess().Launch(ctx, r, logPath)
	}
	return nil, l.err
}
