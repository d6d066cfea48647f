// Command lagsense measures how far schedule lag moves the verdicts: it runs
// an experiment again and again with the load generator's lag test fault
// (every send up to a given lag late; run's hidden --test-inject-lag) and
// the lag validity rule switched off, optionally beside CPU noise, and
// prints each deciding number of every verdict per lag, next to the spread
// of the same numbers without injected lag. The validity limit on lag is
// the largest lag that moves no deciding number by more than that spread.
//
//	go build -o bulkheadlab ./cmd/bulkheadlab
//	go run ./cmd/lagsense -bulkheadlab ./bulkheadlab -lags 0,12.5ms,25ms,50ms
//
// Every process it starts listens on loopback and ends with it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lagsense:", err)
		os.Exit(1)
	}
}

type options struct {
	bin, preset, out string
	lags             []time.Duration
	repeats          int
	noise            float64
	// noiseOnly: keep the noise up until interrupted and run nothing (for
	// a script's runs beside it, scripts/decided.sh).
	noiseOnly bool
	// variants, if set, are sets of extra run arguments compared side by
	// side at no injected lag, the lag rule on (see runVariants).
	variants [][]string
}

func parse(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("lagsense", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bulkheadlab", "bulkheadlab", "the bulkheadlab binary")
	fs.StringVar(&o.preset, "spec", "slow-dependency", "the experiment: a preset's name or a spec file")
	fs.StringVar(&o.out, "out", "", "results folder (default: a temporary one, removed after)")
	lags := fs.String("lags", "0,6.25ms,12.5ms,25ms,50ms", "the injected lags, comma-separated")
	fs.IntVar(&o.repeats, "repeats", 3, "repeats of the matrix per lag")
	fs.Float64Var(&o.noise, "noise", 0, "keep this share of one core busy beside the runs (0–1)")
	fs.BoolVar(&o.noiseOnly, "noise-only", false, "only keep the -noise share of one core busy, until interrupted")
	variants := fs.String("variants", "", "compare these sets of extra run arguments side by side instead of lags, '|'-separated (e.g. '--nice 0|--nice -5'); -repeats rounds, interleaved")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*lags, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			return o, fmt.Errorf("-lags: %q is not a duration ≥ 0", s)
		}
		o.lags = append(o.lags, d)
	}
	if *variants != "" {
		for _, v := range strings.Split(*variants, "|") {
			o.variants = append(o.variants, strings.Fields(v))
		}
	}
	switch {
	case o.repeats < 1:
		return o, errors.New("-repeats must be at least 1")
	case o.noise < 0 || o.noise > 1:
		return o, errors.New("-noise must be in [0, 1]")
	}
	return o, nil
}

func run(ctx context.Context, args []string, w io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if o.noiseOnly {
		busy(ctx, o.noise)
		return nil
	}
	out := o.out
	if out == "" {
		if out, err = os.MkdirTemp("", "lagsense-"); err != nil {
			return err
		}
		defer os.RemoveAll(out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	specFile, err := writeSpec(o, out, len(o.variants) == 0)
	if err != nil {
		return err
	}
	if o.noise > 0 {
		nctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go busy(nctx, o.noise)
	}
	if len(o.variants) > 0 {
		return runVariants(ctx, o, specFile, out, w)
	}
	var rows []row
	for _, lag := range o.lags {
		dir := filepath.Join(out, "lag-"+lag.String())
		cmd := exec.CommandContext(ctx, o.bin, "run", specFile, "--out", dir, "--test-inject-lag", lag.String())
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() > 3 {
				return fmt.Errorf("lag %v: %w", lag, err)
			}
		}
		r, err := readRow(dir, lag)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "lag %v done: lag p99 up to %.1f ms, %d of %d runs valid\n", lag, r.lagP99, r.valid, r.runs)
	}
	print(w, o, rows)
	return nil
}

// writeSpec writes the experiment with no run again after an INVALID
// attempt, the lag rule off when lagOff (the lag is what is measured), and
// the repeats asked for (one per round for variants).
func writeSpec(o options, dir string, lagOff bool) (string, error) {
	src, err := os.ReadFile(o.preset)
	if err != nil {
		if src, err = spec.PresetSource(o.preset); err != nil {
			return "", err
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 {
		return "", fmt.Errorf("%s: %v", o.preset, err)
	}
	top := doc.Content[0]
	if lagOff {
		// The rule allows at most the window: the lag is what is measured.
		set(top, []string{"validity", "max_lag_p99"}, get(top, []string{"load", "window"}, spec.DefaultWindow.String()))
		set(top, []string{"repeats"}, fmt.Sprint(o.repeats))
	} else {
		set(top, []string{"repeats"}, "1")
	}
	set(top, []string{"validity", "retries"}, "0")
	b, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "lagsense.yaml")
	return file, os.WriteFile(file, b, 0o644)
}

// get returns the scalar at path in mapping m, def when there is none.
func get(m *yaml.Node, path []string, def string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch {
		case m.Content[i].Value != path[0]:
		case len(path) == 1 && m.Content[i+1].Kind == yaml.ScalarNode:
			return m.Content[i+1].Value
		case len(path) > 1 && m.Content[i+1].Kind == yaml.MappingNode:
			return get(m.Content[i+1], path[1:], def)
		}
	}
	return def
}

