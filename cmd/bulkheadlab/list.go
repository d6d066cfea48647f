package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newListCmd builds the `list` command. Placeholder until its issue lands.
func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the embedded experiment presets",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("list: not implemented yet")
		},
	}
}
