package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/bulkheadlab/bulkheadlab/analysis/render"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/textwrap"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// runOptions are the flags of `run`.
type runOptions struct {
	out         string
	resume      string
	repeats     int
	allowRemote bool
	check       bool
	junit       string
	noReport    bool
	noImages    bool
	inProcess   bool
	outSet      bool // --out was given
	repeatsSet  bool // --repeats was given
	hdrLogs     bool
	verbose     bool
	defect      bool
	burn        int
	lag         time.Duration
	maxDuration time.Duration
	audit       bool // the audit command: the spec must have an audit block
	shards      int  // send the load from this many shard processes
	kube        kubeOptions
}

// DefaultMaxDuration is the longest a matrix may be estimated to take
// unless --max-duration allows more: a spec with a thousand conditions is
// more likely a mistake than a plan.
const DefaultMaxDuration = 3 * time.Hour

// defectFlag is the hidden flag of `run` that breaks isolation on purpose
// (the service's own hidden flag of the same name), so that tests can prove
// the regression check fails.
const defectFlag = service.DefectFlag

// newRunCmd builds the `run` command.
func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [FILE|PRESET]",
		Short: "Run an experiment matrix and write its report",
		Long: `run loads an experiment (a YAML file or an embedded preset; default
slow-dependency), runs every condition × mode × repeat with real processes
on loopback — dependency stubs, fault proxies and the service, all children
of this binary — under open-model load, and writes
results/<experiment>/<UTC timestamp>/ with the run data and the report
(summary.json, report.md, index.html, PNGs).

Ctrl-C stops the load, tears the children down, keeps every finished run,
marks the interrupted one, and exits 130; --resume DIR continues it.

Without --check, run exits 0 once the report is written, whatever its
verdicts, INVALID included: the verdicts are the report's findings (a
WARNING line after the verdict table counts the INVALID runs). With --check
they decide the exit code: 0 every prediction in expectations.check is
SUPPORTED, 1 one is NOT SUPPORTED, 3 one is INVALID or INCONCLUSIVE
(nothing can be concluded: rerun), 4 the run data is damaged. Either way 2
means bad flags or spec, 4 the setup is broken (before any load, a mode's
start command did not run or a target gave no HTTP answer: no run is made)
or the harness failed, 130 interrupted.`,
		Example: `  # the default experiment: 24 runs in about 3½ minutes
  bulkheadlab run

  # the CI regression check with a JUnit file
  bulkheadlab run ci-regression --check --junit verdicts.xml

  # continue an interrupted experiment
  bulkheadlab run --resume results/slow-dependency/20261130T101500Z`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.flagsSet(cmd)
			return runExperiment(cmd, args, o)
		},
	}
	f := cmd.Flags()
	o.addMatrixFlags(f, "exit 1 (3 if INVALID) unless every prediction in expectations.check is SUPPORTED")
	f.StringVar(&o.junit, "junit", "", "write the checked verdicts as JUnit XML to this file")
	f.BoolVar(&o.noReport, "no-report", false, "skip the report (run data only)")
	f.BoolVar(&o.hdrLogs, "hdr-logs", false, "also write each endpoint's HdrHistogram interval log (runs/<id>/hdr-<endpoint>.hlog)")
	o.kube.addKubeFlags(f)
	f.BoolVar(&o.defect, defectFlag, false, "TEST FAULT: start the service with bulkheads that share one semaphore")
	_ = f.MarkHidden(defectFlag)
	f.IntVar(&o.burn, service.BurnFlag, 0, "TEST FAULT: start the service with N goroutines spinning (a starved service)")
	_ = f.MarkHidden(service.BurnFlag)
	f.DurationVar(&o.lag, injectLagFlag, 0, "TEST FAULT: send every request up to this much late (to measure how schedule lag moves the verdicts)")
	_ = f.MarkHidden(injectLagFlag)
	return cmd
}

