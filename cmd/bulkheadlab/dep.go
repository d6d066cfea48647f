package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDepCmd builds the `dep` command. Placeholder until its issue lands.
func newDepCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dep",
		Short: "Run a dependency stub",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("dep: not implemented yet")
		},
	}
}
