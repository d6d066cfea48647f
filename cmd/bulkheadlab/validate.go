package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// newValidateCmd builds the `validate` command.
func newValidateCmd() *cobra.Command {
	maxDuration := DefaultMaxDuration
	cmd := &cobra.Command{
		Use:   "validate [FILE|PRESET]...",
		Short: "Check experiment specs without running them",
		Long: `validate loads each spec (a YAML file or an embedded preset name), reports
every problem as file:line: field: message, and for a valid spec prints the
expanded matrix and a Little's-law preview: the predicted permits in flight
(rate × holding time) of each pool under each condition, compared with the
pool size. Without arguments it validates every embedded preset.
It exits 2 if any spec is invalid.`,
		Example: `  bulkheadlab validate my-experiment.yaml
  bulkheadlab validate slow-dependency month-end-close`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = spec.PresetNames()
			}
			bad := 0
			for i, arg := range args {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				s, err := spec.Resolve(arg)
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				printSpecPreview(cmd.OutOrStdout(), s)
				if d := s.EstimatedDuration(); d > maxDuration {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: the matrix would take about %s, more than --max-duration %s: reduce it, or raise --max-duration\n",
						s.File(), d.Round(time.Second), maxDuration)
					bad++
				}
			}
			if bad > 0 {
				return withCode(ExitUsage, nil)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&maxDuration, "max-duration", DefaultMaxDuration, "refuse a matrix whose estimated wall time is longer")
	return cmd
}

// printSpecPreview prints the matrix and the Little's-law preview of s.
func printSpecPreview(w io.Writer, s *spec.Spec) {
	out := w
	runs := s.Expand()
	t := s.Service.Timeout.D
	fmt.Fprintf(w, "%s: ok — %s\n", s.File(), s.Name)
	if s.Description != "" {
		fmt.Fprintf(w, "  %s\n", s.Description)
	}
	total := time.Duration(len(runs)) * s.RunDuration()
	fmt.Fprintf(w, "  matrix: %d conditions × %d modes × %d repeats = %d runs of %s ≈ %s of load, about %s in all\n",
		len(s.Conditions), len(s.Modes), s.Repeats, len(runs), s.RunDuration(), total, s.EstimatedDuration().Round(time.Second))
	fmt.Fprintf(w, "  load: %s\n", s.LoadLine())
	if r := s.RolesLine(); r != "" {
		fmt.Fprintf(w, "  roles: %s\n", r)
	}
	if s.Audit != nil {
		fmt.Fprintf(w, "  audit: %d cells of faults (each dependency × %s) after a control run, the call graph measured first (%s); critical: %s\n",
			len(s.Audit.Columns), strings.Join(s.Audit.Faults, ", "), s.CalibrationDuration().Round(time.Second), orNone(s.Audit.Critical))
	}
	if s.AutoRepeats {
		per := s.EstimatedDuration() / time.Duration(s.Repeats)
		fmt.Fprintf(w, "  repeats: auto — %d to %d rounds: stops once every checked verdict is clear of its threshold (about %s to %s)\n",
			spec.MinAutoRepeats, s.Repeats, (per * spec.MinAutoRepeats).Round(time.Second), s.EstimatedDuration().Round(time.Second))
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	fmt.Fprintf(w, "  order: %s\n", strings.Join(ids, ", "))
	for i := range s.Conditions {
		if c := &s.Conditions[i]; len(c.Faults) > 0 {
			fmt.Fprintf(w, "  %s: %s: %s\n", c.Name, c.Dependency, c.DescribeFaults())
		}
	}
	for _, warning := range s.Warnings() {
		fmt.Fprintf(out, "  warning: %s\n", warning)
	}
	if s.Audit != nil {
		fmt.Fprintf(w, "  check (audit --check): every critical endpoint (%s) ISOLATED from each dependency it does not call\n", orNone(s.Audit.Critical))
	} else {
		fmt.Fprintf(w, "  check: %s (decidable by this matrix: %s)\n", orNone(s.Expectations.Check), orNone(s.Decidable(claims.Names())))
	}
	if s.External != nil {
		for i := range s.Modes {
			m := &s.Modes[i]
			es := s.ExternalOf(m)
			var ts []string
			for _, e := range s.Endpoints {
				ts = append(ts, "/"+e.Name+"="+es.Targets[e.Name])
			}
			fmt.Fprintf(w, "  external %s: %s\n", m.Name, strings.Join(ts, " "))
			if len(es.Start) > 0 {
				fmt.Fprintf(w, "    started per run by: %s (ready: %s)\n", strings.Join(es.Start, " "), firstNonEmpty(es.Ready, es.Canary))
			}
		}
		switch rt := s.RemoteTargets(); {
		case len(rt) == 0:
		case s.External.Kubernetes != nil:
			// A cluster's pods send the load there: --kubernetes runs it.
			fmt.Fprintf(w, "  note: cluster addresses, loaded from the shard pods with run --kubernetes: %s\n", strings.Join(rt, ", "))
		default:
			fmt.Fprintf(w, "  note: not loopback, needs --allow-remote to run: %s\n", strings.Join(rt, ", "))
		}
	}
	if s.External != nil {
		fmt.Fprintf(w, "  Little's law: your service's dependency latency and pools are unknown before the run; the report predicts\n"+
			"  from the latency the proxies measure in the baseline, for the pools declared under external.pools.\n")
		return
	}
	for i := range s.Modes {
		if line := s.ProcessesLine(&s.Modes[i]); line != "" {
			fmt.Fprintf(w, "  processes %s: %s\n", s.Modes[i].Name, line)
		}
	}
	fmt.Fprintf(w, "  Little's law preview (T=%s; permits in flight = Σ rate × holding time, fault phase):\n", t)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  condition\tmode\tpool\tsize\tbaseline\tfault\tvs size\texhausted after")
	for _, c := range s.Conditions {
		for _, m := range s.Modes {
			for _, p := range s.Preview(&c, &m) {
				verdict, when := "ok", "-"
				if p.PredictedDemand["fault"] > float64(p.Limit) {
					verdict = "EXCEEDS"
				}
				if d := p.PredictedExhaustion; d > 0 {
					when = fmt.Sprintf("%s (%.2gT)", d.Round(time.Millisecond), d.Seconds()/t.Seconds())
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%.1f\t%.1f\t%s\t%s\n", c.Name, m.Name, p.Name, p.Limit,
					p.PredictedDemand["baseline"], p.PredictedDemand["fault"], verdict, when)
			}
			// A layout without pools: the calls in flight nothing bounds
			// (a rate limit caps their rate, not their number).
			for _, p := range s.NoPoolPreview(&c, &m) {
				bound := "no bound"
				if p.Limit > 0 {
					bound = fmt.Sprintf("no bound (rate ≤ %g/s)", p.Limit)
				}
				fmt.Fprintf(tw, "  %s\t%s\t(none) /%s\t-\t%.1f\t%.1f\t%s\t-\n", c.Name, m.Name, p.Endpoint, p.Baseline, p.Fault, bound)
			}
		}
	}
	tw.Flush()
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