// addMatrixFlags adds the flags that run and audit share (check's help
// says what --check judges).
func (o *runOptions) addMatrixFlags(f *pflag.FlagSet, checkHelp string) {
	f.StringVar(&o.out, "out", "results", "results root folder")
	f.StringVar(&o.resume, "resume", "", "resume this results folder: skip complete runs, redo the rest")
	f.IntVar(&o.repeats, "repeats", 0, "override the spec's repeats (≥ 1; default: the spec's)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow external targets outside loopback")
	f.BoolVar(&o.check, "check", false, checkHelp)
	f.BoolVar(&o.noImages, "no-images", false, "write the report without its PNG figures (faster; bulkheadlab report DIR draws them later)")
	f.BoolVar(&o.verbose, "verbose", false, "print every reason each run was left out or run again")
	f.BoolVar(&o.inProcess, "in-process", false, "run the components inside this process (quick trials; the load generator then shares the runtime with the service)")
	f.DurationVar(&o.maxDuration, "max-duration", DefaultMaxDuration, "refuse a matrix whose estimated wall time is longer")
	f.IntVar(&o.shards, "shards", 0, "send the load from this many shards, released together, their results merged: bulkheadlab shard processes on this machine, or with --kubernetes pods (0: the runner sends it; 1 pod with --kubernetes)")
}

// flagsSet records which of the shared flags the command line gave.
func (o *runOptions) flagsSet(cmd *cobra.Command) {
	o.outSet = cmd.Flags().Changed("out")
	o.kube.replicasSet = cmd.Flags().Changed("proxy-replicas")
	o.repeatsSet = cmd.Flags().Changed("repeats")
}

// injectLagFlag is the hidden flag of the lag TEST FAULT (plan.InjectLag).
const injectLagFlag = "test-inject-lag"

func runExperiment(cmd *cobra.Command, args []string, o runOptions) error {
	sp, err := loadRunSpec(args, o)
	if err != nil {
		return err
	}
	p, err := sp.Plan()
	if err != nil {
		return usageError(err)
	}
	if o.defect {
		p.InjectSharedSemaphoreDefect()
	}
	if o.lag > 0 {
		p.InjectLag(o.lag)
	}
	if o.burn > 0 {
		p.InjectCPUBurn(o.burn)
	}
	w := cmd.OutOrStdout()
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	// The run's secret: only this process commands its proxies and shards.
	token := ctlauth.NewToken()
	r := &runner.Runner{
		Plan: p, Root: o.out, Resume: o.resume, Version: buildVersion(), HdrLogs: o.hdrLogs,
		Progress: &runner.TextProgress{W: w, Terminal: tty, Total: sp.RunDuration(), Width: consoleWidth(w)},
		Launcher: launcher(o, token),
	}
	if o.kube.on {
		closeKube, err := cluster.start(cmd.Context(), w, o.kube, o.shards, sp, p, r) // checked: not nil
		if err != nil {
			return err
		}
		defer func() {
			if err := closeKube(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "kubernetes: cleaning up: %v (bulkheadlab kube clean deletes what is left once the run's lease expires)\n", err)
			}
		}()
	} else if o.shards > 0 {
		fleet, stop, err := localShards(cmd.Context(), o.shards, token)
		if err != nil {
			return err
		}
		defer stop()
		r.Remote = fleet
	}
	if sp.AutoRepeats {
		r.AfterRound = func(dir *runner.ResultsDir, repeat int) bool { return autoStop(w, dir.Path, repeat, sp.Repeats) }
	}
	if o.resume == "" {
		fmt.Fprintf(w, "%s: %d runs × %s of load\n", sp.Name, len(p.Runs), sp.RunDuration())
		if sp.AutoRepeats {
			fmt.Fprintf(w, "repeats: auto — from round %d on, it stops once every checked verdict is clear of its threshold (at most %d rounds)\n",
				spec.MinAutoRepeats, sp.Repeats)
		}
	}
	for _, warning := range sp.Warnings() {
		fmt.Fprint(w, textwrap.Indent("warning: "+warning, consoleWidth(w), "  "))
	}
	if err := preflight(cmd.Context(), w, r); err != nil {
		return err
	}
	if sp.Audit != nil {
		// The call graph before the runs; on --resume only if the folder
		// lacks it (the experiment was killed before it was written).
		var graph *rundata.CallGraph
		if o.resume == "" || !fileExists(filepath.Join(o.resume, rundata.CallGraphFile)) {
			if graph, err = calibrateAudit(cmd.Context(), w, sp, p, r.Launcher); err != nil {
				if errors.Is(err, context.Canceled) {
					return withCode(ExitInterrupted, err)
				}
				return err
			}
		}
		r.Prepared = func(dir *runner.ResultsDir) error {
			if graph == nil {
				return nil
			}
			return writeCallGraph(dir.Path, graph)
		}
	}
	dir, err := r.Run(cmd.Context())
	if dir != nil {
		fmt.Fprintf(w, "results: %s\n", dir.Path)
	}
	if errors.Is(err, context.Canceled) {
		return withCode(ExitInterrupted, err)
	}
	if err != nil && !errors.Is(err, runner.ErrRunsFailed) {
		return err
	}
	runErr := err
	if o.noReport {
		return runErr
	}
	sum, rerr := render.WriteReport(dir.Path, render.Options{NoImages: o.noImages})
	if rerr != nil {
		return errors.Join(runErr, rerr)
	}
	if err := printVerdicts(w, sum, o.verbose); err != nil {
		return err
	}
	fmt.Fprintf(w, "report: %s\n", dir.Path+"/"+rundata.HTMLFile)
	if sum.Audits != nil {
		if cerr := finishAudit(w, dir.Path, sum, o.check); cerr != nil {
			return cerr
		}
		return runErr
	}
	if cerr := finishCheck(sum, o.check, o.junit); cerr != nil {
		if runErr != nil && exitCode(cerr) == ExitInvalid {
			// The harness failed (exit 4): that is why runs are missing.
			return errors.Join(runErr, cerr)
		}
		return cerr
	}
	return runErr
}

