package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// newListCmd builds the `list` command.
func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the embedded experiment presets",
		Example: `  bulkheadlab list
  bulkheadlab validate month-end-close   # see one preset's matrix and preview`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, p := range spec.Presets() {
				name := p.Name
				if name == spec.DefaultPreset {
					name += " (default)"
				}
				fmt.Fprintf(tw, "%s\t%s\n", name, p.Description)
			}
			return tw.Flush()
		},
	}
}
