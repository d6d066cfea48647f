package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Names of a blast-radius audit's outputs.
const (
	AuditJSONFile     = "audit.json"
	AuditMarkdownFile = "audit.md"
	AuditHTMLFile     = "audit.html"
	AuditMapFile      = "audit-map.png"
)

// WriteAudit writes a blast-radius audit's map into dir (created if
// missing), each file atomically: audit.json (the map), audit.md and
// audit.html (the map as a table, the findings, the violations, the
// control run, the call graph measured against the declared one, the
// thresholds and the aborted cells) and audit-map.png (the heatmap). The
// text outputs render the map as audit.json states it (numbers to six
// significant digits), so a reader of the JSON gets the report's strings.
func WriteAudit(dir string, m *verdict.AuditMap) error { return writeAuditFiles(dir, m, true) }

// writeAuditFiles is WriteAudit, the heatmap drawn only with images.
func writeAuditFiles(dir string, m *verdict.AuditMap, images bool) error {
	if m == nil {
		return errors.New("analysis: write audit: no map")
	}
	b, err := MarshalAudit(m)
	if err != nil {
		return err
	}
	var canon verdict.AuditMap
	if err := json.Unmarshal(b, &canon); err != nil {
		return fmt.Errorf("analysis: decode audit: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("analysis: audit folder: %w", err)
	}
	if images {
		if err := savePNG(filepath.Join(dir, AuditMapFile), newAuditFig(&canon)); err != nil {
			return err
		}
	}
	files := []struct {
		name string
		data []byte
	}{{AuditJSONFile, b}, {AuditMarkdownFile, renderAuditMarkdown(&canon)}, {AuditHTMLFile, renderAuditHTML(&canon)}}
	for _, f := range files {
		if err := WriteFileAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
	}
	return nil
}

// MarshalAudit encodes m as indented JSON with a final newline; undefined
// numbers (NaN) are null.
func MarshalAudit(m *verdict.AuditMap) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("analysis: encode audit: %w", err)
	}
	return buf.Bytes(), nil
}

// auditCell is m's cell of endpoint i under column j, ok false when the
// map has none there (a map cut short).
func auditCell(m *verdict.AuditMap, i, j int) (verdict.AuditCell, bool) {
	if i < 0 || i >= len(m.Cells) || j < 0 || j >= len(m.Cells[i]) {
		return verdict.AuditCell{}, false
	}
	return m.Cells[i][j], true
}

// endpointLabel is an endpoint as the reports name it: "/name".
func endpointLabel(ep string) string { return "/" + strings.TrimPrefix(ep, "/") }

// columnLabel is a column as the reports name it: "PAY slow".
func columnLabel(c verdict.AuditColumn) string {
	switch {
	case c.Dependency == "" && c.Fault == "":
		return c.Condition
	case c.Dependency == "":
		return c.Fault
	case c.Fault == "":
		return c.Target()
	}
	return c.Target() + " " + c.Fault
}

// isCritical is whether ep is one of cfg's critical endpoints (written
// with or without its slash).
func isCritical(cfg rundata.Audit, ep string) bool {
	ep = strings.TrimPrefix(ep, "/")
	return slices.ContainsFunc(cfg.Critical, func(c string) bool { return strings.TrimPrefix(c, "/") == ep })
}

// violates is whether a cell of a critical endpoint is one --check fails
// on: not ISOLATED from a dependency the endpoint does not call.
func violates(critical bool, c verdict.AuditCell) bool {
	if !critical || c.Calls {
		return false
	}
	switch c.Class {
	case verdict.CellDegraded, verdict.CellInvalid, verdict.CellAborted, verdict.CellSkipped:
		return true
	}
	return false
}

// riseText is a p99 rise in T with its sign: "+0.84T", "—" undefined.
func riseText(n measure.Num) string {
	v := float64(n)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v > 0:
		return "+" + words.Fmt3(v) + "T"
	}
	return words.Fmt3(v) + "T"
}

// errText is an error rate as a compact percentage: "31%", "—" undefined.
func errText(n measure.Num) string {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return words.FmtHuman(100*v) + "%"
}