// preflight checks, before any load, that every mode's service starts and
// that every target and the canary answer (runner.Preflight), and prints
// what it found. A broken setup is the harness's exit 4 with each thing
// that failed named: no run is made and no report written.
func preflight(ctx context.Context, w io.Writer, r *runner.Runner) error {
	rep, err := r.Preflight(ctx)
	for _, warning := range rep.Warnings {
		fmt.Fprint(w, textwrap.Indent("warning: pre-flight: "+warning, consoleWidth(w), "  "))
	}
	switch {
	case errors.Is(err, context.Canceled):
		return withCode(ExitInterrupted, err)
	case errors.Is(err, runner.ErrSetup):
		return withCode(ExitError, fmt.Errorf("the experiment could not be set up; no run was made:\n%w", err))
	case err != nil:
		return err
	}
	what := "every mode's service started"
	if rep.Requests > 0 {
		what += fmt.Sprintf(", and each of %d requests to the targets and the canary got an HTTP answer", rep.Requests)
	}
	fmt.Fprintf(w, "pre-flight: %s (%d modes, %s)\n", what, rep.Modes, rep.Took.Round(10*time.Millisecond))
	return nil
}

// launcher picks how the components of each run are started; their
// control APIs ask for token.
func launcher(o runOptions, token string) runner.Launcher {
	if o.inProcess {
		return &runner.InProcessLauncher{Token: token}
	}
	return &runner.ProcessLauncher{Supervisor: &runner.Supervisor{Nice: runner.DefaultChildNice, Token: token}}
}

