package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSizeCmd builds the `size` command. Placeholder until its issue lands.
func newSizeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "size",
		Short: "Print the Little's-law pool size",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("size: not implemented yet")
		},
	}
}
