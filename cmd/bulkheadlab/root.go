package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

// newRootCmd builds the bulkheadlab command tree. Each subcommand lives in its
// own file and is built by its own constructor.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bulkheadlab",
		Short: "Measure whether per-dependency bulkheads keep a service up when one dependency gets slow",
		Long: `bulkheadlab answers one question with measurements: when one dependency
gets slow, does a shared worker pool take the whole service down, and do
per-dependency bulkheads prevent it? It runs a chaos experiment with real
processes, real HTTP and open-model load, and its report says with numbers
whether the bulkheads kept the other endpoints available.

Out of the box it tests a built-in service (/a calls dependency A, /b calls
B) with one shared pool and with bulkheads while a fault proxy makes A slow
or failing: "bulkheadlab run". "bulkheadlab list" names the other ready-made
experiments and the question each answers.

To test your own service, write a spec file with an external: section (your
service's URLs, its dependencies, and the proxies to point it at) and run
"bulkheadlab run my-spec.yaml": see docs/your-service.md.`,
		Example: `  # run the default experiment (slow-dependency) and write a report
  bulkheadlab run

  # list the ready-made experiments, and check one without running it
  bulkheadlab list
  bulkheadlab validate slow-dependency

  # your own service: a spec with an external: section (docs/your-service.md)
  bulkheadlab validate my-service.yaml`,
		Version:       buildVersion(),
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
		newPostgresCmd(),
		newShardCmd(),
		newKubeCmd(),
		newRunCmd(),
		newAuditCmd(),
		newReportCmd(),
		newValidateCmd(),
		newListCmd(),
		newSizeCmd(),
		newVersionCmd(),
	)
	root.SetVersionTemplate("bulkheadlab {{.Version}}\n")
	// Argument-count errors and unknown subcommands are the user's: exit 2.
	for _, c := range root.Commands() {
		c.Args = usageArgs(c.Args)
	}
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError(fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), suggest(cmd, args[0])))
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	// The main thread is needed only by proxy's re-execution (see init).
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if cmd.Name() != "proxy" {
			runtime.UnlockOSThread()
		}
	}
	return root
}

// usageArgs wraps a cobra argument validator so that its errors exit 2.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if v == nil {
			return nil
		}
		err := v(cmd, args)
		var ee *exitError
		if err != nil && !errors.As(err, &ee) {
			return usageError(err)
		}
		return err
	}
}

// suggest returns cobra's "did you mean" hint for an unknown subcommand.
func suggest(cmd *cobra.Command, name string) string {
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		return "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return ""
}
