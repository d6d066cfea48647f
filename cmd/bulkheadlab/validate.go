package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newValidateCmd builds the `validate` command. Placeholder until its issue lands.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check experiment specs without running them",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("validate: not implemented yet")
		},
	}
}
