package render

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func measureLine(m verdict.Measure) string {
	thr := "(info)"
	if m.Op != "" {
		thr = m.Op + " " + words.Fmt3(float64(*m.Threshold)) + " → " + m.Result
	}
	return fmt.Sprintf("| %s | %s | %s | %s |", m.Name, measure.FormatEstimate(m.Value), m.Unit, thr)
}

// renderMarkdown writes report.md. It uses only the summary, so it is as
// deterministic as the summary.
func renderMarkdown(s *verdict.Summary) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("# bulkheadlab report: %s\n", s.Experiment)
	if s.Audits != nil {
		p("%s Numbers are means over complete repeats; with %d or more repeats a 95 %% bootstrap interval over repeats follows in brackets.\n",
			auditLine(s), measure.MinRepeatsForCI)
	} else {
		p("%s Numbers are means over complete repeats; with %d or more repeats a 95 %% bootstrap interval over repeats follows in brackets.\n",
			rolesLine(s), measure.MinRepeatsForCI)
	}
	if len(s.Notices) > 0 {
		p("## Read this first\n")
		for _, n := range s.Notices {
			p("- %s", mdEscape(n))
		}
		p("")
	}
	if s.Audits == nil {
		writeVerdictsMD(&b, s)
		writeCellsMD(&b, s)
	} else {
		writeLeftOutMD(&b, s)
	}
	writePhasesMD(&b, s)
	writeLittleMD(&b, s)
	writeRetriesMD(&b, s)
	writeSizingMD(&b, s)
	writeConnWaitsMD(&b, s)
	writeTimingMD(&b, s)
	writeFleetMD(&b, s)
	writeAftermathMD(&b, s)
	writeRunsMD(&b, s)
	if len(s.Images) > 0 {
		p("## Figures\n")
		for _, img := range s.Images {
			p("![%s](%s)\n", img, img)
		}
	}
	return b.Bytes()
}

// auditLine opens an audit's report: its result is the map, which it
// links; this report holds the runs' numbers.
func auditLine(s *verdict.Summary) string {
	var links []string
	for i := range s.Audits {
		f := auditFile(s, i)
		links = append(links, fmt.Sprintf("[%s](%s) (%s)", f, f, strings.TrimSuffix(auditVerdict(&s.Audits[i]), ".")))
	}
	return fmt.Sprintf("A blast-radius audit: its result is the map of endpoints × faults in %s; this report holds the numbers of its runs (no predictions P1–P4 are judged).",
		strings.Join(links, ", "))
}

// writeVerdictsMD writes the verdicts: their table, the runs left out,
// the repeats they needed and each verdict's numbers.
func writeVerdictsMD(b *bytes.Buffer, s *verdict.Summary) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("## Verdicts\n")
	p("| prediction | outcome | key number | reason | runs left out |")
	p("|---|---|---|---|---|")
	for _, v := range s.Verdicts {
		p("| %s | **%s** | %s | %s | %s |", v.Name, v.Outcome, mdEscape(keyNumber(v)), mdEscape(v.Reason), orDash(excludedText(v.Excluded)))
	}
	p("")
	writeLeftOutMD(b, s)
	if len(s.RepeatsNeeded) > 0 {
		p("Repeats: auto. Repeats each checked verdict needed to be clear of its threshold (its interval wholly on one side):\n")
		for _, n := range s.RepeatsNeeded {
			if n.Repeats == 0 {
				p("- %s (%s): not clear after %d", n.Verdict, n.Outcome, n.Of)
			} else {
				p("- %s (%s): %d of %d", n.Verdict, n.Outcome, n.Repeats, n.Of)
			}
		}
		p("")
	}
	for _, v := range s.Verdicts {
		p("### %s — %s\n", v.Name, v.Outcome)
		p("%s.\n", v.Claim)
		p("| number | measured | unit | threshold |")
		p("|---|---|---|---|")
		for _, m := range v.Measures {
			p("%s", measureLine(m))
		}
		p("\nRuns: %s\n", strings.Join(orNone(v.Runs), ", "))
		if len(v.Excluded) > 0 {
			p("Runs left out — %s (the reasons are under Runs: validity and noise floor).\n", excludedText(v.Excluded))
		}
	}
}