// cellNumbers is whether a cell has any number to show.
func cellNumbers(c verdict.AuditCell) bool {
	return !math.IsNaN(float64(c.P99RiseT)) || !math.IsNaN(float64(c.ErrorRate))
}

// cellSummary is a cell's class and key numbers, "DEGRADED +0.84T 31%",
// and how many of its runs degraded when they disagree ("DEGRADED +0.3T
// 12% (1 of 3 runs degraded)"); the class alone when it has no numbers.
func cellSummary(c verdict.AuditCell) string {
	class := orDash(c.Class)
	if c.Class == verdict.CellExpected && c.Degraded {
		class += " (degraded)"
	}
	if !cellNumbers(c) {
		return class
	}
	s := class + " " + riseText(c.P99RiseT) + " " + errText(c.ErrorRate)
	if d := disagreement(c); d != "" {
		s += " (" + d + ")"
	}
	return s
}

// disagreement says how many of a cell's runs degraded when they do not
// all agree, "2 of 3 runs degraded"; empty when they do.
func disagreement(c verdict.AuditCell) string {
	if c.Runs < 2 || c.DegradedRuns <= 0 || c.DegradedRuns >= c.Runs {
		return ""
	}
	return fmt.Sprintf("%d of %d runs degraded", c.DegradedRuns, c.Runs)
}

// countNoun is n and noun, with an s unless n is 1.
func countNoun(n int, noun string) string { return fmt.Sprintf("%d %s%s", n, noun, plural(n)) }

// auditVerdict is the audit's one line: its findings and critical
// violations.
func auditVerdict(m *verdict.AuditMap) string {
	s := countNoun(len(m.Findings), "finding") + ", " + countNoun(len(m.Violations), "critical violation")
	switch {
	case len(m.Violations) > 0:
		s += ": a critical endpoint is not isolated from a dependency it does not call (--check fails)"
	case len(m.Findings) > 0:
		s += ": endpoints degraded by dependencies they do not call"
	default:
		s += ": every endpoint stayed at its baseline under the faults of dependencies it does not call"
	}
	return s + "."
}

// findingText is a finding's line: its summary, else one made of its
// fields.
func findingText(f verdict.AuditFinding) string {
	if f.Summary != "" {
		return f.Summary
	}
	return fmt.Sprintf("%s degraded under %s %s", endpointLabel(f.Endpoint), verdict.AuditColumn{Dependency: f.Dependency, Class: f.Class}.Target(), f.Fault)
}

// auditConfig is m's configuration with the defaults of its zero fields,
// leaving m's own untouched (WithDefaults writes into the Abort slice).
func auditConfig(m *verdict.AuditMap) rundata.Audit {
	cfg := m.Config
	cfg.Abort = slices.Clone(cfg.Abort)
	return cfg.WithDefaults()
}

