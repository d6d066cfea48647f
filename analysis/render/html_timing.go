package render

import (
	"bytes"
	"html/template"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

var timingTmpl = template.Must(template.New("timing").Funcs(template.FuncMap{"parts": timingParts, "counts": timingCounts}).Parse(`<h2>Where the time went</h2>
<p>{{.Intro}}</p>
<table><tr><th>run</th><th>endpoint</th><th>phase</th><th>source</th><th>wait ms</th><th>work ms</th><th>with / without header</th></tr>
{{range .Runs}}{{$id := .ID}}{{with .WhereTime}}{{range .Rows}}<tr><td>{{$id}}</td><td>{{.Who}}</td><td>{{.Phase}}</td><td>{{.Source}}</td><td>{{parts .Wait}}</td><td>{{parts .Work}}</td><td>{{counts .}}</td></tr>
{{end}}{{end}}{{end}}</table>
<ul>
{{range .Runs}}{{$id := .ID}}{{with .WhereTime}}{{range .Shifts}}<li>{{$id}} ({{.Source}}): {{.Text}}</li>
{{end}}{{range .Notes}}<li>{{$id}} (metrics): <strong>not read</strong>: {{.}}</li>
{{end}}{{end}}{{end}}</ul>
`))

// timingHTML is the page's "Where the time went" section (the HTML of
// writeTimingMD); empty when no run has one.
func timingHTML(s *verdict.Summary) template.HTML {
	if !hasTiming(s) {
		return ""
	}
	var b bytes.Buffer
	data := struct {
		Intro string
		Runs  []measure.RunSummary
	}{timingIntroOf(s), s.Runs}
	if err := timingTmpl.Execute(&b, data); err != nil {
		return template.HTML("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return template.HTML(b.String()) // #nosec: rendered by html/template above
}