func writeCellsMD(b *bytes.Buffer, s *verdict.Summary) {
	v, c := s.Expectations.Victim, s.Expectations.Culprit
	fmt.Fprintf(b, "## Fault phase by condition and mode\n\n")
	fmt.Fprintf(b, "| condition | mode | runs | /%s p99 ms | /%s error rate | /%s p99 ms | /%s error rate | /%s ok req/s | time to degrade (T) |\n", v, v, c, c, c)
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range s.Cells {
		runs := fmt.Sprint(len(x.Runs))
		if len(x.Excluded) > 0 {
			runs += fmt.Sprintf(" (+%d left out)", len(x.Excluded))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Condition, x.Mode, runs,
			measure.FormatEstimate(x.VictimP99Ms), measure.FormatEstimate(x.VictimErrorRate), measure.FormatEstimate(x.CulpritP99Ms),
			measure.FormatEstimate(x.CulpritErrorRate), measure.FormatEstimate(x.CulpritOKRate), measure.FormatEstimate(x.TimeToDegradeT))
	}
	fmt.Fprintln(b)
}

func writeLittleMD(b *bytes.Buffer, s *verdict.Summary) {
	fmt.Fprintf(b, "## Little's law: predicted vs measured\n\n")
	fmt.Fprintf(b, "In-flight demand = arrival rate × holding time (permits) over the fault phase; time to exhaustion from fault start (s; exact where the service exports when its last free permit was taken, else at the metrics sampling resolution).\n\n")
	fmt.Fprintf(b, "| condition | mode | pool | limit | demand predicted | demand measured | ratio | exhaustion predicted s | exhaustion measured s | ratio |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.Little {
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", r.Condition, r.Mode, r.Pool, r.Limit,
			measure.FormatEstimate(r.PredictedDemand), measure.FormatEstimate(r.MeasuredDemand), measure.FormatEstimate(r.DemandRatio),
			measure.FormatEstimate(r.PredictedExhaustionS), measure.FormatEstimate(r.MeasuredExhaustionS), measure.FormatEstimate(r.ExhaustionRatio))
	}
	fmt.Fprintln(b)
}

// writeRetriesMD writes, for the runs whose clients retry, offered and
// delivered load and the amplification against 1 + r + … (nothing when no
// client retries).
func writeRetriesMD(b *bytes.Buffer, s *verdict.Summary) {
	head := false
	for _, r := range s.Runs {
		for _, e := range r.Endpoints {
			st := e.Retry
			if st == nil {
				continue
			}
			if !head {
				fmt.Fprintf(b, "## Retrying clients: offered and delivered load\n\n")
				fmt.Fprintf(b, "Fault phase. Offered = requests (first attempts) per second, delivered = every attempt per second; r = share of attempts with a retryable outcome; predicted = 1 + r + … + r^(n−1) for n attempts at most; refused = requests whose retry the budget or a Retry-After beyond the deadline stopped.\n\n")
				fmt.Fprintf(b, "| run | endpoint | n | offered /s | delivered /s | amplification | r | predicted | refused |\n|---|---|---|---|---|---|---|---|---|\n")
				head = true
			}
			fmt.Fprintf(b, "| %s | /%s | %d | %s | %s | %s | %s | %s | %s |\n", r.ID, e.Endpoint, st.MaxAttempts, measure.FmtNum(st.OfferedPerS),
				measure.FmtNum(st.DeliveredPerS), measure.FmtNum(st.Amplification), pct(st.RetryableShare), measure.FmtNum(st.Predicted), pct(st.RefusedShare))
		}
	}
	if head {
		fmt.Fprintln(b)
	}
}

// writeSizingMD writes the sizing curve as a table (nothing without one).
func writeSizingMD(b *bytes.Buffer, s *verdict.Summary) {
	sc := s.Sizing
	if sc == nil || len(sc.Points) == 0 {
		return
	}
	ex := s.Expectations
	fmt.Fprintf(b, "## Sizing: %s\n\n", sc.Field)
	good := "none of the swept sizes"
	if !math.IsNaN(float64(sc.GoodLo)) {
		good = fmt.Sprintf("%s–%s", measure.FmtNum(sc.GoodLo), measure.FmtNum(sc.GoodHi))
	}
	fmt.Fprintf(b, "Little's law: /%s needs %s permits in %s, so the size it recommends is %d; the measured good region is %s.\n\n",
		ex.Culprit, measure.FmtNum(sc.LittleDemand), ex.Healthy, sc.LittleSize, good)
	fmt.Fprintf(b, "| size | /%s rejected, %s | /%s ok req/s, %s | /%s rejected, %s | /%s ok req/s, %s | /%s p99 rise (T), %s | /%s error rate, %s | region |\n",
		ex.Culprit, ex.Healthy, ex.Culprit, ex.Healthy, ex.Culprit, ex.Busy, ex.Culprit, ex.Busy, ex.Victim, ex.Slow, ex.Victim, ex.Slow)
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|\n")
	for _, p := range sc.Points {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", p.Value, measure.FormatEstimate(p.HealthyRejected), measure.FormatEstimate(p.HealthyOKPerS),
			measure.FormatEstimate(p.BusyRejected), measure.FormatEstimate(p.BusyOKPerS), measure.FormatEstimate(p.SlowVictimP99RiseT), measure.FormatEstimate(p.SlowVictimErrorRate), p.Region(ex))
	}
	fmt.Fprintln(b)
}

