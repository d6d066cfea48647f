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

// passRule is the rule of the pass-through verdicts, printed with them.
const passRule = "Rule: in each round, a proxy's added q-quantile is its cell's q-quantile minus the direct cell's of the same round " +
	"(the cells of a round are cut into slices that alternate between the targets, so drift within and between rounds cancels); " +
	"a proxy's added q is the median of those over the rounds " +
	"(the mean of the two middle ones for an even count). The targets are judged on these medians. " +
	"Pooled = every round's latencies put together (shown, not judged)."

func durs(xs []time.Duration, signed bool) string {
	var out []string
	for _, x := range xs {
		if signed {
			out = append(out, fmt.Sprintf("%+.0f", usf(x)))
		} else {
			out = append(out, fmt.Sprintf("%.0f", usf(x)))
		}
	}
	return strings.Join(out, ", ")
}

func printPassTable(w io.Writer, rate int, o options, m [3]merged, floor merged) {
	d := m[0]
	fmt.Fprintf(w, "### %d/s (%d rounds × %v per target)\n\n", rate, len(d.roundQ), o.dur)
	fmt.Fprintf(w, "Per round (judged): median over rounds of the per-round added quantile; the proxied p99 itself alongside.\n\n")
	fmt.Fprintf(w, "| target | added p50 µs | added p90 µs | added p99 µs | p99 µs | added p50 by round µs | added p99 by round µs | p99 by round µs |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	for i, x := range m {
		if i == 0 {
			fmt.Fprintf(w, "| direct | – | – | – | %.0f | – | – | %s |\n", usf(median(byRound(x, 2))), durs(byRound(x, 2), false))
			continue
		}
		fmt.Fprintf(w, "| %s | %+.0f | %+.0f | %+.0f | %.0f | %s | %s | %s |\n", x.target,
			usf(medianAdded(x, d, 0)), usf(medianAdded(x, d, 1)), usf(medianAdded(x, d, 2)), usf(median(byRound(x, 2))),
			durs(addedByRound(x, d, 0), true), durs(addedByRound(x, d, 2), true), durs(byRound(x, 2), false))
	}
	if floor.sent > 0 {
		fmt.Fprintf(w, "| floor (bare TCP relay, not judged) | %+.0f | %+.0f | %+.0f | %.0f | %s | %s | %s |\n",
			usf(medianAdded(floor, d, 0)), usf(medianAdded(floor, d, 1)), usf(medianAdded(floor, d, 2)), usf(median(byRound(floor, 2))),
			durs(addedByRound(floor, d, 0), true), durs(addedByRound(floor, d, 2), true), durs(byRound(floor, 2), false))
	}
	row := "| ours / toxiproxy |"
	for qi := range passQuantiles {
		row += " " + ratio(usf(medianAdded(m[1], d, qi)), usf(medianAdded(m[2], d, qi))) + " |"
	}
	row += " " + ratio(usf(median(byRound(m[1], 2))), usf(median(byRound(m[2], 2)))) + " | | | |"
	fmt.Fprintf(w, "%s\n", row)
	v50, v99 := judgePass(m, 0), judgePass(m, 2)
	fmt.Fprintf(w, "| rounds with ours' added ≤ toxiproxy's | %d of %d | | %d of %d | | | | |\n\n", v50.roundsNoWorse, v50.rounds, v99.roundsNoWorse, v99.rounds)

	fmt.Fprintf(w, "Pooled (not judged):\n\n")
	fmt.Fprintf(w, "| target | sent | ok | p50 µs | p90 µs | p99 µs | added p50 µs | added p90 µs | added p99 µs | proxy CPU µs/req | p50 by round µs |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, x := range m {
		row := fmt.Sprintf("| %s | %d | %.3f %% |", x.target, x.sent, 100*float64(x.ok)/float64(max(x.sent, 1)))
		for _, q := range passQuantiles {
			row += fmt.Sprintf(" %.0f |", usf(quantile(x.lat, q)))
		}
		for qi := range passQuantiles {
			if i == 0 {
				row += " – |"
				continue
			}
			row += fmt.Sprintf(" %+.0f |", usf(pooledAdded(x, d, qi)))
		}
		if i == 0 {
			row += fmt.Sprintf(" – (upstream %.1f) |", usf(x.upCPUPerReq()))
		} else {
			row += fmt.Sprintf(" %.1f |", usf(x.cpuPerReq()))
		}
		row += " " + durs(byRound(x, 0), false) + " |"
		fmt.Fprintln(w, row)
	}
	row = "| ours / toxiproxy | | | | | |"
	for qi := range passQuantiles {
		row += " " + ratio(usf(pooledAdded(m[1], d, qi)), usf(pooledAdded(m[2], d, qi))) + " |"
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
		for _, qi := range []int{0, 2} {
			v := judgePass(m, qi)
			fmt.Fprintf(w, "| added p%.0f at %d/s ≤ toxiproxy's (median over rounds) | %+.0f µs | %+.0f µs | %s |\n",
				passQuantiles[qi]*100, rate, usf(v.ours), usf(v.toxi), yes(v.met))
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
	if len(rates) > 0 {
		fmt.Fprintf(w, "%s\n\nFor reference (not judged):\n\n| rate | quantity | ours | toxiproxy |\n|---|---|---|---|\n", passRule)
		for _, rate := range rates {
			m := b.pass[rate]
			for _, qi := range []int{0, 2} {
				v := judgePass(m, qi)
				fmt.Fprintf(w, "| %d/s | pooled added p%.0f | %+.0f µs | %+.0f µs |\n", rate, passQuantiles[qi]*100, usf(v.pooledOurs), usf(v.pooledToxi))
			}
			fmt.Fprintf(w, "| %d/s | proxied p99 (median over rounds) | %.0f µs | %.0f µs |\n", rate, usf(median(byRound(m[1], 2))), usf(median(byRound(m[2], 2))))
			fmt.Fprintf(w, "| %d/s | rounds with ours' added p50 / p99 ≤ toxiproxy's | %d / %d of %d | |\n", rate,
				judgePass(m, 0).roundsNoWorse, judgePass(m, 2).roundsNoWorse, judgePass(m, 0).rounds)
			if f := b.floor[rate]; f.sent > 0 {
				fmt.Fprintf(w, "| %d/s | added p50 above the bare relay's (median over rounds) | %+.0f µs | %+.0f µs |\n", rate,
					usf(medianAdded(m[1], f, 0)), usf(medianAdded(m[2], f, 0)))
			}
		}
		fmt.Fprintln(w)
	}
}
