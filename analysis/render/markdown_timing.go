package render

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// timingIntro explains the "Where the time went" table, in both outputs.
const timingIntro = "Per endpoint and phase (warmup left out): the time the service spent waiting (for a pool's connection, in a queue) and working (a query, a call). " +
	"Source server-timing: what the service said in its responses' Server-Timing headers, p50 / p99 ms per metric, each metric a wait or work as external.timing declares it, " +
	"else by its name or description (wait, queue, acquire, pool: a wait; total: left out, it holds both; anything else: work); with / without = the phase's results whose response carried the header and those that did not. " +
	"Source conn-metrics: the built-in service's wait for a connection and time holding it, means over the phase (its histograms are sampled as sum and count). " +
	"A slow dependency raises the work; a pool run dry raises the wait with the work flat."

// timingMetricsIntro explains the rows of the source metrics, after
// timingIntro when some run declares histograms.
const timingMetricsIntro = " Source metrics: the histograms your service exports that external.timing.histograms names as waits or work, " +
	"p50 / p99 ms from the increase of their buckets over the phase (interpolated within a bucket, as Prometheus's histogram_quantile does; " +
	"the mean only for a summary), one row per value of its by label (an endpoint's row when the value is an endpoint's name), else one row for the service."

// timingIntroOf is the section's introduction for s's runs.
func timingIntroOf(s *verdict.Summary) string {
	for _, r := range s.Runs {
		if r.WhereTime == nil {
			continue
		}
		if len(r.WhereTime.Notes) > 0 || slices.ContainsFunc(r.WhereTime.Rows, func(t measure.TimeSplit) bool { return t.Source == measure.TimingMetrics }) {
			return timingIntro + timingMetricsIntro
		}
	}
	return timingIntro
}

// writeTimingMD writes the "Where the time went" section: every run's
// waits and work per endpoint and phase, what grew from the baseline to
// the fault phase, and the declared histograms that gave no row (nothing
// when no run has any).
func writeTimingMD(b *bytes.Buffer, s *verdict.Summary) {
	if !hasTiming(s) {
		return
	}
	fmt.Fprintf(b, "## Where the time went\n\n%s\n\n", timingIntroOf(s))
	head := false
	for _, r := range s.Runs {
		if r.WhereTime == nil {
			continue
		}
		for _, row := range r.WhereTime.Rows {
			if !head {
				fmt.Fprintf(b, "| run | endpoint | phase | source | wait ms | work ms | with / without header |\n|---|---|---|---|---|---|---|\n")
				head = true
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.ID, mdEscape(row.Who()), row.Phase, row.Source,
				mdEscape(timingParts(row.Wait)), mdEscape(timingParts(row.Work)), timingCounts(row))
		}
	}
	if head {
		fmt.Fprintln(b)
	}
	for _, r := range s.Runs {
		if r.WhereTime == nil {
			continue
		}
		for _, sh := range r.WhereTime.Shifts {
			fmt.Fprintf(b, "- %s (%s): %s\n", r.ID, sh.Source, mdEscape(sh.Text))
		}
		for _, n := range r.WhereTime.Notes {
			fmt.Fprintf(b, "- %s (metrics): **not read**: %s\n", r.ID, mdEscape(n))
		}
	}
	fmt.Fprintln(b)
}

// hasTiming reports whether any run has a row or a note of where the time
// went.
func hasTiming(s *verdict.Summary) bool {
	for _, r := range s.Runs {
		if r.WhereTime != nil && len(r.WhereTime.Rows)+len(r.WhereTime.Notes) > 0 {
			return true
		}
	}
	return false
}

// timingParts writes a role's parts: "`pool` 85.0 / 120; `queue` 1.00 /
// 2.00" (p50 / p99), "`conn_wait` 77.3 (mean)"; "—" for none.
func timingParts(ps []measure.TimePart) string {
	if len(ps) == 0 {
		return "—"
	}
	var out []string
	for _, p := range ps {
		if math.IsNaN(float64(p.P50Ms)) {
			out = append(out, fmt.Sprintf("`%s` %s (mean)", p.Name, words.Fmt3(float64(p.MeanMs))))
		} else {
			out = append(out, fmt.Sprintf("`%s` %s / %s", p.Name, words.Fmt3(float64(p.P50Ms)), words.Fmt3(float64(p.P99Ms))))
		}
	}
	return strings.Join(out, "; ")
}

// timingCounts writes a row's results with and without the header, and
// its malformed entries: "1200 / 0", "1100 / 100 (3 malformed)"; "—" for
// a source without headers.
func timingCounts(row measure.TimeSplit) string {
	if math.IsNaN(float64(row.With)) {
		return "—"
	}
	out := measure.FmtG(float64(row.With)) + " / " + measure.FmtG(float64(row.Without))
	if row.Bad > 0 {
		out += " (" + measure.FmtG(float64(row.Bad)) + " malformed)"
	}
	return out
}
