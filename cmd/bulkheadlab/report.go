package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/analysis"
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
	)
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate the report of a results folder",
		Long: `report reads a results folder written by "bulkheadlab run" (index.json,
spec.yaml and runs/*) and writes summary.json, report.md, index.html and the
PNG figures, into DIR or --out. It prints the verdict table. With --check it
exits 1 when a prediction listed under the spec's expectations.check is not
SUPPORTED and 3 when one is INVALID.`,
		Example: `  bulkheadlab report results/slow-dependency/20240501T120000Z
  bulkheadlab report results/ci-regression/latest --out report-out --check --junit verdicts.xml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("report: want exactly one results folder, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := analysis.WriteReport(args[0], analysis.Options{OutDir: out, NoImages: noImage, RunFigureRepeats: figRuns})
			if errors.Is(err, analysis.ErrNotResults) {
				return usageError(err)
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if err := analysis.PrintVerdicts(w, sum); err != nil {
				return err
			}
			dest := out
			if dest == "" {
				dest = args[0]
			}
			fmt.Fprintf(w, "report written to %s\n", dest)
			return finishCheck(sum, check, junit)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "write the report into this folder instead of the results folder")
	f.BoolVar(&check, "check", false, "exit 1 (3 if INVALID) unless every prediction in expectations.check is SUPPORTED")
	f.StringVar(&junit, "junit", "", "also write the checked verdicts as JUnit XML to this file")
	f.BoolVar(&noImage, "no-images", false, "skip the PNG figures")
	f.IntVar(&figRuns, "run-figures", 0, "draw per-run figures only for the first N repeats (0: all)")
	return cmd
}

// finishCheck writes the JUnit file and maps the check to an exit code.
func finishCheck(sum *analysis.Summary, check bool, junit string) error {
	names := sum.Expectations.Check
	if junit != "" {
		f, err := os.Create(junit)
		if err != nil {
			return usageError(fmt.Errorf("--junit: %w", err))
		}
		werr := analysis.WriteJUnit(f, sum, names)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	if !check {
		return nil
	}
	failed, invalid := sum.Check(names)
	switch {
	case invalid:
		return withCode(ExitInvalid, fmt.Errorf("check: a checked prediction is INVALID (the harness could not hold the load)"))
	case len(failed) > 0:
		return withCode(ExitFailed, fmt.Errorf("check: not supported: %s", strings.Join(failed, ", ")))
	}
	return nil
}
