package render

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// auditPage is what audit.html shows, every string still raw (the
// template escapes them).
type auditPage struct {
	M          *verdict.AuditMap
	Verdict    string
	Columns    []string
	Rows       []auditPageRow
	Graph      []graphRow
	Thresholds []string
	Aborted    []abortedGroup
	Skipped    string
	Details    []auditDetail
	Image      string
	Style      template.CSS
}

type auditPageRow struct {
	Endpoint string
	Critical bool
	Cells    []auditPageCell
}

type auditPageCell struct {
	// CSS is the cell's class attribute: one of auditCSSClasses' keys.
	CSS, Class, Numbers string
	// Runs says how many runs degraded when they disagree.
	Runs      string
	Violation bool
}

// auditCSSClass is the page's class of a cell (its colour).
func auditCSSClass(c verdict.AuditCell) string {
	switch c.Class {
	case verdict.CellIsolated:
		return "c-isolated"
	case verdict.CellDegraded:
		return "c-degraded"
	case verdict.CellExpected:
		if c.Degraded {
			return "c-expected-deg"
		}
		return "c-expected"
	case verdict.CellInvalid, verdict.CellSkipped:
		return "c-none"
	case verdict.CellAborted:
		return "c-aborted"
	}
	return "c-unknown"
}

// auditStyle is the page's cell colours, the heatmap's.
func auditStyle() template.CSS {
	hex := func(c auditRGB) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }
	var b strings.Builder
	for _, k := range []struct {
		css string
		bg  auditRGB
	}{
		{"c-isolated", auditIsolated}, {"c-degraded", auditDegradedHi}, {"c-expected", auditExpected},
		{"c-expected-deg", auditExpectedDeg}, {"c-none", auditNone}, {"c-aborted", auditAborted}, {"c-unknown", auditNone},
	} {
		fmt.Fprintf(&b, "td.%s{background:%s;color:%s}", k.css, hex(k.bg), hex(textOn(k.bg)))
	}
	return template.CSS(b.String()) // #nosec: built from the fixed palette above
}

func newAuditPage(m *verdict.AuditMap) auditPage {
	pg := auditPage{M: m, Verdict: auditVerdict(m), Graph: auditGraph(m), Thresholds: auditThresholds(m),
		Details: auditDetails(m), Image: AuditMapFile, Style: auditStyle()}
	var skipped int
	pg.Aborted, skipped = auditAbortedCells(m)
	if skipped > 0 {
		pg.Skipped = skippedText(skipped)
	}
	for _, c := range m.Columns {
		pg.Columns = append(pg.Columns, columnLabel(c))
	}
	if len(m.Columns) == 0 {
		return pg
	}
	for i, ep := range m.Endpoints {
		row := auditPageRow{Endpoint: endpointLabel(ep), Critical: isCritical(m.Config, ep)}
		for j := range m.Columns {
			c, ok := auditCell(m, i, j)
			if !ok {
				row.Cells = append(row.Cells, auditPageCell{CSS: "c-unknown", Class: "—"})
				continue
			}
			pc := auditPageCell{CSS: auditCSSClass(c), Class: orDash(c.Class), Violation: violates(row.Critical, c)}
			if c.Class == verdict.CellExpected && c.Degraded {
				pc.Class += " (degraded)"
			}
			if cellNumbers(c) {
				pc.Numbers = riseText(c.P99RiseT) + " " + errText(c.ErrorRate)
				pc.Runs = disagreement(c)
			}
			row.Cells = append(row.Cells, pc)
		}
		pg.Rows = append(pg.Rows, row)
	}
	return pg
}

