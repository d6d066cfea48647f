package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// newSizeCmd builds the `size` command.
func newSizeCmd() *cobra.Command {
	var (
		rate, headroom float64
		latency        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "size --rate R --latency L [--headroom H]",
		Short: "Print the Little's-law pool size",
		Long: `size applies Little's law: a workload of R requests per second, each holding
a permit for L, keeps R × L permits in flight on average. The pool size is
that demand times the headroom (default 2, for peaks), rounded up.`,
		Example: `  # instant payments: 200/s × 20ms = 4 permits, doubled → 8
  bulkheadlab size --rate 200 --latency 20ms
  bulkheadlab size --rate 1 --latency 1.5s --headroom 1`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
	return cmd
}
