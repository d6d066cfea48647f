package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// newSizeCmd builds the `size` command.
func newSizeCmd() *cobra.Command {
	var (
		rate, headroom float64
		latency        time.Duration
		from           string
	)
	cmd := &cobra.Command{
		Use:   "size --rate R --latency L [--headroom H] | size --from DIR",
		Short: "Print the Little's-law pool size",
		Long: `size applies Little's law: a workload of R requests per second, each holding
a permit for L, keeps R × L permits in flight on average. The pool size is
that demand times the headroom (default 2, for peaks), rounded up.

With --from, it reads the results of a sizing sweep (a spec whose
expectations.sizing names a swept mode, such as the bulkhead-sizing preset)
and prints the measured curve, the good region (sizes that reject none of
the culprit's healthy traffic and keep the victim at its baseline when the
culprit's dependency is slow) and where Little's law's size falls in it.`,
		Example: `  # instant payments: 200/s × 20ms = 4 permits, doubled → 8
  bulkheadlab size --rate 200 --latency 20ms
  bulkheadlab size --rate 1 --latency 1.5s --headroom 1`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "" {
				return sizeFrom(cmd.OutOrStdout(), from)
			}
			switch {
			case !cmd.Flags().Changed("rate") || math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0:
				return usageError(errors.New("--rate: required, requests per second > 0"))
			case !cmd.Flags().Changed("latency") || latency <= 0:
				return usageError(errors.New("--latency: required, a duration > 0 such as 20ms"))
			case math.IsNaN(headroom) || headroom < 1 || headroom > 100:
				return usageError(fmt.Errorf("--headroom: must be between 1 and 100, got %g", headroom))
			}
			demand, size, err := spec.PoolSize(rate, latency, headroom)
			if err != nil {
				return usageError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "demand: %g/s × %s = %.2f permits in flight\npool size (× %g headroom): %d\n",
				rate, latency, demand, headroom, size)
			return nil
		},
	}
	cmd.Flags().Float64Var(&rate, "rate", 0, "arrival rate, requests per second")
	cmd.Flags().DurationVar(&latency, "latency", 0, "holding time per request, e.g. 20ms")
	cmd.Flags().Float64Var(&headroom, "headroom", 2, "multiplier for peaks (≥ 1)")
	cmd.Flags().StringVar(&from, "from", "", "a sizing sweep's results folder: print the measured good region")
	return cmd
}

// sizeFrom prints the sizing curve of the results folder dir.
func sizeFrom(w io.Writer, dir string) error {
	exp, err := rundir.Load(dir)
	if err != nil {
		return usageError(err)
	}
	s := verdict.Evaluate(exp, exp.Expectations)
	sc := s.Sizing
	if sc == nil || len(sc.Points) == 0 {
		return usageError(fmt.Errorf("%s: no sizing sweep (its spec's expectations.sizing must name a mode swept by one numeric field)", dir))
	}
	ex := s.Expectations
	fmt.Fprintf(w, "sizing of %s (mode %s), from %s:\n", sc.Field, sc.Mode, dir)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  size\t/%s rejected (%s)\t/%s rejected (%s)\t/%s p99 rise (%s)\t/%s errors (%s)\tregion\n",
		ex.Culprit, ex.Healthy, ex.Culprit, ex.Busy, ex.Victim, ex.Slow, ex.Victim, ex.Slow)
	for _, p := range sc.Points {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s T\t%s\t%s\n", p.Value, measure.FormatEstimate(p.HealthyRejected),
			measure.FormatEstimate(p.BusyRejected), measure.FormatEstimate(p.SlowVictimP99RiseT), measure.FormatEstimate(p.SlowVictimErrorRate), p.Region(ex))
	}
	tw.Flush()
	lo, hi := float64(sc.GoodLo), float64(sc.GoodHi)
	if math.IsNaN(lo) {
		fmt.Fprintf(w, "good region: none of the swept sizes — sweep wider\n")
	} else {
		fmt.Fprintf(w, "good region %g–%g\n", lo, hi)
	}
	if sc.LittleSize > 0 {
		where := "outside the good region"
		if !math.IsNaN(lo) && float64(sc.LittleSize) >= lo && float64(sc.LittleSize) <= hi {
			where = "inside the good region"
		}
		fmt.Fprintf(w, "Little's law: %d (demand %.2f permits in %s × headroom), %s\n", sc.LittleSize, float64(sc.LittleDemand), ex.Healthy, where)
	}
	return nil
}
