package analysis

import (
	"bytes"
	"html/template"
)

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"est": FormatEstimate,
	"num": numStr,
	"measure": func(m Measure) string {
		if m.Op == "" {
			return "(info)"
		}
		return m.Op + " " + fmt3(float64(*m.Threshold)) + " → " + m.Result
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bulkheadlab report: {{.Experiment}}</title>
<style>
body{font-family:sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.SUPPORTED{color:#176d2a}.NOT{color:#b00020}.INCONCLUSIVE,.SKIPPED{color:#8a6d00}.INVALID{color:#6a1b9a}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
</style></head><body>
<h1>bulkheadlab report: {{.Experiment}}</h1>
<p>Victim /{{.Expectations.Victim}}, culprit /{{.Expectations.Culprit}}. Means over complete repeats, 95 % bootstrap interval over repeats in brackets (3 or more repeats).</p>
<h2>Verdicts</h2>
<table><tr><th>prediction</th><th>outcome</th><th>reason</th></tr>
{{range .Verdicts}}<tr><td>{{.Name}}</td><td class="{{.Outcome}}"><b>{{.Outcome}}</b></td><td>{{.Reason}}</td></tr>
{{end}}</table>
{{range .Verdicts}}<h3>{{.Name}} — {{.Outcome}}</h3><p>{{.Claim}}.</p>
<table><tr><th>number</th><th>measured</th><th>unit</th><th>threshold</th></tr>
{{range .Measures}}<tr><td>{{.Name}}</td><td>{{est .Value}}</td><td>{{.Unit}}</td><td>{{measure .}}</td></tr>
{{end}}</table>{{end}}
<h2>Little's law</h2>
<table><tr><th>condition</th><th>mode</th><th>pool</th><th>limit</th><th>demand predicted</th><th>measured</th><th>ratio</th><th>exhaustion predicted s</th><th>measured s</th><th>ratio</th></tr>
{{range .Little}}<tr><td>{{.Condition}}</td><td>{{.Mode}}</td><td>{{.Pool}}</td><td>{{.Limit}}</td><td>{{est .PredictedDemand}}</td><td>{{est .MeasuredDemand}}</td><td>{{est .DemandRatio}}</td><td>{{est .PredictedExhaustionS}}</td><td>{{est .MeasuredExhaustionS}}</td><td>{{est .ExhaustionRatio}}</td></tr>
{{end}}</table>
<h2>Runs</h2>
<table><tr><th>run</th><th>status</th><th>valid</th><th>time to degrade (T)</th><th>exhausted first</th><th>detail</th><th>problems</th></tr>
{{range .Runs}}<tr><td>{{.ID}}</td><td>{{.Status}}</td><td>{{.Valid}}</td><td>{{num .TimeToDegradeT}}</td><td>{{.Exhausted.Resource}}</td><td>{{.Exhausted.Detail}}</td><td>{{range .Problems}}{{.}}; {{end}}</td></tr>
{{end}}</table>
<h2>Figures</h2>
{{range .Images}}<figure><img src="{{.}}" alt="{{.}}"><figcaption>{{.}}</figcaption></figure>
{{end}}</body></html>
`))

// renderHTML writes index.html: the verdicts, tables and every image.
func renderHTML(s *Summary) []byte {
	var b bytes.Buffer
	if err := htmlTmpl.Execute(&b, s); err != nil {
		// The template is fixed and the data is plain values; an error here
		// is a programming mistake, reported in the page itself.
		b.WriteString("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return b.Bytes()
}