// auditThresholds are the lines of the thresholds and settings the audit
// used.
func auditThresholds(m *verdict.AuditMap) []string {
	cfg := auditConfig(m)
	lines := []string{
		fmt.Sprintf("T = %s ms.", measure.FmtNum(m.TimeoutMs)),
		fmt.Sprintf("A cell is degraded when the endpoint's fault-phase p99 rose at least %s T over the lower of its run's baseline p99 and the control run's fault-phase p99, or its fault-phase error rate reached %s, each beyond the control run's noise for the same endpoint (see Control run).",
			words.FmtHuman(cfg.DegradedP99RiseT), words.FmtHuman(100*cfg.DegradedErrorRate)+" %"),
	}
	switch m.Arrivals {
	case "poisson":
		lines = append(lines, "Arrivals: Poisson (seeded exponential gaps): streams keep no phase between them that could hide a coupling.")
	case "constant":
		lines = append(lines, "Arrivals: constant (evenly spaced): two streams sharing a pool without a queue can keep a phase in which a coupling never shows; Poisson arrivals cannot.")
	}
	var faults []string
	for _, f := range cfg.Faults {
		switch f {
		case rundata.AuditSlow:
			faults = append(faults, fmt.Sprintf("slow (a delay of %s T)", words.FmtHuman(cfg.SlowT)))
		case rundata.AuditLadder:
			var steps []string
			for _, l := range cfg.Ladder {
				steps = append(steps, words.FmtHuman(l)+" T")
			}
			faults = append(faults, "ladder ("+orDash(strings.Join(steps, ", "))+")")
		default:
			faults = append(faults, f)
		}
	}
	lines = append(lines, "Faults, each dependency in turn: "+strings.Join(faults, ", ")+".")
	crit := "none"
	if len(cfg.Critical) > 0 {
		var eps []string
		for _, c := range cfg.Critical {
			eps = append(eps, endpointLabel(c))
		}
		crit = strings.Join(eps, ", ")
	}
	lines = append(lines, "Critical endpoints (must stay ISOLATED from every dependency they do not call): "+crit+".")
	lines = append(lines, fmt.Sprintf("Calibration: %d requests to each endpoint alone at %s/s; a call graph edge is at least %s calls per request.",
		cfg.Calibration.Requests, words.FmtHuman(cfg.Calibration.Rate), words.FmtHuman(rundata.MinCallsPerRequest)))
	if len(cfg.Abort) == 0 {
		lines = append(lines, "Stop conditions: none.")
	} else {
		var rules []string
		for _, r := range cfg.Abort {
			rules = append(rules, abortRuleText(r))
		}
		lines = append(lines, "Stop conditions (any of them removes the fault at once): "+strings.Join(rules, "; ")+".")
	}
	lines = append(lines, "After an aborted cell: "+cfg.OnAbort+".")
	return lines
}

// abortRuleText is a stop condition as a sentence's part, e.g. "/checkout
// error rate ≥ 50 % for 500ms".
func abortRuleText(r rundata.AbortRule) string {
	ep := "each endpoint's"
	if r.Endpoint != "" && r.Endpoint != "*" {
		ep = endpointLabel(r.Endpoint)
	}
	var parts []string
	if r.ErrorRate > 0 {
		parts = append(parts, fmt.Sprintf("%s error rate ≥ %s %%", ep, words.FmtHuman(100*r.ErrorRate)))
	}
	if r.P99 > 0 {
		parts = append(parts, fmt.Sprintf("%s p99 ≥ %s", ep, r.P99))
	}
	if r.Probe != "" {
		parts = append(parts, fmt.Sprintf("probe %s answers no 2xx (asked every %s)", r.Probe, r.ProbeInterval))
	}
	s := strings.Join(parts, " or ")
	if s == "" {
		s = "(empty rule)"
	}
	if r.For > 0 {
		s += " for " + r.For.String()
	}
	return s
}

// abortedGroup is one column's aborted cells sharing a trigger.
type abortedGroup struct {
	Column, Trigger string
	Endpoints       []string
}

// auditAbortedCells groups the aborted cells by column and trigger, in map
// order, and counts the skipped cells.
func auditAbortedCells(m *verdict.AuditMap) (groups []abortedGroup, skipped int) {
	for j, col := range m.Columns {
		idx := map[string]int{}
		for i, ep := range m.Endpoints {
			c, ok := auditCell(m, i, j)
			if !ok {
				continue
			}
			if c.Class == verdict.CellSkipped {
				skipped++
			}
			if c.Class != verdict.CellAborted && c.Aborted == "" {
				continue
			}
			trig := c.Aborted
			if trig == "" {
				trig = "(no trigger recorded)"
			}
			k, seen := idx[trig]
			if !seen {
				k = len(groups)
				idx[trig] = k
				groups = append(groups, abortedGroup{Column: columnLabel(col), Trigger: trig})
			}
			groups[k].Endpoints = append(groups[k].Endpoints, endpointLabel(ep))
		}
	}
	return groups, skipped
}

// graphRow is one endpoint of the call graph table.
type graphRow struct {
	Endpoint, Measured, Declared string
	// Differs is whether the measured and the declared dependencies differ
	// (false without a measured graph).
	Differs bool
	Failed  string
}

