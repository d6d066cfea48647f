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
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
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
	// AfterRound, if set, is called after each round (the runs of one
	// repeat, INVALID ones re-run) with the results folder and the round's
	// repeat number; when it returns true the runner stops, and the runs
	// of later rounds are recorded as skipped (repeats: auto).
	AfterRound func(dir *ResultsDir, repeat int) bool
	// Prepared, if set, is called once the results folder exists (made or
	// reopened), before the first run: what belongs to the whole
	// experiment (an audit's call graph) is written there then, so that an
	// experiment killed mid-way keeps it.
	Prepared func(dir *ResultsDir) error
	// Remote, if set, sends every run's load from other processes (shards
	// on this machine, or pods in a cluster) instead of the runner's own;
	// the runner merges their results (see loadgen.Remote).
	Remote loadgen.Remote
	// SkipTargetProbes leaves the targets out of the pre-flight: they are
	// reached only from where Remote sends the load (a cluster's pods,
	// whose reachability is checked there). The pre-flight still launches
	// each mode's stack.
	SkipTargetProbes bool
	// PreflightLogs is where the pre-flight's component logs go (in a new
	// folder, removed unless an error names a log in it); empty: the
	// system's temporary folder.
	PreflightLogs string

	preflighted bool // Preflight succeeded
}

// Run runs every pending run of the matrix in order, after a successful
// Preflight (it runs one unless one already succeeded; on its error Run
// returns no folder and has started no load). A run that comes out
// INVALID is run again at the end of its round (the runs of one repeat),
// up to its plan's Retries times, so that drift stays interleaved, unless
// the target's own failure made it INVALID (targetDown): another attempt
// would meet the same dead target. The earlier attempt's folder is kept
// as runs/<id>.invalid-<n>. Run returns
// the results folder (also on error, once the folder exists). When ctx is
// cancelled the current run is stopped, marked interrupted, and Run returns
// ctx.Err(). When a run's stop condition fired and the plan's OnAbort is
// rundata.OnAbortStop, the runs not yet run are recorded as skipped (and
// no INVALID run is run again).
func (r *Runner) Run(ctx context.Context) (*ResultsDir, error) {
	if err := checkAbort(r.Plan); err != nil {
		return nil, err
	}
	if !r.preflighted {
		if _, err := r.Preflight(ctx); err != nil {
			return nil, err
		}
	}
	dir, skip, err := r.prepare()
	if err != nil {
		return dir, err
	}
	if r.Prepared != nil {
		if err := r.Prepared(dir); err != nil {
			return dir, err
		}
	}
	runs := r.Plan.Runs
	var failed []string
	var invalid []invalidRun // this round's
	stopped := false         // a stop condition fired and the plan stops on one
	skipRest := func(rest []plan.Run) {
		for _, later := range rest {
			if slices.Contains(skip, later.ID) {
				continue // complete in the resumed folder
			}
			if err := dir.SetStatus(later.ID, rundata.StatusSkipped); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", later.ID, err))
			}
		}
	}
	do := func(run plan.Run, n int, attempts []rundata.Attempt) {
		if r.Progress != nil {
			r.Progress.RunStarted(run, n, len(runs), len(attempts)+1)
		}
		meta, down, err := r.runOne(ctx, dir, run, attempts)
		if r.Progress != nil {
			r.Progress.RunEnded(run, meta, err)
		}
		if meta.Abort != nil && r.Plan.OnAbort == rundata.OnAbortStop {
			stopped = true
		}
		switch {
		case err != nil && ctx.Err() == nil:
			failed = append(failed, fmt.Sprintf("%s: %v", run.ID, err))
		case err == nil && meta.Status == rundata.StatusComplete && !meta.Valid && !down:
			invalid = append(invalid, invalidRun{run: run, n: n, attempts: append(attempts, attemptOf(meta))})
		}
	}
	for i, run := range runs {
		if ctx.Err() != nil {
			break
		}
		if !slices.Contains(skip, run.ID) {
			do(run, i+1, nil)
		}
		if stopped {
			skipRest(runs[i+1:])
			break
		}
		if i+1 == len(runs) || runs[i+1].Repeat != run.Repeat {
			failed = append(failed, r.retry(ctx, dir, &invalid, do, func() bool { return stopped })...)
			if stopped {
				skipRest(runs[i+1:])
				break
			}
			if i+1 < len(runs) && ctx.Err() == nil && r.AfterRound != nil && r.AfterRound(dir, run.Repeat) {
				for _, later := range runs[i+1:] {
					if err := dir.SetStatus(later.ID, rundata.StatusSkipped); err != nil {
						failed = append(failed, fmt.Sprintf("%s: %v", later.ID, err))
					}
				}
				break
			}
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
		return dir, fmt.Errorf("%w: %s", ErrRunsFailed, redact.Text(fmt.Sprint(failed)))
	}
	return dir, nil
}

