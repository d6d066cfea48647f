package render

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"est":      measure.FormatEstimate,
	"num":      measure.FmtNum,
	"pct":      pct,
	"status":   statusText,
	"join":     func(v []string) string { return strings.Join(v, "; ") },
	"sched":    func(n measure.NoiseFloor, c string) string { return measure.FmtNum(n.SchedP99Ms[c]) },
	"inferred": func(ls []measure.InferredLimit) string { return orDash(measure.DescribeInferred(ls)) },
	"fleet":    fleetHTML,
	"after":    aftermathHTML,
	"measure": func(m verdict.Measure) string {
		if m.Op == "" {
			return "(info)"
		}
		return m.Op + " " + measure.Fmt3(float64(*m.Threshold)) + " → " + m.Result
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bulkheadlab report: {{.Experiment}}</title>
<style>
body{font-family:sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.SUPPORTED{color:#176d2a}.NOT{color:#b00020}.INCONCLUSIVE,.SKIPPED{color:#8a6d00}.INVALID{color:#6a1b9a}
.notice{background:#fff4e5;border-left:4px solid #e68a00;padding:.5em 1em;margin:1em 0}
tr.invalid td{background:#f6eefa}tr.failed td{background:#fdecee}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
</style></head><body>
<h1>bulkheadlab report: {{.Experiment}}</h1>
<p>Victim /{{.Expectations.Victim}}, culprit /{{.Expectations.Culprit}}. Means over complete repeats, 95 % bootstrap interval over repeats in brackets (3 or more repeats).</p>
{{if .Notices}}<div class="notice"><h2>Read this first</h2><ul>
{{range .Notices}}<li>{{.}}</li>
{{end}}</ul></div>{{end}}
<h2>Verdicts</h2>
<table><tr><th>prediction</th><th>outcome</th><th>reason</th><th>runs left out</th></tr>
{{range .Verdicts}}<tr><td>{{.Name}}</td><td class="{{.Outcome}}"><b>{{.Outcome}}</b></td><td>{{.Reason}}</td><td>{{range .Excluded}}{{.Run}}: {{.Why}}<br>{{end}}</td></tr>
{{end}}</table>
{{range .Verdicts}}<h3>{{.Name}} — {{.Outcome}}</h3><p>{{.Claim}}.</p>
<table><tr><th>number</th><th>measured</th><th>unit</th><th>threshold</th></tr>
{{range .Measures}}<tr><td>{{.Name}}</td><td>{{est .Value}}</td><td>{{.Unit}}</td><td>{{measure .}}</td></tr>
{{end}}</table>{{end}}
<h2>Latency by endpoint and phase</h2>
<p>p50 / p99 in ms and error rate, means over the cell's runs.</p>
<table><tr><th>condition</th><th>mode</th><th>endpoint</th><th>phase</th><th>p50 ms</th><th>p99 ms</th><th>error rate</th></tr>
{{range $c := .Cells}}{{range .Phases}}<tr><td>{{$c.Condition}}</td><td>{{$c.Mode}}</td><td>/{{.Endpoint}}</td><td>{{.Phase}}</td><td>{{est .P50Ms}}</td><td>{{est .P99Ms}}</td><td>{{est .ErrorRate}}</td></tr>
{{end}}{{end}}</table>
<h2>Little's law</h2>
<table><tr><th>condition</th><th>mode</th><th>pool</th><th>limit</th><th>demand predicted</th><th>measured</th><th>ratio</th><th>exhaustion predicted s</th><th>measured s</th><th>ratio</th></tr>
{{range .Little}}<tr><td>{{.Condition}}</td><td>{{.Mode}}</td><td>{{.Pool}}</td><td>{{.Limit}}</td><td>{{est .PredictedDemand}}</td><td>{{est .MeasuredDemand}}</td><td>{{est .DemandRatio}}</td><td>{{est .PredictedExhaustionS}}</td><td>{{est .MeasuredExhaustionS}}</td><td>{{est .ExhaustionRatio}}</td></tr>
{{end}}</table>
{{fleet .}}{{after .}}<h2>Runs: validity and noise floor</h2>
<table><tr><th>run</th><th>status</th><th>valid</th><th>why not / run again</th><th>canary p99 ms (limit)</th><th>lag p99 ms</th><th>service sched p99 ms</th><th>load generator sched p99 ms</th><th>machine CPU busy</th></tr>
{{range .Runs}}<tr{{if not .Valid}} class="invalid"{{end}}><td>{{.ID}}</td><td>{{status .Status}}</td><td>{{.Valid}}</td><td>{{join .Damaged}} {{join .Invalid}} {{join .Problems}}{{range .Retried}}<br>run again after: {{join .Reasons}}{{end}}</td><td>{{num .Noise.CanaryP99Ms}} ({{num .Noise.CanaryLimitMs}})</td><td>{{num .Noise.LagP99Ms}}</td><td>{{sched .Noise "service"}}</td><td>{{sched .Noise "loadgen"}}</td><td>{{pct .Noise.MachineBusy}}</td></tr>
{{end}}</table>
<h2>Runs: degradation and the resource that ran out first</h2>
<table><tr><th>run</th><th>time to degrade (T)</th><th>exhausted first</th><th>detail</th><th>then ran out (s after fault)</th><th>limits seen by the proxies</th></tr>
{{range .Runs}}<tr><td>{{.ID}}</td><td>{{num .TimeToDegradeT}}</td><td>{{.Exhausted.Label}}</td><td>{{.Exhausted.Detail}}</td><td>{{.Exhausted.Then}}</td><td>{{inferred .Inferred}}</td></tr>
{{end}}</table>
<h2>Figures</h2>
{{range .Images}}<figure><img src="{{.}}" alt="{{.}}"><figcaption>{{.}}</figcaption></figure>
{{end}}</body></html>
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
