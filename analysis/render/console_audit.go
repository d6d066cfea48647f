package render

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// PrintAudit writes a blast-radius audit's map to w as a compact table
// wrapped to DefaultConsoleWidth: an endpoint a row, a fault a column,
// each cell its class and, where it degraded, its p99 rise and error
// rate; then the graph's differences, the aborted cells, the findings and
// the critical violations.
func PrintAudit(w io.Writer, m *verdict.AuditMap) error {
	return printAudit(w, m, DefaultConsoleWidth)
}

// consoleCell is a cell in the console's table: "ok" for ISOLATED, "calls"
// for EXPECTED, the class otherwise, with the numbers of a degraded cell
// and a "✗" on a critical violation.
func consoleCell(c verdict.AuditCell, critical bool) string {
	var s string
	switch c.Class {
	case verdict.CellIsolated:
		s = "ok"
	case verdict.CellExpected:
		s = "calls"
	case verdict.CellSkipped:
		s = "skipped"
	default:
		s = orDash(c.Class)
	}
	if (c.Class == verdict.CellDegraded || c.Degraded) && cellNumbers(c) {
		s += " " + riseText(c.P99RiseT) + " " + errText(c.ErrorRate)
	}
	if disagreement(c) != "" {
		s += fmt.Sprintf(" %d/%d", c.DegradedRuns, c.Runs)
	}
	if violates(critical, c) {
		s += " ✗"
	}
	return s
}

func printAudit(w io.Writer, m *verdict.AuditMap, width int) error {
	if m == nil {
		_, err := io.WriteString(w, "no audit map\n")
		return err
	}
	var b strings.Builder
	b.WriteString(wrapIndent(fmt.Sprintf("audit %s (mode %s): %s", m.Experiment, orDash(m.Mode), auditVerdict(m)), width, "  "))
	if len(m.Endpoints) > 0 && len(m.Columns) > 0 {
		head := []string{"ENDPOINT"}
		for _, c := range m.Columns {
			head = append(head, columnLabel(c))
		}
		rows := [][]string{head}
		for i, ep := range m.Endpoints {
			crit := isCritical(m.Config, ep)
			label := endpointLabel(ep)
			if crit {
				label += " *"
			}
			row := []string{label}
			for j := range m.Columns {
				if c, ok := auditCell(m, i, j); ok {
					row = append(row, consoleCell(c, crit))
				} else {
					row = append(row, "—")
				}
			}
			rows = append(rows, row)
		}
		for k, cols := range consoleChunks(rows, width-2) {
			if k > 0 {
				b.WriteString("\n")
			}
			part := make([][]string, len(rows))
			for i, r := range rows {
				part[i] = append([]string{r[0]}, r[cols[0]:cols[1]]...)
			}
			b.WriteString(wrapTable(part, width, "  "))
		}
		b.WriteString(block("  ", "  ", "ok = ISOLATED, calls = EXPECTED (the endpoint calls the dependency); numbers: p99 rise in T, fault-phase error rate, k/n runs degraded where they disagree; * critical endpoint, ✗ --check fails", width))
	} else {
		b.WriteString("  the map has no cells\n")
	}
	list := func(head string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString(head + ":\n")
		for _, it := range items {
			b.WriteString(block("  - ", "    ", it, width))
		}
	}
	list("call graph, measured against declared", m.GraphDiffs)
	groups, skipped := auditAbortedCells(m)
	var aborted []string
	for _, g := range groups {
		aborted = append(aborted, fmt.Sprintf("%s: %s (%s)", g.Column, g.Trigger, strings.Join(g.Endpoints, ", ")))
	}
	if skipped > 0 {
		aborted = append(aborted, skippedText(skipped))
	}
	list("aborted", aborted)
	var findings []string
	for _, f := range m.Findings {
		line := findingText(f)
		if f.Resource != "" {
			line += "; ran out first: " + f.Resource
		}
		findings = append(findings, line)
	}
	if len(findings) == 0 {
		b.WriteString("findings: none\n")
	}
	list("findings", findings)
	if len(m.Violations) == 0 {
		b.WriteString("critical violations: none\n")
	}
	list("critical violations (--check fails)", m.Violations)
	// Every string of the map may come from a spec or a service: none may
	// move the terminal's cursor.
	_, err := io.WriteString(w, strings.Map(func(r rune) rune {
		if r != '\n' && unicode.IsControl(r) {
			return ' '
		}
		return r
	}, b.String()))
	return err
}

// consoleChunks splits the columns of rows (after the first, the
// endpoints, which every part repeats) into runs [from, to) that fit width
// side by side, each column at its widest cell up to 24 runes, so that a
// map of many faults prints as several tables rather than one cut to
// pieces.
func consoleChunks(rows [][]string, width int) [][2]int {
	const gap, colMax, firstMax = 2, 24, 32
	n := len(rows[0])
	ws := make([]int, n)
	for _, r := range rows {
		for k, c := range r {
			ws[k] = max(ws[k], utf8.RuneCountInString(c))
		}
	}
	first := min(ws[0], firstMax)
	var chunks [][2]int
	from, used := 1, first
	for k := 1; k < n; k++ {
		w := gap + min(ws[k], colMax)
		if k > from && used+w > width {
			chunks = append(chunks, [2]int{from, k})
			from, used = k, first
		}
		used += w
	}
	return append(chunks, [2]int{from, n})
}

// block wraps text to width, its first line prefixed by first, the others
// by rest.
func block(first, rest, text string, width int) string {
	var b strings.Builder
	for i, l := range wrap(text, width-max(utf8.RuneCountInString(first), utf8.RuneCountInString(rest))) {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(rest)
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