// auditGraph is the call graph, measured against declared, an endpoint a
// row: the map's endpoints first, then any other the graphs name, sorted.
func auditGraph(m *verdict.AuditMap) []graphRow {
	eps := slices.Clone(m.Endpoints)
	known := map[string]bool{}
	for _, e := range eps {
		known[e] = true
	}
	var extra []string
	add := func(e string) {
		if !known[e] {
			known[e] = true
			extra = append(extra, e)
		}
	}
	for e := range m.Config.Calls {
		add(e)
	}
	for e := range m.Declared {
		add(e)
	}
	perReq := map[string]map[string]float64{}
	if g := m.CallGraph; g != nil {
		for e := range g.Edges {
			add(e)
		}
		for _, ec := range g.Endpoints {
			add(ec.Endpoint)
			perReq[ec.Endpoint] = ec.Calls
		}
	}
	sort.Strings(extra)
	eps = append(eps, extra...)
	var rows []graphRow
	declared := m.Declared
	if declared == nil { // a map written before it said
		declared = m.Config.Calls
	}
	for _, e := range eps {
		decl, isDeclared := declared[e]
		decl = slices.Sorted(slices.Values(decl))
		row := graphRow{Endpoint: endpointLabel(e), Declared: orNoneText(decl)}
		if !isDeclared {
			row.Declared = "—"
		}
		if g := m.CallGraph; g != nil {
			meas := slices.Sorted(slices.Values(g.Edges[e]))
			var parts []string
			for _, d := range meas {
				if n, ok := perReq[e][d]; ok {
					parts = append(parts, fmt.Sprintf("%s (%s/req)", d, words.Fmt3(n)))
				} else {
					parts = append(parts, d)
				}
			}
			row.Measured = orNoneText(parts)
			row.Differs = isDeclared && !slices.Equal(slices.Compact(meas), slices.Compact(decl))
			row.Failed = g.Failed[e]
		} else {
			row.Measured = "—"
		}
		rows = append(rows, row)
	}
	return rows
}

func orNoneText(v []string) string {
	if len(v) == 0 {
		return "none"
	}
	return strings.Join(v, ", ")
}

// auditDetail is one cell of the cell-by-cell table.
type auditDetail struct {
	Endpoint, Column, Class, Calls, Runs                string
	BaseP99, FaultP99, Rise, Errors, ErrPoints, Degrade string
	Failures, Resource, Detail                          string
	Violation                                           bool
}

// auditDetails are every cell's numbers, row by row.
func auditDetails(m *verdict.AuditMap) []auditDetail {
	var out []auditDetail
	for i, ep := range m.Endpoints {
		crit := isCritical(m.Config, ep)
		for j, col := range m.Columns {
			c, ok := auditCell(m, i, j)
			if !ok {
				continue
			}
			calls := "no"
			if c.Calls {
				calls = "yes"
			}
			class := orDash(c.Class)
			if c.Degraded && c.Class != verdict.CellDegraded {
				class += " (degraded)"
			}
			detail := c.Detail
			if c.Aborted != "" {
				detail = strings.TrimSpace(detail + " aborted: " + c.Aborted)
			}
			runs := fmt.Sprint(c.Runs)
			if c.Runs > 1 && c.DegradedRuns > 0 {
				runs += fmt.Sprintf(" (%d degraded)", c.DegradedRuns)
			}
			out = append(out, auditDetail{
				Endpoint: endpointLabel(ep), Column: columnLabel(col), Class: class, Calls: calls, Runs: runs, Failures: orDash(c.Failures),
				BaseP99: measure.FmtNum(c.BaselineP99Ms), FaultP99: measure.FmtNum(c.FaultP99Ms), Rise: riseText(c.P99RiseT),
				Errors: pct(c.ErrorRate), ErrPoints: measure.FmtNum(c.ErrorPoints), Degrade: measure.FmtNum(c.TimeToDegradeS),
				Resource: orDash(c.Resource), Detail: orDash(detail), Violation: violates(crit, c),
			})
		}
	}
	return out
}

// skippedText says how many cells the audit skipped.
func skippedText(n int) string {
	if n == 1 {
		return "1 cell was skipped: the audit stopped before it"
	}
	return fmt.Sprintf("%d cells were skipped: the audit stopped before them", n)
}

// noiseText is a control's noise in T: "0.04T", "—" undefined.
func noiseText(n measure.Num) string {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return measure.FmtNum(n) + "T"
}
