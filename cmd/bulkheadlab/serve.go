package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServeCmd builds the `serve` command. Placeholder until its issue lands.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the two-endpoint service under test",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("serve: not implemented yet")
		},
	}
}
