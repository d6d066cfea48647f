package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// presetQuestions is what each embedded preset answers, in a user's words,
// for `list`; the preset's own description (validate, the report) keeps
// its numbers. TestListNamesEveryPreset holds it to spec.PresetNames.
var presetQuestions = map[string]string{
	"slow-dependency": "When one dependency gets slow or fails, does a shared worker pool take the other endpoint down, " +
		"and do per-dependency bulkheads keep it up? Shared pool vs bulkheads; 24 runs, ~3½ min.",
	"ci-regression": "Do the bulkheads still isolate? A short check for CI (~25 s): a slow dependency, shared pool vs " +
		"bulkheads; with --check it fails when isolation regressed.",
	"month-end-close": "Do slow, bursty reports (1.5 s each, 1/s → 20/s) starve fast payments (20 ms, 200/s) on a " +
		"shared pool of 10, and do bulkheads sized by Little's law (2 + 8) keep payments fast?",
	"breaker-after-drain": "Does a circuit breaker protect the other endpoints? It opens only after the shared pool " +
		"has drained, so they are hurt first; behind bulkheads it does no harm. ~1 min.",
	"adaptive-limit": "Can an adaptive concurrency limit replace a sized bulkhead — isolate as well when a dependency " +
		"is slow, and cost less when it is merely busy? ~2½ min.",
	"retry-storm": "Do clients that retry rejected requests bring the load straight back and hurt the other " +
		"endpoint, and does a retry budget or Retry-After contain them? ~1.5 min.",
	"bulkhead-sizing": "How large should a bulkhead be? Too small rejects normal traffic, too large never binds: " +
		"the sizes between, measured, against Little's law's. ~4 min.",
	"connection-pool-no-wall": "Do bulkheads isolate when the dependencies share one connection pool, and what " +
		"does a bulkhead larger than its connections cost? ~1 min.",
	"slow-query": "Does one slow analytical query starve every endpoint of database connections, and do separate " +
		"pools for interactive and analytical work prevent it? Needs PostgreSQL installed. ~1 min.",
	"cpu-not-isolated": "Do bulkheads isolate CPU? A dependency whose large JSON answers the service decodes slows " +
		"the other endpoint although no pool is full. ~1 min.",
	"fleet-multiplication": "Do per-instance bulkheads protect a dependency when the service runs as a fleet? N " +
		"instances × a limit of L put N·L calls on it; and does a budget per instance keep it within capacity? ~1 min.",
	"background-jobs": "Does a burst of background jobs drained by the service's own workers starve its live traffic " +
		"when the jobs share the request pool, and do bounded workers of their own keep it at its baseline? ~45 s.",
	"priority-reserve": "Can permits reserved for critical calls keep checkout up when recommendation traffic " +
		"surges through the same pool — and how many of them sit idle? Shared pool vs a reservation vs too small a one. ~1 min.",
	"rate-limit-not-bulkhead": "Is a rate limiter a bulkhead? A dependency ten times slower at the same rate: the " +
		"limiter never fires while its calls in flight take the shared connections the other endpoint needs. ~1 min.",
	"event-loop-memory": "What bounds the work in flight when nothing does? A stalled dependency on a service with " +
		"no pool (an event loop): calls in flight and memory grow without end; an explicit semaphore keeps them flat. ~20 s.",
	"noisy-tenant": "Does one tenant's big batch deny service to every other tenant on a shared pool, and do a " +
		"partition per tenant or a fair share with a cap keep the quiet tenants at their baseline? ~1 min.",
	"processes-as-walls": "Do separate processes isolate what bulkheads in one process cannot? A CPU-heavy " +
		"payload and a slow dependency against a shared pool, bulkheads in one process and a process per endpoint — " +
		"and what the processes cost in memory and CPUs. ~2 min.",
	"leak-hunt": "Does the service come back after the fault? Every error path and bursts above the limit, then " +
		"recovery: judges recovery, leaked permits and limits that do not hold. ~3 min.",
	"blast-radius": "If any one dependency gets slow or fails, which endpoints go down — including those that never " +
		"call it? An audit: run it with bulkheadlab audit blast-radius. ~1 min.",
}

// newListCmd builds the `list` command.
func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the ready-made experiments and the question each answers",
		Long: `list names the experiments built into bulkheadlab (presets) and the question
each one answers. Run one with "bulkheadlab run NAME"; "bulkheadlab validate
NAME" shows its matrix and how long it takes without running it.

To test your own service, write a spec file with an external: section (where
your service and its dependencies listen) and run "bulkheadlab run
my-spec.yaml": see docs/your-service.md.`,
		Example: `  bulkheadlab list
  bulkheadlab validate month-end-close   # see one preset's matrix and preview`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "Ready-made experiments (bulkheadlab run NAME):")
			fmt.Fprintln(out)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			for _, p := range spec.Presets() {
				name := p.Name
				if name == spec.DefaultPreset {
					name += " (default)"
				}
				what, ok := presetQuestions[p.Name]
				if !ok {
					what = p.Description
				}
				fmt.Fprintf(tw, "  %s\t%s\n", name, what)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out, "Your own service: bulkheadlab run my-spec.yaml, with an external: section")
			fmt.Fprintln(out, "naming its URLs and its dependencies (see docs/your-service.md).")
			return nil
		},
	}
}
