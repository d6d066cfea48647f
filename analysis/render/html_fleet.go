package render

import (
	"bytes"
	"html/template"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

var fleetTmpl = template.Must(template.New("fleet").Funcs(template.FuncMap{"num": measure.FmtNum, "pct": pct, "instance": instanceName}).Parse(`{{if .Processes}}<h2>Processes</h2>
<p>Every process of a service run as a process per pool (processes: per-endpoint) on its own: the endpoints it served, peak permits in use per pool against its limit (Little's law for its endpoints' load: measured ÷ predicted demand) and the resource that ran out first in it.</p>{{else}}<h2>Fleet</h2>{{end}}
{{if .Fleet}}<p>What each run's fleet put on the culprit's dependency over the fault phase, against Little's law (K = min(N·L, λ·W), W = s·max(1, K/C)).</p>
<table><tr><th>run</th><th>N</th><th>L</th><th>N·L</th><th>C</th><th>λ req/s</th><th>concurrency (predicted K)</th><th>in service + waiting</th><th>call time ms (predicted W)</th><th>ok req/s</th><th>rejected</th><th>dependency failed</th></tr>
{{range .Fleet}}{{$f := .Fleet}}<tr><td>{{.ID}}</td><td>{{$f.Instances}}</td><td>{{$f.PerInstanceLimit}}</td><td>{{$f.FleetLimit}}</td><td>{{num $f.Capacity}}</td><td>{{num $f.OfferedPerS}}</td><td>{{num $f.ConcurrencyOnDep}} ({{num $f.PredictedConcurrency}})</td><td>{{num $f.DepInService}} + {{num $f.DepWaiting}}</td><td>{{num $f.MeasuredWaitMs}} ({{num $f.PredictedWaitMs}})</td><td>{{num $f.OKPerS}}</td><td>{{pct $f.RejectedShare}}</td><td>{{pct $f.DepFailedShare}}</td></tr>
{{end}}</table>{{end}}
{{if and .Instances (not .Processes)}}<p>Every instance on its own: peak permits in use per pool against the instance's limit (Little's law for its share of the load: measured ÷ predicted demand) and the resource that ran out first in it.</p>
{{end}}{{if .Instances}}<table><tr><th>run</th><th>{{if .Processes}}process (endpoints){{else}}instance{{end}}</th><th>pools</th><th>exhausted first</th></tr>
{{range $r := .Instances}}{{range .Instances}}<tr><td>{{$r.ID}}</td><td>{{instance .}}</td><td>{{range .Pools}}{{.Pool}} {{num .PeakInUse}}/{{.Limit}} ({{num .DemandRatio}}) {{end}}</td><td>{{.Exhausted.Resource}}</td></tr>
{{end}}{{end}}</table>{{end}}
`))

// fleetHTML is the report page's Fleet section (the HTML of writeFleetMD);
// empty for an experiment of single instances without fleet claims.
func fleetHTML(s *verdict.Summary) template.HTML {
	var data struct {
		Fleet, Instances []measure.RunSummary
		// Processes: every run with instances is a process per pool.
		Processes bool
	}
	for _, r := range s.Runs {
		if r.Fleet != nil {
			data.Fleet = append(data.Fleet, r)
		}
		if len(r.Instances) > 0 {
			data.Instances = append(data.Instances, r)
		}
	}
	if len(data.Fleet) == 0 && len(data.Instances) == 0 {
		return ""
	}
	data.Processes = len(data.Fleet) == 0 && allPerPool(data.Instances)
	var b bytes.Buffer
	if err := fleetTmpl.Execute(&b, data); err != nil {
		return template.HTML("<!-- template error: " + template.HTMLEscapeString(err.Error()) + " -->")
	}
	return template.HTML(b.String()) // #nosec: rendered by html/template above
}