// set sets the scalar at path in mapping m, creating mappings on the way.
func set(m *yaml.Node, path []string, value string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != path[0] {
			continue
		}
		if len(path) == 1 {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
			return
		}
		if m.Content[i+1].Kind != yaml.MappingNode {
			m.Content[i+1] = &yaml.Node{Kind: yaml.MappingNode}
		}
		set(m.Content[i+1], path[1:], value)
		return
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Value: path[0]}
	if len(path) == 1 {
		m.Content = append(m.Content, k, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
		return
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, k, v)
	set(v, path[1:], value)
}

// busy keeps share of one core busy until ctx ends, in 10 ms periods.
func busy(ctx context.Context, share float64) {
	runtime.LockOSThread()
	const period = 10 * time.Millisecond
	on := time.Duration(share * float64(period))
	for ctx.Err() == nil {
		for start := time.Now(); time.Since(start) < on; {
		}
		time.Sleep(period - on)
	}
}

// row is one lag's deciding numbers.
type row struct {
	lag        time.Duration
	lagP99     float64 // the largest lag p99 measured, ms
	runs       int
	valid      int
	outcomes   map[string]string
	measures   map[string]measure.Estimate // "VERDICT: measure"
	thresholds map[string]string
}

func readRow(dir string, lag time.Duration) (row, error) {
	r := row{lag: lag, outcomes: map[string]string{}, measures: map[string]measure.Estimate{}, thresholds: map[string]string{}}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "*", "summary.json"))
	if len(matches) != 1 {
		return r, fmt.Errorf("lag %v: want one summary.json under %s, found %d", lag, dir, len(matches))
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		return r, err
	}
	var s verdict.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return r, fmt.Errorf("%s: %w", matches[0], err)
	}
	for _, run := range s.Runs {
		r.runs++
		if run.Valid {
			r.valid++
		}
		r.lagP99 = math.Max(r.lagP99, float64(run.Noise.LagP99Ms))
	}
	for _, v := range s.Verdicts {
		if v.Outcome == verdict.Skipped {
			continue
		}
		r.outcomes[v.Name] = string(v.Outcome)
		for _, m := range v.Measures {
			if m.Op == "" {
				continue
			}
			k := v.Name + ": " + m.Name
			r.measures[k] = m.Value
			r.thresholds[k] = fmt.Sprintf("%s %g %s", m.Op, float64(*m.Threshold), m.Unit)
		}
	}
	return r, nil
}

// print writes two tables: per lag, which verdicts changed from the first
// lag's and how far the deciding numbers moved, in units of their spread
// over the first lag's repeats (half its 95 % interval); then every
// deciding number at every lag.
func print(w io.Writer, o options, rows []row) {
	base := rows[0]
	var keys []string
	for k := range base.measures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	moved := func(r row, k string) float64 {
		b, e := base.measures[k], r.measures[k]
		half := (b.Hi - b.Lo) / 2
		if half <= 0 || math.IsNaN(e.Mean) || math.IsNaN(b.Mean) {
			return math.NaN()
		}
		return math.Abs(e.Mean-b.Mean) / half
	}
	fmt.Fprintf(w, "## Lag sensitivity: %s, %d repeats per lag, noise %.0f %% of a core\n\n", o.preset, o.repeats, 100*o.noise)
	fmt.Fprintln(w, "| injected lag | measured lag p99 (ms) | valid runs (lag rule off) | verdicts changed | largest move of a deciding number (× its spread at the first lag) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		var changed []string
		for v, out := range base.outcomes {
			if r.outcomes[v] != out {
				changed = append(changed, v+" "+out+" → "+r.outcomes[v])
			}
		}
		sort.Strings(changed)
		worst, which := 0.0, ""
		for _, k := range keys {
			if m := moved(r, k); m > worst {
				worst, which = m, k
			}
		}
		fmt.Fprintf(w, "| %v | %.1f | %d of %d | %s | %.2f (%s) |\n", r.lag, r.lagP99, r.valid, r.runs, orNone(changed), worst, which)
	}
	fmt.Fprintf(w, "\n| deciding number | threshold |")
	for _, r := range rows {
		fmt.Fprintf(w, " lag %v |", r.lag)
	}
	fmt.Fprint(w, "\n|---|---|")
	for range rows {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s |", k, base.thresholds[k])
		for _, r := range rows {
			e, ok := r.measures[k]
			if !ok {
				fmt.Fprint(w, " — |")
				continue
			}
			fmt.Fprintf(w, " %s |", measure.FormatEstimate(e))
		}
		fmt.Fprintln(w)
	}
}

func orNone(v []string) string {
	if len(v) == 0 {
		return "none"
	}
	return strings.Join(v, "; ")
}
