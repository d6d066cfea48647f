package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bulkheadlab/bulkheadlab/analysis/render"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// newReportCmd builds the `report` command: regenerate summary.json,
// report.md, index.html and the PNGs of a results folder without rerunning.
func newReportCmd() *cobra.Command {
	var (
		out     string
		check   bool
		junit   string
		noImage bool
		figRuns int
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate the report of a results folder",
		Long: `report reads a results folder written by "bulkheadlab run" (index.json,
spec.yaml and runs/*) and writes summary.json, report.md, index.html and the
PNG figures, into DIR or --out. It prints the verdict table. Without --check
it exits 0 once the report is written, whatever its verdicts; with --check it
exits 1 when a prediction listed under the spec's expectations.check is not
SUPPORTED, 3 when one is INVALID or INCONCLUSIVE and 4 when the run data is
damaged.`,
		Example: `  bulkheadlab report results/slow-dependency/20240501T120000Z
  bulkheadlab report results/ci-regression/20240501T121500Z --out report-out --check --junit verdicts.xml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("report: want exactly one results folder, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if figRuns < 0 {
				return usageError(fmt.Errorf("--run-figures: must be ≥ 0 (0: every repeat), got %d", figRuns))
			}
			if out != "" {
				if err := writableDir("--out", out); err != nil {
					return usageError(err)
				}
			}
			if junit != "" {
				if err := writableDir("--junit", filepath.Dir(junit)); err != nil {
					return usageError(err)
				}
			}
			sum, err := render.WriteReport(args[0], render.Options{OutDir: out, NoImages: noImage, RunFigureRepeats: figRuns})
			if errors.Is(err, rundir.ErrNotResults) {
				return usageError(err)
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if err := printVerdicts(w, sum, verbose); err != nil {
				return err
			}
			dest := out
			if dest == "" {
				dest = args[0]
			}
			fmt.Fprintf(w, "report written to %s\n", dest)
			if sum.Audits != nil {
				return finishAudit(w, dest, sum, check)
			}
			return finishCheck(sum, check, junit)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "write the report into this folder instead of the results folder")
	f.BoolVar(&check, "check", false, "exit 1 (3 if INVALID) unless every prediction in expectations.check is SUPPORTED")
	f.StringVar(&junit, "junit", "", "also write the checked verdicts as JUnit XML to this file")
	f.BoolVar(&noImage, "no-images", false, "skip the PNG figures")
	f.IntVar(&figRuns, "run-figures", 0, "draw per-run figures only for the first N repeats (0: all)")
	f.BoolVar(&verbose, "verbose", false, "print every reason each run was left out or run again")
	return cmd
}

// finishCheck writes the JUnit file and maps the check to an exit code.
func finishCheck(sum *verdict.Summary, check bool, junit string) error {
	names := sum.Expectations.Check
	if junit != "" {
		var buf bytes.Buffer
		if err := render.WriteJUnit(&buf, sum, names); err != nil {
			return err
		}
		if err := render.WriteFileAtomic(junit, buf.Bytes()); err != nil {
			return withCode(ExitError, fmt.Errorf("--junit: %w", err))
		}
	}
	if !check {
		return nil
	}
	c := sum.Check(names)
	switch {
	case c.Damaged:
		return withCode(ExitError, fmt.Errorf("check: the results folder holds damaged run data, which is not evidence: %s", strings.Join(sum.Damaged, "; ")))
	case len(c.Undecided) > 0:
		return withCode(ExitInvalid, fmt.Errorf("check: nothing can be concluded about %s (INVALID: the harness could not measure the system; INCONCLUSIVE: the data cannot decide); rerun",
			strings.Join(c.Undecided, ", ")))
	case len(c.NotSupported) > 0:
		// Each with its evidence: the run, the endpoint or limit, what was
		// measured.
		var parts []string
		for _, n := range c.NotSupported {
			if v, ok := sum.Lookup(n); ok && v.Reason != "" {
				n += " (" + v.Reason + ")"
			}
			parts = append(parts, n)
		}
		return withCode(ExitFailed, fmt.Errorf("check: not supported: %s", strings.Join(parts, "; ")))
	case len(c.Skipped) > 0:
		return withCode(ExitError, fmt.Errorf("check: could not judge %s: no complete run of the cells they need (see the runs' errors)", strings.Join(c.Skipped, ", ")))
	}
	return nil
}

// printVerdicts prints the verdict table and, after it, what the reader
// must know before trusting it (damaged data, runs left out and for what,
// what to change, unclassified responses) and the runs × rules table of the
// left-out runs, ending with a warning line when any run was left INVALID
// or damaged; verbose adds every reason. Lines are wrapped to the
// terminal's width (consoleWidth).
func printVerdicts(w io.Writer, sum *verdict.Summary, verbose bool) error {
	return render.PrintConsole(w, sum, render.ConsoleOptions{Width: consoleWidth(w), Verbose: verbose})
}

// consoleWidth is the width of the terminal w writes to, else $COLUMNS,
// else render.DefaultConsoleWidth.
func consoleWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return render.DefaultConsoleWidth
}
