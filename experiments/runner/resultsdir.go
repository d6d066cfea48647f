package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/atomicfile"
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TimestampFormat names a results folder: UTC, sortable, no colons.
const TimestampFormat = "20060102T150405Z"

// ErrUnknownRun is returned for a run ID that is not in the index.
var ErrUnknownRun = errors.New("run not in the index")

// ResultsDir is one results folder, results/<experiment>/<UTC timestamp>/,
// with its index.json. Its methods are safe for concurrent use; every write
// of index.json and meta.json is atomic (temp file + rename), so a crash
// leaves either the old or the new version.
type ResultsDir struct {
	// Path is the folder.
	Path  string
	mu    sync.Mutex
	index rundata.Index
}

// CreateResultsDir creates a new folder root/<experiment>/<UTC timestamp of
// now> (adding -2, -3... if it exists: an existing folder is never
// reused), writes spec.yaml (the plan's resolved spec) and index.json with
// every run pending.
func CreateResultsDir(root string, p *plan.Plan, now time.Time) (*ResultsDir, error) {
	parent := filepath.Join(root, p.Experiment)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	base := filepath.Join(parent, now.UTC().Format(TimestampFormat))
	path := base
	for i := 2; ; i++ {
		err := os.Mkdir(path, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return nil, fmt.Errorf("results: %w", err)
		}
		path = fmt.Sprintf("%s-%d", base, i)
	}
	if err := writeRedacted(filepath.Join(path, rundata.SpecFile), p.Spec); err != nil {
		return nil, err
	}
	d := &ResultsDir{Path: path, index: rundata.Index{Experiment: p.Experiment, Started: now.UTC()}}
	for _, r := range p.Runs {
		d.index.Runs = append(d.index.Runs, rundata.IndexEntry{
			ID: r.ID, Mode: r.Mode, Condition: r.Condition, Repeat: r.Repeat, Status: rundata.StatusPending,
		})
	}
	return d, d.saveIndex()
}

