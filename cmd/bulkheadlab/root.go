package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the bulkheadlab command tree. Each subcommand lives in its
// own file and is built by its own constructor.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bulkheadlab",
		Short: "Measure whether per-dependency bulkheads keep a service up when one dependency gets slow",
		Long: `bulkheadlab runs a chaos experiment with real processes, real HTTP and real
open-model load: a two-endpoint service (/a calls dependency A, /b calls B)
runs with one shared pool or with per-dependency bulkheads, a fault proxy
makes A slow or failing, and the report says with numbers whether the
bulkheads kept /b available.`,
		Example: `  # run the default experiment (slow-dependency) and write a report
  bulkheadlab run

  # check a spec without running it
  bulkheadlab validate experiments/slow-dependency.yaml`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(err)
	})
	root.AddCommand(
		newServeCmd(),
		newDepCmd(),
		newProxyCmd(),
		newRunCmd(),
		newReportCmd(),
		newValidateCmd(),
		newListCmd(),
		newSizeCmd(),
	)
	return root
}
