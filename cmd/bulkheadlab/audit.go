package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/analysis/render"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// newAuditCmd builds the `audit` command: `run` for a spec with an audit
// block, which it requires.
func newAuditCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "audit FILE",
		Short: "Slow and fail every dependency in turn and map which endpoints go down",
		Long: `audit runs a blast-radius audit: a spec with an audit: block. It first
measures the service's call graph (each endpoint's requests alone, the
fault proxies' call counts read before and after), then runs a control
run and every dependency × fault (slow at 0.9 T, failing; or the audit's
latency ladder) in turn, with the validity rules of every run, and writes
the map — endpoints × faults, each cell ISOLATED, DEGRADED, EXPECTED (the
endpoint calls that dependency), ABORTED, INVALID or SKIPPED — as
audit.md, audit.html, audit-map.png and audit.json beside the report.
A DEGRADED cell is a finding: an endpoint taken down by a dependency it
does not call, named with the resource that ran out.

The audit's stop conditions (abort:) remove a fault the moment one is met
and mark the cell ABORTED; on_abort: stop ends the audit there. Ctrl-C
removes every fault before exiting (130); --resume DIR continues.

With --check the exit code is 1 when an endpoint listed under
audit.critical is not ISOLATED from a dependency it does not call
(DEGRADED, or ABORTED by its own stop condition), 3 when such a cell
could not be measured (INVALID, SKIPPED, or stopped by another endpoint's
or a probe's condition), 0 otherwise; 2 bad flags or spec, 4 the harness
failed. report DIR --check judges an audit's folder the same way.`,
		Example: `  # the preset: four endpoints, three dependencies, one shared pool
  bulkheadlab validate blast-radius   # the matrix, the layout's predictions and how long it takes
  bulkheadlab audit blast-radius --check`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && o.resume == "" {
				return usageError(errors.New("audit: give the audit's spec file (or --resume DIR)"))
			}
			o.audit = true
			o.flagsSet(cmd)
			return runExperiment(cmd, args, o)
		},
	}
	o.addMatrixFlags(cmd.Flags(), "exit 1 (3 if not measured) unless every critical endpoint is ISOLATED from the dependencies it does not call")
	return cmd
}

// calibrateAudit measures the call graph of the audit's service before its
// runs: the first run's components (the control), each endpoint alone.
// The components' logs go to a temporary folder, removed unless it fails.
func calibrateAudit(ctx context.Context, w io.Writer, sp *spec.Spec, p *plan.Plan, l runner.Launcher) (*rundata.CallGraph, error) {
	cal := sp.Audit.Calibration
	fmt.Fprintf(w, "call graph: %d requests at %g/s to each of %d endpoints alone\n", cal.Requests, cal.Rate, len(sp.Endpoints))
	logs, err := os.MkdirTemp("", "bulkheadlab-calibration-")
	if err != nil {
		return nil, err
	}
	g, err := runner.Calibrate(ctx, l, p.Runs[0], cal, func(c string) string { return filepath.Join(logs, c+".log") })
	if err != nil {
		return nil, fmt.Errorf("%w (the components' logs: %s)", err, logs)
	}
	_ = os.RemoveAll(logs)
	for _, e := range g.Endpoints {
		deps := g.Edges[e.Endpoint]
		line := "  /" + e.Endpoint + " → " + strings.Join(deps, ", ")
		if len(deps) == 0 {
			line = "  /" + e.Endpoint + " → no dependency seen"
		}
		if why, ok := g.Failed[e.Endpoint]; ok {
			line += fmt.Sprintf(" (no request answered 2xx: %s)", why)
		}
		fmt.Fprintln(w, line)
	}
	return &g, nil
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// writeCallGraph stores the measured call graph in the results folder.
func writeCallGraph(dir string, g *rundata.CallGraph) error {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	return render.WriteFileAtomic(filepath.Join(dir, rundata.CallGraphFile), append(b, '\n'))
}

// finishAudit prints every map of an audit and, with check, decides the
// exit code from their violations.
func finishAudit(w io.Writer, dir string, sum *verdict.Summary, check bool) error {
	var failed, unmeasured []string
	for i := range sum.Audits {
		m := &sum.Audits[i]
		if err := render.PrintAudit(w, m); err != nil {
			return err
		}
		fmt.Fprintf(w, "audit map: %s\n", filepath.Join(render.AuditDir(dir, sum, i), render.AuditHTMLFile))
		for _, v := range m.Violations {
			label := v
			if len(sum.Audits) > 1 {
				label = m.Mode + ": " + v
			}
			if slices.Contains(m.Unmeasured, v) {
				unmeasured = append(unmeasured, label)
			} else {
				failed = append(failed, label)
			}
		}
	}
	if !check {
		return nil
	}
	switch {
	case len(sum.Damaged) > 0:
		return withCode(ExitError, fmt.Errorf("check: the results folder holds damaged run data, which is not evidence: %s", strings.Join(sum.Damaged, "; ")))
	case len(failed) > 0:
		return withCode(ExitFailed, fmt.Errorf("check: critical endpoints not isolated: %s", strings.Join(failed, "; ")))
	case len(unmeasured) > 0:
		return withCode(ExitInvalid, fmt.Errorf("check: critical cells not measured (rerun): %s", strings.Join(unmeasured, "; ")))
	}
	return nil
}