// writePhasesMD writes each endpoint's p50 and p99 per phase and cell.
func writePhasesMD(b *bytes.Buffer, s *verdict.Summary) {
	var phases []string
	seen := map[string]bool{}
	for _, c := range s.Cells {
		for _, p := range c.Phases {
			if !seen[p.Phase] {
				seen[p.Phase] = true
				phases = append(phases, p.Phase)
			}
		}
	}
	if len(phases) == 0 {
		return
	}
	fmt.Fprintf(b, "## Latency by endpoint and phase\n\np50 / p99 in ms, means over the cell's runs; errors in the fault phase.\n\n")
	fmt.Fprintf(b, "| condition | mode | endpoint | %s | fault errors |\n", strings.Join(phases, " | "))
	fmt.Fprintf(b, "|---|---|---|%s---|\n", strings.Repeat("---|", len(phases)))
	for _, c := range s.Cells {
		var eps []string
		by := map[[2]string]verdict.CellPhase{}
		for _, p := range c.Phases {
			if _, ok := by[[2]string{p.Endpoint, ""}]; !ok {
				eps = append(eps, p.Endpoint)
				by[[2]string{p.Endpoint, ""}] = p
			}
			by[[2]string{p.Endpoint, p.Phase}] = p
		}
		for _, ep := range eps {
			cols := make([]string, len(phases))
			for i, ph := range phases {
				if p, ok := by[[2]string{ep, ph}]; ok {
					cols[i] = measure.FormatEstimate(p.P50Ms) + " / " + measure.FormatEstimate(p.P99Ms)
				}
			}
			fmt.Fprintf(b, "| %s | %s | /%s | %s | %s |\n", c.Condition, c.Mode, ep, strings.Join(cols, " | "),
				measure.FormatEstimate(by[[2]string{ep, rundata.PhaseFault}].ErrorRate))
		}
	}
	fmt.Fprintln(b)
}

func writeRunsMD(b *bytes.Buffer, s *verdict.Summary) {
	fmt.Fprintf(b, "## Runs: validity and noise floor\n\n")
	fmt.Fprintf(b, "A run is valid when the load generator kept the open model (rate, schedule lag), the canary (a request that does no work) stayed fast, and every endpoint answered in the baseline. The noise floor is the largest value over the judged phases; scheduling latency is the Go runtime's p99 over a sampling interval; steal is the CPU time the hypervisor gave to other guests, a machine that is busy without this experiment.\n\n")
	fmt.Fprintf(b, "| run | status | valid | why not / run again | canary p99 ms (limit) | lag p99 ms | service sched p99 ms | load generator sched p99 ms | machine CPU busy | of it steal |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.Runs {
		n := r.Noise
		fmt.Fprintf(b, "| %s | %s | %t | %s | %s (%s) | %s | %s | %s | %s | %s |\n", r.ID, statusText(r.Status), r.Valid, mdEscape(shortWhy(r)),
			measure.FmtNum(n.CanaryP99Ms), measure.FmtNum(n.CanaryLimitMs), measure.FmtNum(n.LagP99Ms), measure.FmtNum(n.SchedP99Ms[rundata.ServiceComponent]),
			measure.FmtNum(n.SchedP99Ms[rundata.LoadgenComponent]), pct(n.MachineBusy), pct(n.MachineSteal))
	}
	writeShardsMD(b, s)
	writeReasonsMD(b, s)
	fmt.Fprintf(b, "\n## Runs: degradation and the resource that ran out first\n\n")
	fmt.Fprintf(b, "| run | time to degrade (T) | exhausted first | after fault s | detail | then ran out (s after fault) | limits seen by the proxies |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|\n")
	for _, r := range s.Runs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.ID, degradeText(r),
			r.Exhausted.Label(), r.Exhausted.After(), mdEscape(r.Exhausted.Detail), mdEscape(orDash(r.Exhausted.Then())), orDash(measure.DescribeInferred(r.Inferred)))
	}
	fmt.Fprintf(b, "\nRules, checked from fault start to fault end for every pool, connection pool and dependency; the earliest wins, the rest are ranked after it (* marks a time from the service's own record, exact; else the sample's):\n\n")
	for _, rule := range s.ExhaustionRules {
		fmt.Fprintf(b, "- %s\n", rule)
	}
	fmt.Fprintln(b)
}

