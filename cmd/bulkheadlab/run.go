package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRunCmd builds the `run` command. Placeholder until its issue lands.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run an experiment matrix",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("run: not implemented yet")
		},
	}
}
