package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newProxyCmd builds the `proxy` command. Placeholder until its issue lands.
func newProxyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "proxy",
		Short: "Run the fault-injection proxy",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("proxy: not implemented yet")
		},
	}
}