// pct renders a share as a percentage, "—" when undefined.
func pct(n measure.Num) string {
	if math.IsNaN(float64(n)) {
		return "—"
	}
	return words.FmtHuman(100*float64(n)) + " %"
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func orNone(v []string) []string {
	if len(v) == 0 {
		return []string{"none"}
	}
	return v
}

// statusText is a run status as a reader should read it: a run found
// "running" in a folder no runner writes any more was cut by a killed
// runner.
func statusText(status string) string {
	if status == rundata.StatusRunning {
		return "interrupted (killed)"
	}
	return status
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeLeftOutMD writes the runs × rules table of the left-out runs
// (nothing when every run is used).
func writeLeftOutMD(b *bytes.Buffer, s *verdict.Summary) {
	t := leftOutTable(s)
	if len(t.Rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Runs left out\n\n")
	fmt.Fprintf(b, "Each rule a run broke, as its worst value against the limit (%s: kept); every reason is under Runs: validity and noise floor.\n\n", passMark)
	mdRow(b, t.head())
	fmt.Fprintf(b, "|%s\n", strings.Repeat("---|", len(t.head())))
	for _, r := range t.Rows {
		mdRow(b, r.cells())
	}
	if t.Others > 0 {
		mdRow(b, t.othersRow())
	}
	fmt.Fprintln(b)
}

// writeReasonsMD lists, once per run, every reason it was left out or run
// again.
func writeReasonsMD(b *bytes.Buffer, s *verdict.Summary) {
	head := false
	for _, r := range s.Runs {
		rs := runReasons(r)
		if len(rs) == 0 {
			continue
		}
		if !head {
			fmt.Fprintf(b, "\nWhy each run was left out or run again:\n\n")
			head = true
		}
		fmt.Fprintf(b, "- %s: %s\n", r.ID, strings.Join(rs, "; "))
	}
}

func mdRow(b *bytes.Buffer, cells []string) {
	for i := range cells {
		cells[i] = mdEscape(cells[i])
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

// writeShardsMD says, when shards sent the load, how many and how well
// their clocks and starts were aligned (nothing otherwise).
func writeShardsMD(b *bytes.Buffer, s *verdict.Summary) {
	var n, failed int
	var offErr, late float64
	for _, r := range s.Runs {
		if sh := r.Shards; sh != nil {
			n = max(n, sh.Count)
			offErr = max(offErr, float64(sh.OffsetErrorMs))
			late = max(late, float64(sh.LateMs))
			failed += sh.Failed
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "\nThe load came from %d shards per run, released together and merged result by result: their clocks were known within ±%s ms of the runner's, and the latest started %s ms after t0 (a run is INVALID past the lag limit).", n,
		measure.FmtNum(measure.Num(offErr)), measure.FmtNum(measure.Num(late)))
	if failed > 0 {
		fmt.Fprintf(b, " %d shard streams failed (their runs are INVALID).", failed)
	}
	fmt.Fprintln(b)
}

// rolesLine names the victim and the culprit as the runs know them:
// "Victim endpoint /b (dependency B, healthy), culprit /a (dependency A,
// faulted)." — or, when both call the same dependency, says so.
func rolesLine(s *verdict.Summary) string {
	ex := s.Expectations
	vd, cd := measure.DependencyOf(s.Runs, ex.Victim), measure.DependencyOf(s.Runs, ex.Culprit)
	switch {
	case vd != "" && vd == cd:
		return fmt.Sprintf("Victim endpoint /%s, culprit /%s: both call %s.", ex.Victim, ex.Culprit, vd)
	case vd == "" || cd == "":
		return fmt.Sprintf("Victim endpoint /%s (healthy dependency), culprit /%s (faulted dependency).", ex.Victim, ex.Culprit)
	}
	return fmt.Sprintf("Victim endpoint /%s (%s, healthy), culprit /%s (%s, faulted).", ex.Victim, vd, ex.Culprit, cd)
}

// auditFile is the i-th audit map's audit.md, relative to the report
// (AuditDir).
func auditFile(s *verdict.Summary, i int) string {
	if len(s.Audits) == 1 {
		return AuditMarkdownFile
	}
	return "audit-" + s.Audits[i].Mode + "/" + AuditMarkdownFile
}