var auditTmpl = template.Must(template.New("audit").Funcs(template.FuncMap{
	"num":     measure.FmtNum,
	"human":   words.FmtHuman,
	"pct":     pct,
	"rise":    riseText,
	"noise":   noiseText,
	"label":   endpointLabel,
	"finding": findingText,
	"join":    func(v []string) string { return strings.Join(v, ", ") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bulkheadlab blast-radius audit: {{.M.Experiment}}</title>
<style>
body{font-family:sans-serif;max-width:1300px;margin:1.2em auto;padding:0 1em;color:#222}
h1{margin:.2em 0 .3em}h2{margin:.9em 0 .4em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
table.map td.cell{text-align:center;white-space:nowrap}table.map td.violation{outline:3px solid #000;outline-offset:-3px}
.verdict{font-size:1.15em;font-weight:bold}.bad{color:#b00020}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
{{.Style}}
</style></head><body>
<h1>bulkheadlab blast-radius audit: {{.M.Experiment}}</h1>
<p class="verdict{{if .M.Violations}} bad{{end}}">{{.Verdict}}</p>
<p>Mode {{.M.Mode}}; T = {{num .M.TimeoutMs}} ms; {{len .M.Endpoints}} endpoints × {{len .M.Columns}} faults, after a control run without a fault. Each cell is an endpoint (row) while one dependency has one fault (column): its class, then its fault-phase p99 rise in T (over the lower of its baseline and the control run's p99) and its fault-phase error rate (means over the cell's valid runs; — undefined), and how many runs degraded where they disagree.</p>
<p>ISOLATED: does not call the dependency and stayed at its baseline. DEGRADED: does not call it, yet degraded (a finding). EXPECTED: calls it (degraded or not). INVALID: no valid run. ABORTED: a stop condition removed the fault. SKIPPED: not run. A critical endpoint's cell that fails --check is outlined and marked ✗.</p>
<figure><img src="{{.Image}}" alt="blast-radius map"><figcaption>{{.Image}}</figcaption></figure>
{{if .Rows}}<table class="map"><tr><th>endpoint</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Endpoint}}{{if .Critical}} (critical){{end}}</th>{{range .Cells}}<td class="cell {{.CSS}}{{if .Violation}} violation{{end}}"><b>{{.Class}}</b>{{if .Violation}} ✗{{end}}{{with .Numbers}}<br>{{.}}{{end}}{{with .Runs}}<br>{{.}}{{end}}</td>{{end}}</tr>
{{end}}</table>{{else}}<p>The map has no cells.</p>{{end}}
<h2>Findings</h2>
{{if .M.Findings}}<ul>
{{range .M.Findings}}<li>{{finding .}}{{with .Resource}} — resource: <b>{{.}}</b>{{end}}{{with .Condition}} (condition {{.}}){{end}}</li>
{{end}}</ul>{{else}}<p>None: no endpoint degraded from a dependency it does not call.</p>{{end}}
<h2>Critical violations</h2>
{{if .M.Violations}}<p>Cells of critical endpoints not ISOLATED from a dependency they do not call (--check fails on each):</p><ul>
{{range .M.Violations}}<li class="bad">{{.}}</li>
{{end}}</ul>{{else}}<p>None.</p>{{end}}
<h2>Control run</h2>
{{if .M.Control}}<p>Each endpoint without a fault: the p99 a cell's rise is also measured from, and the noise the thresholds are raised by (how far the p99 rose between the control's phases or differed between its runs, in T; its error rate).</p>
<table><tr><th>endpoint</th><th>p99 ms</th><th>p99 rise (T)</th><th>noise (T)</th><th>error rate</th></tr>
{{range .M.Control}}<tr><td>{{label .Endpoint}}</td><td>{{num .P99Ms}}</td><td>{{rise .P99RiseT}}</td><td>{{noise .NoiseT}}</td><td>{{pct .ErrorRate}}</td></tr>
{{end}}</table>{{else}}<p>No control run.</p>{{end}}
<h2>Call graph: measured and declared</h2>
{{with .M.CallGraph}}<p>Measured by the calibration: {{.Requests}} requests to each endpoint alone at {{human .Rate}}/s, the calls each dependency's proxy saw per request. The map's Calls follow the measured graph.</p>{{else}}<p>No calibration: the map's Calls follow the declared graph.</p>{{end}}
<table><tr><th>endpoint</th><th>measured</th><th>declared (audit.calls, else its dependency; — none)</th><th></th></tr>
{{range .Graph}}<tr><td>{{.Endpoint}}</td><td>{{.Measured}}</td><td>{{.Declared}}</td><td>{{if .Differs}}<b class="bad">differs</b>{{end}}{{with .Failed}} calibration failed: {{.}}{{end}}</td></tr>
{{end}}</table>
{{with .M.GraphDiffs}}<p>Differences:</p><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Thresholds</h2>
<ul>{{range .Thresholds}}<li>{{.}}</li>{{end}}</ul>
<h2>Aborted cells</h2>
{{if .Aborted}}<ul>{{range .Aborted}}<li>{{.Column}}: {{.Trigger}} — {{join .Endpoints}}</li>{{end}}</ul>{{else}}<p>None.</p>{{end}}
{{with .Skipped}}<p>{{.}}.</p>{{end}}
{{if .Details}}<h2>Cells</h2>
<p>p99 in the runs' baseline and fault phases (ms), its rise in T (over the lower of the baseline and the control run's p99), the fault phase's error rate and its rise over the baseline's (points), the time from fault start to the first degraded window (s), what the failures were as the service's answers told, and what the exhaustion ranking names first.</p>
<table><tr><th>endpoint</th><th>fault</th><th>class</th><th>calls it</th><th>runs</th><th>baseline p99 ms</th><th>fault p99 ms</th><th>p99 rise</th><th>error rate</th><th>error rise (points)</th><th>time to degrade s</th><th>failures</th><th>resource</th><th>detail</th></tr>
{{range .Details}}<tr><td>{{.Endpoint}}</td><td>{{.Column}}</td><td>{{.Class}}{{if .Violation}} ✗{{end}}</td><td>{{.Calls}}</td><td>{{.Runs}}</td><td>{{.BaseP99}}</td><td>{{.FaultP99}}</td><td>{{.Rise}}</td><td>{{.Errors}}</td><td>{{.ErrPoints}}</td><td>{{.Degrade}}</td><td>{{.Failures}}</td><td>{{.Resource}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))

// renderAuditHTML writes audit.html: the map's page, standalone but for
// the heatmap (audit-map.png, linked relatively).
func renderAuditHTML(m *verdict.AuditMap) []byte {
	var b bytes.Buffer
	if err := auditTmpl.Execute(&b, newAuditPage(m)); err != nil {
		// The template is fixed and the data is plain values; an error here
		// is a programming mistake, reported in the page itself.
		b.WriteString("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return b.Bytes()
}