// invalidRun is a run whose latest attempt was INVALID.
type invalidRun struct {
	run      plan.Run
	n        int // position in the matrix, for progress
	attempts []rundata.Attempt
}

// retry re-runs the round's INVALID runs, each up to its Retries times,
// moving every earlier attempt's folder aside first, until stopped. It
// returns harness failures of moving folders.
func (r *Runner) retry(ctx context.Context, dir *ResultsDir, invalid *[]invalidRun, do func(plan.Run, int, []rundata.Attempt), stopped func() bool) []string {
	var failed []string
	for len(*invalid) > 0 && ctx.Err() == nil && !stopped() {
		todo := *invalid
		*invalid = nil
		for _, iv := range todo {
			if len(iv.attempts) > iv.run.Retries || ctx.Err() != nil || stopped() {
				continue // out of retries: the run stays INVALID
			}
			folder, err := dir.MoveAside(iv.run.ID, "invalid")
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", iv.run.ID, err))
				continue
			}
			iv.attempts[len(iv.attempts)-1].Folder = folder
			do(iv.run, iv.n, iv.attempts)
		}
	}
	return failed
}

// attemptOf records an INVALID attempt: the rules it broke.
func attemptOf(meta rundata.RunMeta) rundata.Attempt {
	a := rundata.Attempt{Started: meta.Started}
	for _, v := range meta.Validity {
		if !v.Valid {
			a.Broken = append(a.Broken, v.Broken...)
		}
	}
	return a
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
	return NewProcessLauncher()
}

// runOne runs one cell: start the stack, load it through the phases while
// flipping faults, then write the run data. The returned meta is final;
// down reports an INVALID run that the target's failure made INVALID
// (targetDown).
func (r *Runner) runOne(ctx context.Context, dir *ResultsDir, run plan.Run, attempts []rundata.Attempt) (rundata.RunMeta, bool, error) {
	meta := run.Meta
	meta.Attempts = attempts
	meta.Started = r.now().UTC()
	meta.Versions = r.versions()
	rundir, err := dir.StartRun(meta, r.Plan.Spec)
	if err != nil {
		return meta, false, err
	}
	finish := func(status string, err error) (rundata.RunMeta, bool, error) {
		meta.Status = status
		meta.Ended = r.now().UTC()
		if err != nil && meta.Error == "" {
			meta.Error = redact.Text(err.Error())
		}
		if ferr := dir.FinishRun(meta); ferr != nil && err == nil {
			err = ferr
		}
		return meta, false, err
	}
	launched := time.Now()
	stack, err := r.launcher().Launch(ctx, run, func(c string) string { return dir.LogPath(run.ID, c) })
	if err != nil {
		if ctx.Err() != nil {
			return finish(rundata.StatusInterrupted, ctx.Err())
		}
		return finish(rundata.StatusFailed, err)
	}
	meta.Proxies = proxyURLs(run, stack)
	rep, err := r.measure(ctx, rundir, run, stack, &meta)
	// A service the memory guard killed did not die on its own (Died
	// leaves it out): its end is the stop recorded.
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
	case meta.MemoryStop != nil:
		// Not INVALID and not run again: the service's memory reached the
		// guard's ceiling, and would again.
		if rep != nil {
			meta.Startup = rep.Start.Sub(launched)
		}
		return finish(rundata.StatusStopped, nil)
	}
	meta.Valid = rep.Valid
	meta.Startup = rep.Start.Sub(launched)
	meta, _, err = finish(rundata.StatusComplete, nil)
	return meta, !rep.Valid && targetDown(rep), err
}

// proxyURLs maps each dependency of run to its proxy's data-plane URL in
// stack; nil without a proxy.
func proxyURLs(run plan.Run, stack *Stack) map[string]string {
	var out map[string]string
	for _, c := range run.Components {
		if u, ok := stack.URLs[c.Name]; ok && c.Proxy != nil {
			if out == nil {
				out = map[string]string{}
			}
			out[c.Proxy.Name] = u
		}
	}
	return out
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