// OpenResultsDir opens an existing folder (for --resume) by reading its
// index.json. The spec the folder was run with is its spec.yaml.
func OpenResultsDir(path string) (*ResultsDir, error) {
	b, err := os.ReadFile(filepath.Join(path, rundata.IndexFile))
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	d := &ResultsDir{Path: path}
	if err := json.Unmarshal(b, &d.index); err != nil {
		return nil, fmt.Errorf("results: %s: %w", rundata.IndexFile, err)
	}
	for i, e := range d.index.Runs {
		if !rundata.ValidRunID(e.ID) {
			return nil, fmt.Errorf("results: %s: runs[%d].id %q is not a run ID: refusing a path built from it", rundata.IndexFile, i, e.ID)
		}
	}
	// A resume writes under runs/ and moves run folders aside: a symbolic
	// link there would take those writes out of the folder.
	runs := filepath.Join(path, rundata.RunsDir)
	if err := noSymlink(runs); err != nil {
		return nil, err
	}
	for _, e := range d.index.Runs {
		if err := noSymlink(filepath.Join(runs, e.ID)); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// noSymlink refuses path if it is a symbolic link; a path that does not
// exist is fine.
func noSymlink(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("results: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("results: %s is a symbolic link: refusing to write through it", path)
	}
	return nil
}

// matches checks that p is the plan of this folder: the same experiment
// and the same runs in the same order.
func (d *ResultsDir) matches(p *plan.Plan) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.index.Experiment != p.Experiment || len(d.index.Runs) != len(p.Runs) {
		return fmt.Errorf("results: %s holds %d runs of %q, the plan %d runs of %q", d.Path,
			len(d.index.Runs), d.index.Experiment, len(p.Runs), p.Experiment)
	}
	for i, e := range d.index.Runs {
		if e.ID != p.Runs[i].ID {
			return fmt.Errorf("results: %s: run %d is %s in the index and %s in the plan", d.Path, i+1, e.ID, p.Runs[i].ID)
		}
	}
	return nil
}

// Index returns a copy of the current index.
func (d *ResultsDir) Index() rundata.Index {
	d.mu.Lock()
	defer d.mu.Unlock()
	ix := d.index
	ix.Runs = append([]rundata.IndexEntry(nil), d.index.Runs...)
	return ix
}

// RunDir is the folder of run id.
func (d *ResultsDir) RunDir(id string) string { return filepath.Join(d.Path, rundata.RunsDir, id) }

// LogPath is the log file of component in run id.
func (d *ResultsDir) LogPath(id, component string) string {
	return filepath.Join(d.RunDir(id), rundata.LogsDir, component+".log")
}

// StartRun creates the run's folder (with logs/ and its spec.yaml), writes
// meta.json with status running and marks the run running in the index.
// A folder left by an earlier attempt must have been moved aside first
// (ResumePlan does that); StartRun never writes into an existing folder.
func (d *ResultsDir) StartRun(meta rundata.RunMeta, spec []byte) (string, error) {
	dir := d.RunDir(meta.ID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("results: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("results: run %s: %w", meta.ID, err)
	}
	if err := os.Mkdir(filepath.Join(dir, rundata.LogsDir), 0o755); err != nil {
		return "", fmt.Errorf("results: %w", err)
	}
	if spec != nil {
		if err := writeRedacted(filepath.Join(dir, rundata.SpecFile), spec); err != nil {
			return "", err
		}
	}
	meta.Status = rundata.StatusRunning
	if err := d.WriteMeta(meta); err != nil {
		return "", err
	}
	return dir, d.SetStatus(meta.ID, rundata.StatusRunning)
}

// FinishRun writes the final meta.json and the run's status in the index
// (status is meta.Status: complete, interrupted or failed).
func (d *ResultsDir) FinishRun(meta rundata.RunMeta) error {
	if err := d.WriteMeta(meta); err != nil {
		return err
	}
	return d.SetStatus(meta.ID, meta.Status)
}

// WriteMeta atomically writes the run's meta.json.
func (d *ResultsDir) WriteMeta(meta rundata.RunMeta) error {
	return writeJSONAtomic(filepath.Join(d.RunDir(meta.ID), rundata.MetaFile), meta)
}

// SetStatus sets one run's status in index.json.
func (d *ResultsDir) SetStatus(id, status string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.index.Runs {
		if d.index.Runs[i].ID == id {
			d.index.Runs[i].Status = status
			return d.saveIndexLocked()
		}
	}
	return fmt.Errorf("results: %w: %s", ErrUnknownRun, id)
}

// Finish marks every run still running as status (interrupted or failed),
// sets the end time and saves the index. Call it on every exit path.
func (d *ResultsDir) Finish(status string, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.index.Runs {
		if d.index.Runs[i].Status == rundata.StatusRunning {
			d.index.Runs[i].Status = status
		}
	}
	d.index.Ended = now.UTC()
	return d.saveIndexLocked()
}

func (d *ResultsDir) saveIndex() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.saveIndexLocked()
}

func (d *ResultsDir) saveIndexLocked() error {
	return writeJSONAtomic(filepath.Join(d.Path, rundata.IndexFile), d.index)
}

// ResumePlan decides, for --resume, which runs are done (complete, or
// stopped by the memory guard — what the service did, which it would do
// again: skip) and which to redo (everything else, in matrix order). The folder of each
// run to redo, if any, is moved aside to runs/<id>.interrupted-N (the first
// free N), its index status reset to pending; no data is deleted.
func (d *ResultsDir) ResumePlan() (skip, redo []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.index.Runs {
		e := &d.index.Runs[i]
		if e.Status == rundata.StatusComplete || e.Status == rundata.StatusStopped {
			skip = append(skip, e.ID)
			continue
		}
		redo = append(redo, e.ID)
		if _, err := moveAside(d.RunDir(e.ID), "interrupted"); err != nil {
			return nil, nil, err
		}
		e.Status = rundata.StatusPending
	}
	d.index.Ended = time.Time{}
	return skip, redo, d.saveIndexLocked()
}

// MoveAside renames run id's folder to runs/<id>.<why>-N (the first free N),
// sets the run pending in the index and returns the new folder's name. No
// data is deleted.
func (d *ResultsDir) MoveAside(id, why string) (string, error) {
	to, err := moveAside(d.RunDir(id), why)
	if err != nil {
		return "", err
	}
	return filepath.Base(to), d.SetStatus(id, rundata.StatusPending)
}

// moveAside renames dir to dir.<why>-N and returns the new path; a missing
// dir is fine (and returns "").
func moveAside(dir, why string) (string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	for n := 1; n <= 10000; n++ {
		to := fmt.Sprintf("%s.%s-%d", dir, why, n)
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(dir, to); err != nil {
				return "", fmt.Errorf("results: %w", err)
			}
			return to, nil
		}
	}
	return "", fmt.Errorf("results: no free name to move %s aside", dir)
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("results: %s: %w", filepath.Base(path), err)
	}
	return writeRedacted(path, append(b, '\n'))
}

// writeRedacted writes path atomically (a crash leaves the old or the new
// version), with every password masked (redact.Text): the spec copies,
// meta.json and index.json.
func writeRedacted(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, redact.Bytes(data)); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}
