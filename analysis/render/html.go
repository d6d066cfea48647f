package render

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"est":          measure.FormatEstimate,
	"num":          measure.FmtNum,
	"pct":          pct,
	"status":       statusText,
	"join":         func(v []string) string { return strings.Join(v, "; ") },
	"sched":        func(n measure.NoiseFloor, c string) string { return measure.FmtNum(n.SchedP99Ms[c]) },
	"inferred":     func(ls []measure.InferredLimit) string { return orDash(measure.DescribeInferred(ls)) },
	"fleet":        fleetHTML,
	"after":        aftermathHTML,
	"key":          keyNumber,
	"groups":       groupExcluded,
	"anchor":       runAnchor,
	"short":        shortWhy,
	"reasons":      runReasons,
	"ruletab":      leftOutTable,
	"degrade":      degradeText,
	"conns":        connsHTML,
	"timing":       timingHTML,
	"hasPrefix":    strings.HasPrefix,
	"auditfile":    auditFile,
	"auditverdict": func(m verdict.AuditMap) string { return strings.TrimSuffix(auditVerdict(&m), ".") },
	"measure": func(m verdict.Measure) string {
		if m.Op == "" {
			return "(info)"
		}
		return m.Op + " " + words.Fmt3(float64(*m.Threshold)) + " → " + m.Result
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bulkheadlab report: {{.Experiment}}</title>
<style>
body{font-family:sans-serif;max-width:1300px;margin:1.2em auto;padding:0 1em;color:#222}
h1{margin:.2em 0 .3em}h2{margin:.9em 0 .4em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
.SUPPORTED{color:#176d2a}.NOT{color:#b00020}.INCONCLUSIVE,.SKIPPED{color:#8a6d00}.INVALID{color:#6a1b9a}
.notice{background:#fff4e5;border-left:4px solid #e68a00;padding:.2em 1em;margin:.6em 0}.notice ul{margin:.4em 0}
tr.invalid td{background:#f6eefa}tr.failed td{background:#fdecee}td.ok{color:#176d2a;text-align:center}
tr:target td{outline:2px solid #e68a00}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}details{margin:.4em 0}summary{cursor:pointer}
</style></head><body>
<h1>bulkheadlab report: {{.Experiment}}</h1>
{{if .Audits}}<p>A blast-radius audit: its result is the map of endpoints × faults in {{range $i, $m := .Audits}}{{if $i}}, {{end}}{{with auditfile $ $i}}<a href="{{.}}">{{.}}</a>{{end}} ({{auditverdict $m}}){{end}}; this page holds the numbers of its runs (no predictions P1–P4 are judged). Means over complete repeats, 95 % bootstrap interval over repeats in brackets (3 or more repeats).</p>
{{else}}<p>Victim /{{.Expectations.Victim}}, culprit /{{.Expectations.Culprit}}. Means over complete repeats, 95 % bootstrap interval over repeats in brackets (3 or more repeats).</p>{{end}}
{{if .Notices}}<div class="notice"><ul>
{{range .Notices}}<li>{{.}}</li>
{{end}}</ul></div>{{end}}
{{if not .Audits}}<h2>Verdicts</h2>
<table><tr><th>prediction</th><th>outcome</th><th>key number</th><th>reason</th><th>runs left out</th></tr>
{{range .Verdicts}}<tr><td><a href="#v-{{.Name}}">{{.Name}}</a></td><td class="{{.Outcome}}"><b>{{.Outcome}}</b></td><td>{{key .}}</td><td>{{.Reason}}</td><td>{{with .Excluded}}{{len .}}:{{range $k, $g := groups .}}{{if $k}};{{end}} {{$g.Stem}}{{range $i, $id := $g.IDs}} <a href="#{{anchor $id}}">{{index $g.Tags $i}}</a>{{end}}{{end}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{with ruletab .}}{{if .Rows}}<details><summary>Runs left out: each rule as its worst value against the limit (✓ kept)</summary>
<table><tr><th>run</th>{{range .Rules}}<th>{{.}}</th>{{end}}<th>CPU busy</th><th>steal</th><th>retried</th></tr>
{{range .Rows}}<tr><td><a href="#{{anchor .Run}}">{{.Run}}</a></td>{{range .Cells}}<td{{if eq . "✓"}} class="ok"{{end}}>{{.}}</td>{{end}}<td>{{pct .Busy}}</td><td>{{pct .Steal}}</td><td>{{if .Retried}}{{.Retried}}{{else}}—{{end}}</td></tr>
{{end}}{{if .Others}}<tr><td>the other {{.Others}}</td>{{range .Rules}}<td class="ok">✓</td>{{end}}<td></td><td></td><td></td></tr>{{end}}</table></details>{{end}}{{end}}
{{if not .Audits}}{{range .Verdicts}}<h3 id="v-{{.Name}}">{{.Name}} — {{.Outcome}}</h3><p>{{.Claim}}.</p>
<table><tr><th>number</th><th>measured</th><th>unit</th><th>threshold</th></tr>
{{range .Measures}}<tr><td>{{.Name}}</td><td>{{est .Value}}</td><td>{{.Unit}}</td><td>{{measure .}}</td></tr>
{{end}}</table>{{end}}
<h2>Fault phase by condition and mode</h2>
<table><tr><th>condition</th><th>mode</th><th>runs</th><th>/{{.Expectations.Victim}} p99 ms</th><th>/{{.Expectations.Victim}} error rate</th><th>/{{.Expectations.Culprit}} p99 ms</th><th>/{{.Expectations.Culprit}} error rate</th><th>/{{.Expectations.Culprit}} ok req/s</th><th>time to degrade (T)</th></tr>
{{range .Cells}}<tr><td>{{.Condition}}</td><td>{{.Mode}}</td><td>{{len .Runs}}{{with .Excluded}} (+{{len .}} left out){{end}}</td><td>{{est .VictimP99Ms}}</td><td>{{est .VictimErrorRate}}</td><td>{{est .CulpritP99Ms}}</td><td>{{est .CulpritErrorRate}}</td><td>{{est .CulpritOKRate}}</td><td>{{est .TimeToDegradeT}}</td></tr>
{{end}}</table>{{end}}
{{range .Images}}{{if not (hasPrefix . "run-")}}<figure><img src="{{.}}" alt="{{.}}"><figcaption>{{.}}</figcaption></figure>
{{end}}{{end}}<h2>Latency by endpoint and phase</h2>
<p>p50 / p99 in ms and error rate, means over the cell's runs.</p>
<table><tr><th>condition</th><th>mode</th><th>endpoint</th><th>phase</th><th>p50 ms</th><th>p99 ms</th><th>error rate</th></tr>
{{range $c := .Cells}}{{range .Phases}}<tr><td>{{$c.Condition}}</td><td>{{$c.Mode}}</td><td>/{{.Endpoint}}</td><td>{{.Phase}}</td><td>{{est .P50Ms}}</td><td>{{est .P99Ms}}</td><td>{{est .ErrorRate}}</td></tr>
{{end}}{{end}}</table>
<h2>Little's law</h2>
<table><tr><th>condition</th><th>mode</th><th>pool</th><th>limit</th><th>demand predicted</th><th>measured</th><th>ratio</th><th>exhaustion predicted s</th><th>measured s</th><th>ratio</th></tr>
{{range .Little}}<tr><td>{{.Condition}}</td><td>{{.Mode}}</td><td>{{.Pool}}</td><td>{{.Limit}}</td><td>{{est .PredictedDemand}}</td><td>{{est .MeasuredDemand}}</td><td>{{est .DemandRatio}}</td><td>{{est .PredictedExhaustionS}}</td><td>{{est .MeasuredExhaustionS}}</td><td>{{est .ExhaustionRatio}}</td></tr>
{{end}}</table>
{{conns .}}{{timing .}}{{fleet .}}{{after .}}<h2>Runs: validity and noise floor</h2>
<table><tr><th>run</th><th>status</th><th>valid</th><th>why not / run again</th><th>canary p99 ms (limit)</th><th>lag p99 ms</th><th>service sched p99 ms</th><th>load generator sched p99 ms</th><th>machine CPU busy</th><th>of it steal</th></tr>
{{range .Runs}}<tr id="{{anchor .ID}}"{{if not .Valid}} class="invalid"{{end}}><td>{{.ID}}</td><td>{{status .Status}}</td><td>{{.Valid}}</td><td>{{short .}}{{with reasons .}}<details><summary>every reason</summary><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></details>{{end}}</td><td>{{num .Noise.CanaryP99Ms}} ({{num .Noise.CanaryLimitMs}})</td><td>{{num .Noise.LagP99Ms}}</td><td>{{sched .Noise "service"}}</td><td>{{sched .Noise "loadgen"}}</td><td>{{pct .Noise.MachineBusy}}</td><td>{{pct .Noise.MachineSteal}}</td></tr>
{{end}}</table>
<h2>Runs: degradation and the resource that ran out first</h2>
<table><tr><th>run</th><th>time to degrade (T)</th><th>exhausted first</th><th>detail</th><th>then ran out (s after fault)</th><th>limits seen by the proxies</th></tr>
{{range .Runs}}<tr><td>{{.ID}}</td><td>{{degrade .}}</td><td>{{.Exhausted.Label}}</td><td>{{.Exhausted.Detail}}</td><td>{{.Exhausted.Then}}</td><td>{{inferred .Inferred}}</td></tr>
{{end}}</table>
<h2>Figures of each run</h2>
{{range .Images}}{{if hasPrefix . "run-"}}<figure><img src="{{.}}" alt="{{.}}"><figcaption>{{.}}</figcaption></figure>
{{end}}{{end}}</body></html>
`))

// renderHTML writes index.html: the verdicts, tables and every image.
func renderHTML(s *verdict.Summary) []byte {
	var b bytes.Buffer
	if err := htmlTmpl.Execute(&b, s); err != nil {
		// The template is fixed and the data is plain values; an error here
		// is a programming mistake, reported in the page itself.
		b.WriteString("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return b.Bytes()
}

var connsTmpl = template.Must(template.New("conns").Funcs(template.FuncMap{"num": measure.FmtNum}).Parse(`<h2>Connection waits</h2>
<p>Fault phase (the run after warmup without one). Calls = dependency calls that got a connection; mean wait = their mean wait for it (0 when one was free); mean hold = their mean time holding it (a query's time, an HTTP call's round trip), in the baseline → the fault phase: a slow dependency raises the hold, a pool run dry the wait with the hold flat; timed out = calls whose deadline passed while they waited (they never reached the dependency).</p>
<table><tr><th>run</th><th>endpoint</th><th>calls</th><th>mean wait ms</th><th>mean hold ms (baseline → fault)</th><th>timed out waiting</th></tr>
{{range .}}{{$id := .ID}}{{range .ConnWaits}}<tr><td>{{$id}}</td><td>/{{.Endpoint}}</td><td>{{num .Calls}}</td><td>{{num .MeanWaitMs}}</td><td>{{num .BaselineHoldMs}} → {{num .MeanHoldMs}}</td><td>{{num .Timeouts}}</td></tr>
{{end}}{{end}}</table>
`))

// connsHTML is the page's "Connection waits" section (the HTML of
// writeConnWaitsMD); empty when no run has connection pools.
func connsHTML(s *verdict.Summary) template.HTML {
	any := false
	for _, r := range s.Runs {
		any = any || len(r.ConnWaits) > 0
	}
	if !any {
		return ""
	}
	var b bytes.Buffer
	if err := connsTmpl.Execute(&b, s.Runs); err != nil {
		return template.HTML("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return template.HTML(b.String()) // #nosec: rendered by html/template above
}
