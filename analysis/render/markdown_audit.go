package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// mdText makes a user's string safe in a Markdown table cell or list item:
// pipes escaped, no raw HTML (a "<" is escaped), one line.
var mdText = strings.NewReplacer("|", `\|`, "<", `\<`, "\r\n", " ", "\n", " ", "\r", " ").Replace

// renderAuditMarkdown writes audit.md. It uses only the map, so it is as
// deterministic as the map.
func renderAuditMarkdown(m *verdict.AuditMap) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("# bulkheadlab blast-radius audit: %s\n", mdText(m.Experiment))
	p("**%s**\n", mdText(auditVerdict(m)))
	p("Mode %s; T = %s ms; %s × %s, after a control run without a fault. "+
		"Each cell is an endpoint (row) while one dependency has one fault (column): its class, then its fault-phase p99 rise in T (over the lower of its baseline and the control run's p99) and its fault-phase error rate (means over the cell's valid runs; — undefined), and how many runs degraded where they disagree.\n",
		mdText(orDash(m.Mode)), measure.FmtNum(m.TimeoutMs), countNoun(len(m.Endpoints), "endpoint"), countNoun(len(m.Columns), "fault"))
	p("ISOLATED: does not call the dependency and stayed at its baseline. DEGRADED: does not call it, yet degraded (a finding). " +
		"EXPECTED: calls it (degraded or not). INVALID: no valid run. ABORTED: a stop condition removed the fault. SKIPPED: not run. " +
		"A critical endpoint's cell that fails --check is marked ✗.\n")
	p("![blast-radius map](%s)\n", AuditMapFile)
	writeAuditTableMD(&b, m)

	p("## Findings\n")
	if len(m.Findings) == 0 {
		p("None: no endpoint degraded from a dependency it does not call.\n")
	}
	for _, f := range m.Findings {
		line := "- " + mdText(findingText(f))
		if f.Resource != "" {
			line += " — resource: " + mdText(f.Resource)
		}
		if f.Condition != "" {
			line += " (condition " + mdText(f.Condition) + ")"
		}
		p("%s", line)
	}
	if len(m.Findings) > 0 {
		p("")
	}

	p("## Critical violations\n")
	if len(m.Violations) == 0 {
		p("None.\n")
	} else {
		p("Cells of critical endpoints not ISOLATED from a dependency they do not call (--check fails on each):\n")
		for _, v := range m.Violations {
			p("- %s", mdText(v))
		}
		p("")
	}

	p("## Control run\n")
	if len(m.Control) == 0 {
		p("No control run.\n")
	} else {
		p("Each endpoint without a fault: the p99 a cell's rise is also measured from, and the noise the thresholds are raised by (how far the p99 rose between the control's phases or differed between its runs, in T; its error rate).\n")
		p("| endpoint | p99 ms | p99 rise (T) | noise (T) | error rate |")
		p("|---|---|---|---|---|")
		for _, c := range m.Control {
			p("| %s | %s | %s | %s | %s |", mdText(endpointLabel(c.Endpoint)), measure.FmtNum(c.P99Ms), riseText(c.P99RiseT), noiseText(c.NoiseT), pct(c.ErrorRate))
		}
		p("")
	}

	writeAuditGraphMD(&b, m)

	p("## Thresholds\n")
	for _, l := range auditThresholds(m) {
		p("- %s", mdText(l))
	}
	p("")

	p("## Aborted cells\n")
	groups, skipped := auditAbortedCells(m)
	if len(groups) == 0 {
		p("None.")
	}
	for _, g := range groups {
		p("- %s: %s — %s", mdText(g.Column), mdText(g.Trigger), mdText(strings.Join(g.Endpoints, ", ")))
	}
	if skipped > 0 {
		p("\n%s.", skippedText(skipped))
	}
	p("")

	writeAuditDetailsMD(&b, m)
	return b.Bytes()
}

// writeAuditTableMD writes the map: endpoints × columns.
func writeAuditTableMD(b *bytes.Buffer, m *verdict.AuditMap) {
	if len(m.Endpoints) == 0 || len(m.Columns) == 0 {
		fmt.Fprintf(b, "The map has no cells.\n\n")
		return
	}
	var head strings.Builder
	head.WriteString("| endpoint |")
	for _, c := range m.Columns {
		head.WriteString(" " + mdText(columnLabel(c)) + " |")
	}
	fmt.Fprintf(b, "%s\n|---|%s\n", head.String(), strings.Repeat("---|", len(m.Columns)))
	for i, ep := range m.Endpoints {
		crit := isCritical(m.Config, ep)
		var row strings.Builder
		row.WriteString("| " + mdText(endpointLabel(ep)))
		if crit {
			row.WriteString(" (critical)")
		}
		row.WriteString(" |")
		for j := range m.Columns {
			c, ok := auditCell(m, i, j)
			s := "—"
			if ok {
				s = mdText(cellSummary(c))
				if c.Class == verdict.CellDegraded {
					s = "**" + s + "**"
				}
				if violates(crit, c) {
					s += " ✗"
				}
			}
			row.WriteString(" " + s + " |")
		}
		fmt.Fprintln(b, row.String())
	}
	fmt.Fprintln(b)
}

// writeAuditGraphMD writes the call graph, measured against declared.
func writeAuditGraphMD(b *bytes.Buffer, m *verdict.AuditMap) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("## Call graph: measured and declared\n")
	if g := m.CallGraph; g != nil {
		p("Measured by the calibration: %d requests to each endpoint alone at %s/s, the calls each dependency's proxy saw per request. The map's Calls follow the measured graph.\n",
			g.Requests, words.FmtHuman(g.Rate))
	} else {
		p("No calibration: the map's Calls follow the declared graph.\n")
	}
	p("| endpoint | measured | declared (audit.calls, else its dependency; — none) | |")
	p("|---|---|---|---|")
	for _, r := range auditGraph(m) {
		note := ""
		if r.Differs {
			note = "differs"
		}
		if r.Failed != "" {
			note = strings.TrimPrefix(note+"; calibration failed: "+r.Failed, "; ")
		}
		p("| %s | %s | %s | %s |", mdText(r.Endpoint), mdText(r.Measured), mdText(r.Declared), mdText(note))
	}
	p("")
	if len(m.GraphDiffs) > 0 {
		p("Differences:\n")
		for _, d := range m.GraphDiffs {
			p("- %s", mdText(d))
		}
		p("")
	}
}

// writeAuditDetailsMD writes every cell's numbers.
func writeAuditDetailsMD(b *bytes.Buffer, m *verdict.AuditMap) {
	ds := auditDetails(m)
	if len(ds) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("## Cells\n")
	p("p99 in the runs' baseline and fault phases (ms), its rise in T (over the lower of the baseline and the control run's p99), the fault phase's error rate and its rise over the baseline's (points), the time from fault start to the first degraded window (s), what the failures were as the service's answers told, and what the exhaustion ranking names first.\n")
	p("| endpoint | fault | class | calls it | runs | baseline p99 ms | fault p99 ms | p99 rise | error rate | error rise (points) | time to degrade s | failures | resource | detail |")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, d := range ds {
		class := d.Class
		if d.Violation {
			class += " ✗"
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", mdText(d.Endpoint), mdText(d.Column), mdText(class), d.Calls, d.Runs,
			d.BaseP99, d.FaultP99, d.Rise, d.Errors, d.ErrPoints, d.Degrade, mdText(d.Failures), mdText(d.Resource), mdText(d.Detail))
	}
	p("")
}
