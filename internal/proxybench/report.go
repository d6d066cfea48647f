package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

func usf(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func perReq(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// errSummary lists a cell's failures, most frequent first.
func errSummary(errs map[string]int) string {
	if len(errs) == 0 {
		return ""
	}
	keys := slices.Collect(maps.Keys(errs))
	slices.SortFunc(keys, func(a, b string) int { return errs[b] - errs[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %q", errs[k], k))
	}
	return "  errors: " + strings.Join(parts, ", ")
}

func printCell(w io.Writer, round int, c cell) {
	s := slices.Clone(c.lat)
	slices.Sort(s)
	fmt.Fprintf(w, "round %d %-9s rate %5d/s sent %6d ok %7.3f%%  p50 %7.1f µs p90 %7.1f µs p99 %8.1f µs  cpu %5.1f µs/req  upstream cpu %5.1f µs/req%s\n",
		round+1, c.target, c.rate, c.sent, 100*c.okRatio(), usf(quantile(s, 0.5)), usf(quantile(s, 0.9)), usf(quantile(s, 0.99)),
		usf(perReq(c.cpu, c.sent)), usf(perReq(c.upCPU, c.sent)), errSummary(c.errs))
}

func printMaxCell(w io.Writer, c cell, note string) {
	s := slices.Clone(c.lat)
	slices.Sort(s)
	verdict := "held"
	if !c.held() {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%-9s rate %5d/s sent %6d ok %7.3f%% %8.0f ok/s (%5.1f %%)  p50 %8.1f µs p99 %9.1f µs  cpu %5.1f µs/req  %s%s%s\n",
		c.target, c.rate, c.sent, 100*c.okRatio(), c.throughput(), 100*c.throughput()/float64(c.rate),
		usf(quantile(s, 0.5)), usf(quantile(s, 0.99)), usf(perReq(c.cpu, c.sent)), verdict, note, errSummary(c.errs))
}

// ratio formats a/b, or "n/a" when b is not positive (a ratio to a
// non-positive cost means nothing).
func ratio(a, b float64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func printPassTable(w io.Writer, rate int, o options, m [3]merged) {
	d := m[0]
	fmt.Fprintf(w, "### %d/s (%d rounds × %v per target)\n\n", rate, o.rounds, o.dur)
	fmt.Fprintf(w, "| target | sent | ok | p50 µs | p90 µs | p99 µs | added p50 µs | added p90 µs | added p99 µs | proxy CPU µs/req | p50 by round µs |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	qs := []float64{0.5, 0.9, 0.99}
	for i, x := range m {
		row := fmt.Sprintf("| %s | %d | %.3f %% |", x.target, x.sent, 100*float64(x.ok)/float64(max(x.sent, 1)))
		for _, q := range qs {
			row += fmt.Sprintf(" %.0f |", usf(quantile(x.lat, q)))
		}
		for _, q := range qs {
			if i == 0 {
				row += " – |"
				continue
			}
			row += fmt.Sprintf(" %+.0f |", usf(quantile(x.lat, q)-quantile(d.lat, q)))
		}
		if i == 0 {
			row += fmt.Sprintf(" – (upstream %.1f) |", usf(x.upCPUPerReq()))
		} else {
			row += fmt.Sprintf(" %.1f |", usf(x.cpuPerReq()))
		}
		var rs []string
		for _, r := range x.rounds {
			rs = append(rs, fmt.Sprintf("%.0f", usf(r)))
		}
		row += " " + strings.Join(rs, ", ") + " |"
		fmt.Fprintln(w, row)
	}
	row := "| ours / toxiproxy | | | | | |"
	for _, q := range qs {
		row += " " + ratio(usf(quantile(m[1].lat, q)-quantile(d.lat, q)), usf(quantile(m[2].lat, q)-quantile(d.lat, q))) + " |"
	}
	row += " " + ratio(usf(m[1].cpuPerReq()), usf(m[2].cpuPerReq())) + " | |"
	fmt.Fprintf(w, "%s\n\n", row)
}

// verdicts prints the targets, each met or not, from the phases
// that ran.
func (b *bench) verdicts() {
	if !b.ran["latency"] && !b.ran["max"] && !b.ran["delay"] {
		return
	}
	w := b.out
	fmt.Fprintf(w, "## Targets\n\n| target | ours | toxiproxy | met |\n|---|---|---|---|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	rates := slices.Sorted(maps.Keys(b.pass))
	for _, rate := range rates {
		m := b.pass[rate]
		for _, q := range []float64{0.5, 0.99} {
			ours := quantile(m[1].lat, q) - quantile(m[0].lat, q)
			tx := quantile(m[2].lat, q) - quantile(m[0].lat, q)
			fmt.Fprintf(w, "| added p%.0f at %d/s ≤ toxiproxy's | %+.0f µs | %+.0f µs | %s |\n", q*100, rate, usf(ours), usf(tx), yes(ours <= tx))
		}
	}
	if b.ran["max"] {
		fmt.Fprintf(w, "| highest rate held ≥ toxiproxy's | %d/s | %d/s | %s |\n", b.maxHeld["ours"], b.maxHeld["toxiproxy"], yes(b.maxHeld["ours"] >= b.maxHeld["toxiproxy"]))
	}
	if b.ran["delay"] {
		o, t := b.delay[0], b.delay[1]
		fmt.Fprintf(w, "| delay error p99 ≤ toxiproxy's | %.3f ms | %.3f ms | %s |\n", msf(o.p99), msf(t.p99), yes(o.p99 <= t.p99))
	}
	fmt.Fprintln(w)
}
