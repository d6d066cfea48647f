package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// runVariants runs the experiment once per round for each variant (the
// variants interleaved, so that they meet the machine in the same state),
// with the validity rules on, and tables per variant how many runs were
// INVALID and their schedule lag and canary p99 over the runs.
func runVariants(ctx context.Context, o options, specFile, out string, w io.Writer) error {
	type stats struct {
		lag, canary   []float64
		invalid, runs int
	}
	got := make([]stats, len(o.variants))
	for round := 1; round <= o.repeats; round++ {
		for i, v := range o.variants {
			dir := filepath.Join(out, fmt.Sprintf("variant-%d-round-%d", i, round))
			args := append([]string{"run", specFile, "--out", dir}, v...)
			cmd := exec.CommandContext(ctx, o.bin, args...)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() > 3 {
					return fmt.Errorf("variant %q: %w", strings.Join(v, " "), err)
				}
			}
			matches, _ := filepath.Glob(filepath.Join(dir, "*", "*", "summary.json"))
			if len(matches) != 1 {
				return fmt.Errorf("variant %q round %d: no summary.json", strings.Join(v, " "), round)
			}
			b, err := os.ReadFile(matches[0])
			if err != nil {
				return err
			}
			var s verdict.Summary
			if err := json.Unmarshal(b, &s); err != nil {
				return err
			}
			for _, r := range s.Runs {
				got[i].runs++
				if !r.Valid {
					got[i].invalid++
				}
				got[i].lag = append(got[i].lag, float64(r.Noise.LagP99Ms))
				got[i].canary = append(got[i].canary, float64(r.Noise.CanaryP99Ms))
			}
			fmt.Fprintf(os.Stderr, "round %d, variant %q done\n", round, strings.Join(v, " "))
		}
	}
	q := func(v []float64, p float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	fmt.Fprintf(w, "## Variants side by side: %s, %d rounds, noise %.0f %% of a core\n\n", o.preset, o.repeats, 100*o.noise)
	fmt.Fprintln(w, "| variant | INVALID runs | schedule lag p99 per run, ms: median / p90 / max | canary p99 per run, ms: median / max |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for i, v := range o.variants {
		g := got[i]
		fmt.Fprintf(w, "| %s | %d of %d | %.2f / %.2f / %.2f | %.2f / %.2f |\n", strings.Join(v, " "), g.invalid, g.runs,
			q(g.lag, 0.5), q(g.lag, 0.9), q(g.lag, 1), q(g.canary, 0.5), q(g.canary, 1))
	}
	return nil
}