// loadRunSpec resolves the spec argument, applies the flag overrides and
// checks, before anything starts, everything a user can get wrong: the
// flags, the spec, the remote targets, the matrix's estimated time and
// the output paths.
func loadRunSpec(args []string, o runOptions) (*spec.Spec, error) {
	if o.kube.on && cluster == nil {
		return nil, noCluster("--kubernetes")
	}
	if o.noReport && (o.check || o.junit != "") {
		return nil, usageError(errors.New("--check and --junit judge the report: drop --no-report"))
	}
	if o.repeatsSet && o.repeats < 1 {
		return nil, usageError(fmt.Errorf("--repeats: must be ≥ 1, got %d", o.repeats))
	}
	if o.maxDuration <= 0 {
		return nil, usageError(fmt.Errorf("--max-duration: must be positive, got %s", o.maxDuration))
	}
	sp, err := resolveRunSpec(args, o)
	if err != nil {
		return nil, err
	}
	if o.repeatsSet {
		sp.Repeats = o.repeats
		if err := sp.Validate(); err != nil {
			return nil, usageError(fmt.Errorf("--repeats %d: %w", o.repeats, err))
		}
	}
	if o.audit && sp.Audit == nil {
		return nil, usageError(fmt.Errorf("%s has no audit: block: `bulkheadlab run` runs it", sp.File()))
	}
	if o.check && len(sp.Expectations.Check) == 0 && sp.Audit == nil {
		return nil, usageError(fmt.Errorf("--check: %s lists no predictions under expectations.check", sp.File()))
	}
	if err := o.kube.check(o, sp); err != nil {
		return nil, err
	}
	// A cluster's pods send the load there, not this machine.
	if remote := sp.RemoteTargets(); len(remote) > 0 && !o.allowRemote && !o.kube.on {
		for i, u := range remote {
			remote[i] = redact.URL(u)
		}
		return nil, usageError(fmt.Errorf("%s: external targets outside loopback %v: pass --allow-remote to load them", sp.File(), remote))
	}
	if o.inProcess && sp.External != nil {
		return nil, usageError(fmt.Errorf("--in-process: %s tests your own service (external), which runs as its own process: drop --in-process", sp.File()))
	}
	if d := sp.EstimatedDuration(); d > o.maxDuration {
		return nil, usageError(fmt.Errorf("%s: the matrix would take about %s, more than --max-duration %s: reduce it, or raise --max-duration",
			sp.File(), d.Round(time.Second), o.maxDuration))
	}
	if o.resume == "" {
		if err := writableDir("--out", o.out); err != nil {
			return nil, usageError(err)
		}
	}
	if o.junit != "" {
		if err := writableDir("--junit", filepath.Dir(o.junit)); err != nil {
			return nil, usageError(err)
		}
	}
	return sp, nil
}

// resolveRunSpec loads the spec: the folder's own with --resume, else the
// argument (default preset).
func resolveRunSpec(args []string, o runOptions) (*spec.Spec, error) {
	if o.resume != "" {
		if len(args) > 0 || o.repeatsSet || o.outSet {
			return nil, usageError(errors.New("--resume takes the spec and the folder from DIR: give no spec argument, --repeats or --out"))
		}
		path := filepath.Join(o.resume, rundata.SpecFile)
		if b, err := os.ReadFile(path); err == nil && redact.Masked(string(b)) {
			return nil, usageError(fmt.Errorf("--resume: %s: its spec had a password, kept in the results folder as %s: "+
				"run the spec again instead (a resumed run would send the mask)", path, redact.Mask))
		}
		s, err := spec.Load(path)
		if err != nil {
			return nil, usageError(fmt.Errorf("--resume: %w", err))
		}
		return s, nil
	}
	name := spec.DefaultPreset
	if len(args) == 1 {
		name = args[0]
	}
	sp, err := spec.Resolve(name)
	if err != nil {
		return nil, usageError(err)
	}
	return sp, nil
}

// writableDir checks, before a run, that dir exists or can be made and
// that files can be created in it (it makes dir, and nothing else).
func writableDir(flag, dir string) error {
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: cannot write to %s: %w", flag, dir, err)
	}
	f, err := os.CreateTemp(dir, ".bulkheadlab-probe-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write to %s: %w", flag, dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// autoStop decides, after round repeat of a repeats: auto experiment,
// whether to stop: from spec.MinAutoRepeats rounds on, when every checked
// verdict of the results so far is clear of its threshold.
func autoStop(w io.Writer, dir string, repeat, most int) bool {
	if repeat < spec.MinAutoRepeats {
		return false
	}
	exp, err := rundir.Load(dir)
	if err != nil {
		fmt.Fprintf(w, "repeats: auto: cannot read the results so far (%v); going on\n", err)
		return false
	}
	s := verdict.Evaluate(exp, exp.Expectations)
	open := s.Unclear()
	if len(open) == 0 {
		fmt.Fprintf(w, "repeats: auto: after %d rounds every checked verdict is clear of its threshold; %d rounds not needed\n", repeat, most-repeat)
		return true
	}
	fmt.Fprintf(w, "repeats: auto: after %d rounds not yet clear: %s\n", repeat, strings.Join(open, ", "))
	return false
}
