package render

import (
	"bytes"
	"html/template"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

var aftermathTmpl = template.Must(template.New("aftermath").Parse(`<h2>After the fault: recovery, leaked permits, limits</h2>
{{if .Paths}}<p>Permits lost per error path (the most any run of the cell lost) and the runs that recovered:</p>
<table><tr><th>condition</th><th>mode</th><th>permits lost</th><th>recovered</th></tr>
{{range .Paths}}<tr><td>{{.Condition}}</td><td>{{.Mode}}</td><td>{{.Lost}}</td><td>{{.Recovered}}</td></tr>
{{end}}</table>{{end}}
<table><tr><th>run</th><th>recovered</th><th>time to recover (T)</th><th>bound (T)</th><th>permits lost</th><th>peak calls in flight / limit</th><th>evidence</th></tr>
{{range .Rows}}<tr{{if .Failed}} class="failed"{{end}}><td>{{.ID}}</td><td>{{.Recovered}}</td><td>{{.Time}}</td><td>{{.Bound}}</td><td>{{.Leaked}}</td><td>{{.Limits}}</td><td>{{.Evidence}}</td></tr>
{{end}}</table>
<details><summary>Rules</summary><ul><li>Recovery: {{.Recovery}}.</li><li>Leaked permits: {{.Leak}}.</li><li>Limits: {{.Limit}}.</li></ul></details>
`))

// aftermathHTML is the report page's "After the fault" section (the HTML
// of writeAftermathMD); empty when no run was judged.
func aftermathHTML(s *verdict.Summary) template.HTML {
	rows := aftermathRows(s)
	if len(rows) == 0 {
		return ""
	}
	data := struct {
		Rows                  []aftermathRow
		Paths                 []pathRow
		Recovery, Leak, Limit string
	}{rows, pathRows(s), measure.RecoveryRule, measure.LeakRule, measure.LimitRule}
	var b bytes.Buffer
	if err := aftermathTmpl.Execute(&b, data); err != nil {
		return template.HTML("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return template.HTML(b.String()) // #nosec: rendered by html/template above
}
