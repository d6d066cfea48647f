package render

import (
	"image/color"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// breakerShade marks the spans a dependency's breaker was open (grey: the
// fault window is orange).
var breakerShade = color.NRGBA{R: 60, G: 60, B: 60, A: 45}

// policyOverlay adds the policy stacks to the pool panel: each breaker's
// open spans shaded (at the sampling resolution) and each adaptive limit as
// a dash-dotted line with its calls in flight, in the dependency's colour.
// It adds nothing for a run without policies.
func policyOverlay(p *plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time, ex rundata.Expectations) {
	values := map[string]float64{}
	for _, s := range r.Data.Metrics {
		if s.Component == rundata.ServiceComponent {
			for k, v := range s.Values {
				values[k] = v
			}
		}
	}
	shaded := false
	for _, dep := range rundata.LabelValues(values, rundata.MetricBreakerState, "dependency") {
		var from float64
		open := false
		for _, pt := range r.Data.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricBreakerState, rundata.L("dependency", dep))) {
			x := pt.Time.Sub(origin).Seconds()
			switch {
			case pt.Value == 2 && !open:
				from, open = x, true
			case pt.Value != 2 && open:
				p.Add(spanShade{From: from, To: x, Color: breakerShade})
				open, shaded = false, true
			}
		}
		if open {
			p.Add(spanShade{From: from, To: r.Data.End().Sub(origin).Seconds(), Color: breakerShade})
			shaded = true
		}
	}
	if shaded {
		leg.Add("breaker open", &plotter.Polygon{Color: breakerShade})
	}
	for _, dep := range rundata.LabelValues(values, rundata.MetricLimiterLimit, "dependency") {
		c := nameColor(dep, ex)
		for _, m := range []struct {
			metric, label string
			dash          int
			width         float64
		}{{rundata.MetricLimiterLimit, "adaptive limit", 2, 1.8}, {rundata.MetricLimiterInflight, "limiter in flight", 3, 1}} {
			xs, ys := metricXY(r.Data.Metric(rundata.ServiceComponent, rundata.Key(m.metric, rundata.L("dependency", dep))), origin)
			if len(xs) == 0 {
				continue
			}
			addSeries(p, leg, "/"+dep+" "+m.label, xs, ys, lineStyle(c, m.dash, m.width), false)
			for _, y := range ys {
				p.Y.Max = max(p.Y.Max, y*1.1)
			}
		}
	}
}
