package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newReportCmd builds the `report` command. Placeholder until its issue lands.
func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report",
		Short: "Regenerate the report of a results folder",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("report: not implemented yet")
		},
	}
}
