package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// ErrRunsFailed is returned by Runner.Run when the matrix finished but one
// or more runs failed in the harness (a child did not start, a file could
// not be written). Their folders hold what was measured and the error.
var ErrRunsFailed = errors.New("some runs failed")

// Runner runs the matrix of a plan and writes a results folder
// (rundata.IndexFile and friends). A Runner is used once; it is not safe
// for concurrent use.
type Runner struct {
	// Plan is the experiment. With Resume it must be the plan of the spec
	// stored in that folder.
	Plan *plan.Plan
	// Root is the results root; "results" if empty.
	Root string
	// Resume names an existing results folder whose complete runs are kept
	// and whose other runs are redone (their partial folders moved aside).
	Resume string
	// Launcher starts each run's components; nil means a ProcessLauncher.
	Launcher Launcher
	// HdrLogs also writes each endpoint's HdrHistogram interval log
	// (rundata.HdrLogPrefix), one histogram per window.
	HdrLogs bool
	// SampleInterval is the metrics sampling interval (DefaultSampleInterval if 0).
	SampleInterval time.Duration
	// Progress receives live progress; nil means none.
	Progress Progress
	// Version is recorded in every run's metadata.
	Version string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run runs every pending run of the matrix in order. It returns the results
// folder (also on error, once the folder exists). When ctx is cancelled the
// current run is stopped, marked interrupted, and Run returns ctx.Err().
func (r *Runner) Run(ctx context.Context) (*ResultsDir, error) {
	dir, skip, err := r.prepare()
	if err != nil {
		return dir, err
	}
	runs := r.Plan.Runs
	var failed []string
	for i, run := range runs {
		if slices.Contains(skip, run.ID) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if r.Progress != nil {
			r.Progress.RunStarted(run, i+1, len(runs))
		}
		meta, err := r.runOne(ctx, dir, run)
		if r.Progress != nil {
			r.Progress.RunEnded(run, meta, err)
		}
		if err != nil && ctx.Err() == nil {
			failed = append(failed, fmt.Sprintf("%s: %v", run.ID, err))
		}
	}
	if ctx.Err() != nil {
		_ = dir.Finish(rundata.StatusInterrupted, r.now())
		return dir, ctx.Err()
	}
	if err := dir.Finish(rundata.StatusFailed, r.now()); err != nil {
		return dir, err
	}
	if len(failed) > 0 {
		return dir, fmt.Errorf("%w: %v", ErrRunsFailed, failed)
	}
	return dir, nil
}

// prepare creates (or, with Resume, reopens) the results folder and returns
// the IDs of runs to skip.
func (r *Runner) prepare() (*ResultsDir, []string, error) {
	if r.Resume != "" {
		dir, err := OpenResultsDir(r.Resume)
		if err != nil {
			return nil, nil, err
		}
		if err := dir.matches(r.Plan); err != nil {
			return nil, nil, err
		}
		skip, _, err := dir.ResumePlan()
		return dir, skip, err
	}
	root := r.Root
	if root == "" {
		root = "results"
	}
	dir, err := CreateResultsDir(root, r.Plan, r.now())
	return dir, nil, err
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) launcher() Launcher {
	if r.Launcher != nil {
		return r.Launcher
	}
	return &ProcessLauncher{Supervisor: &Supervisor{Nice: DefaultChildNice}}
}

// runOne runs one cell: start the stack, load it through the phases while
// flipping faults, then write the run data. The returned meta is final.
func (r *Runner) runOne(ctx context.Context, dir *ResultsDir, run plan.Run) (rundata.RunMeta, error) {
	meta := run.Meta
	meta.Started = r.now().UTC()
	meta.Versions = r.versions()
	rundir, err := dir.StartRun(meta, r.Plan.Spec)
	if err != nil {
		return meta, err
	}
	finish := func(status string, err error) (rundata.RunMeta, error) {
		meta.Status = status
		meta.Ended = r.now().UTC()
		if err != nil && meta.Error == "" {
			meta.Error = err.Error()
		}
		if ferr := dir.FinishRun(meta); ferr != nil && err == nil {
			err = ferr
		}
		return meta, err
	}
	launched := time.Now()
	stack, err := r.launcher().Launch(ctx, run, func(c string) string { return dir.LogPath(run.ID, c) })
	if err != nil {
		if ctx.Err() != nil {
			return finish(rundata.StatusInterrupted, ctx.Err())
		}
		return finish(rundata.StatusFailed, err)
	}
	rep, err := r.measure(ctx, rundir, run, stack, &meta)
	if derr := stack.Died(); derr != nil && err == nil && ctx.Err() == nil {
		err = derr // the data were measured against a dead component
	}
	if serr := stack.Stop(); serr != nil && err == nil && ctx.Err() == nil {
		meta.Error = "teardown: " + serr.Error()
	}
	switch {
	case ctx.Err() != nil:
		return finish(rundata.StatusInterrupted, ctx.Err())
	case err != nil:
		return finish(rundata.StatusFailed, err)
	}
	meta.Valid = rep.Valid
	meta.Startup = rep.Start.Sub(launched)
	return finish(rundata.StatusComplete, nil)
}

func (r *Runner) versions() map[string]string {
	v := map[string]string{"go": runtime.Version(), "num_cpu": fmt.Sprint(runtime.NumCPU()),
		"os": runtime.GOOS + "/" + runtime.GOARCH, "bulkheadlab": r.Version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tsenart/vegeta/v12" {
				v["vegeta"] = d.Version
			}
		}
	}
	return v
}

// createFile creates name in dir, failing if it exists.
func createFile(dir, name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}
