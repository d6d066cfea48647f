package render

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// runPanels is the number of panels of a run's figure.
const runPanels = 5

// runFig is the figure of one run: latency, failures, success, pool
// occupancy and the noise floor, on one time axis.
type runFig struct {
	title  string
	panels [runPanels]*plot.Plot
	legs   [runPanels]plot.Legend
}

const legendWidth = 190 // points reserved right of the panels for legends

func (f *runFig) size() (vg.Length, vg.Length) { return 14 * vg.Inch, 18 * vg.Inch }

func (f *runFig) draw(dc draw.Canvas) {
	titleText(dc, f.title, 15)
	tiles := draw.Tiles{Rows: runPanels, Cols: 1, PadTop: vg.Points(34), PadBottom: vg.Points(6), PadLeft: vg.Points(6),
		PadRight: vg.Points(legendWidth), PadY: vg.Points(14)}
	var rows [][]*plot.Plot
	for _, p := range f.panels {
		rows = append(rows, []*plot.Plot{p})
	}
	cs := plot.Align(rows, tiles, dc)
	for i, p := range f.panels {
		p.Draw(cs[i][0])
		drawSideLegend(dc, cs[i][0], &f.legs[i])
	}
}

// drawSideLegend draws leg in the margin right of panel canvas c.
func drawSideLegend(dc, c draw.Canvas, leg *plot.Legend) {
	area := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: c.Max.X + vg.Points(10), Y: c.Min.Y},
		Max: vg.Point{X: dc.Max.X - vg.Points(4), Y: c.Max.Y - vg.Points(20)},
	}}
	leg.Draw(area)
}

// runSeries are a run's windows of one endpoint as plot coordinates.
type runSeries struct {
	x        []float64 // window centre, seconds from origin
	p50, p99 []float64 // ms, NaN without results
	fail     [rundata.NumClasses][]float64
	success  []float64 // %, NaN without results
	// retries are a retrying client's retries per second, nil when the
	// endpoint's clients sent none.
	retries []float64
}

func seriesOf(r *measure.Run, ep string, origin time.Time) runSeries {
	var s runSeries
	for _, w := range r.Data.EndpointWindows(ep) {
		s.x = append(s.x, (w.Start.Sub(origin) + w.Duration/2).Seconds())
		tot := w.Counts.Total()
		p50, p99, succ := math.NaN(), math.NaN(), math.NaN()
		if tot > 0 {
			p50, p99 = measure.Millis(w.Latency.P50), measure.Millis(w.Latency.P99)
			succ = 100 * float64(w.Counts[rundata.ClassOK]) / float64(tot)
		}
		s.p50, s.p99, s.success = append(s.p50, p50), append(s.p99, p99), append(s.success, succ)
		secs := w.Duration.Seconds()
		for c := rundata.ClassRejected; c < rundata.NumClasses; c++ {
			v := 0.0
			if secs > 0 {
				v = float64(w.Counts[c]) / secs
			}
			s.fail[c] = append(s.fail[c], v)
		}
		if w.Retries > 0 && s.retries == nil {
			s.retries = make([]float64, len(s.x)-1, len(s.x))
		}
		if s.retries != nil && secs > 0 {
			s.retries = append(s.retries, float64(w.Retries)/secs)
		} else if s.retries != nil {
			s.retries = append(s.retries, 0)
		}
	}
	return s
}

// runFigure builds the figure of one run.
func runFigure(r *measure.Run, ex rundata.Expectations) figure {
	origin := r.Data.Origin()
	end := r.Data.End().Sub(origin).Seconds()
	f := &runFig{title: fmt.Sprintf("%s — mode %s, condition %s, repeat %d, T = %s",
		r.Data.Entry.ID, r.Data.Entry.Mode, r.Data.Entry.Condition, r.Data.Entry.Repeat, r.Data.Meta.Timeout)}
	if !r.Data.Complete() {
		f.title += " (INCOMPLETE)"
	} else if !r.Data.Meta.Valid {
		f.title += " (INVALID RUN)"
	}
	titles := [runPanels][2]string{
		{"Latency per endpoint, p99 solid, p50 dashed (log scale)", "latency (ms)"},
		{"Failures per endpoint by class", "failures (req/s)"},
		{"Success rate per endpoint", "successful (%)"},
		{"Pool occupancy: in use, waiting, limit; Little's-law demand dashed", "permits"},
		{"Noise floor: canary p99 (a request that does no work), Go scheduling latency p99 per process (log scale)", "latency (ms)"},
	}
	if len(r.Data.PoolNames()) == 0 {
		titles[3][0] = "Pool occupancy: not observable (the service exports no pool metrics); Little's-law demand dashed"
	}
	if slices.ContainsFunc(r.ConnPoolNames(), func(p string) bool { _, _, near := r.ConnPoolNear(p); return near }) {
		titles[3] = [2]string{strings.Replace(titles[3][0], "Pool occupancy", "Pool and connection occupancy (connections dash-dot)", 1), "permits, connections"}
	}
	for i := range f.panels {
		f.panels[i] = newPanel(titles[i][0], titles[i][1])
		f.legs[i] = newLegend()
	}
	shade(f.panels[:], &f.legs[0], r, origin)
	eps := r.Data.Endpoints()
	series := map[string]runSeries{}
	for _, ep := range eps {
		series[ep] = seriesOf(r, ep, origin)
	}
	latencyPanel(f.panels[0], &f.legs[0], eps, series, r, ex)
	failurePanel(f.panels[1], &f.legs[1], eps, series, ex)
	successPanel(f.panels[2], &f.legs[2], eps, series, ex)
	poolPanel(f.panels[3], &f.legs[3], r, origin, ex)
	policyOverlay(f.panels[3], &f.legs[3], r, origin, ex)
	noisePanel(f.panels[4], &f.legs[4], r, origin)
	decorate(f.panels[:], &f.legs[0], r, origin, end)
	addRecoveryMarks([]*plot.Plot{f.panels[0], f.panels[2]}, r, ex, origin)
	return f
}

// shade adds the fault window, first so that it lies under the data.
func shade(panels []*plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time) {
	fs, ok := r.Data.FaultStart()
	if !ok {
		return
	}
	s := spanShade{Color: faultShade, From: fs.Sub(origin).Seconds(), To: r.Data.FaultEnd().Sub(origin).Seconds()}
	for _, p := range panels {
		p.Add(s)
	}
	leg.Add("fault window", &plotter.Polygon{Color: faultShade})
}

// decorate adds the phase marks and sets a common x range.
func decorate(panels []*plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time, end float64) {
	var at []float64
	var names []string
	for _, p := range r.Data.Meta.Phases {
		at = append(at, p.Start.Sub(origin).Seconds())
		names = append(names, p.Name)
	}
	for i, p := range panels {
		p.Add(phaseMarks{At: at, Names: names, Labels: i == 0})
		p.X.Min, p.X.Max = 0, math.Max(end, 1)
	}
	panels[len(panels)-1].X.Label.Text = "time since load start (s)"
}

func latencyPanel(p *plot.Plot, leg *plot.Legend, eps []string, series map[string]runSeries, r *measure.Run, ex rundata.Expectations) {
	var all [][]float64
	for _, ep := range eps {
		s := series[ep]
		c := nameColor(ep, ex)
		addSeries(p, leg, "/"+ep+" p99", s.x, s.p99, lineStyle(c, 0, 2), true)
		addSeries(p, leg, "/"+ep+" p50", s.x, s.p50, lineStyle(c, 1, 1.5), true)
		all = append(all, s.p99, s.p50)
	}
	lo, hi, ok := yRange(true, all...)
	if t := measure.Millis(r.Data.Meta.Timeout); t > 0 {
		lo, hi = math.Min(lo, t), math.Max(hi, t)
		ok = true
		p.Add(hline{Y: t, Style: lineStyle(colorGrey, 3, 1)})
		leg.Add(fmt.Sprintf("T = %s", r.Data.Meta.Timeout), &plotter.Line{LineStyle: lineStyle(colorGrey, 3, 1)})
	}
	setLogY(p, lo, hi, ok)
}

func failurePanel(p *plot.Plot, leg *plot.Legend, eps []string, series map[string]runSeries, ex rundata.Expectations) {
	any := false
	for _, ep := range eps {
		s := series[ep]
		for c := rundata.ClassRejected; c < rundata.NumClasses; c++ {
			if _, hi, ok := yRange(false, s.fail[c]); !ok || hi == 0 {
				continue
			}
			any = true
			addSeries(p, leg, "/"+ep+" "+c.String(), s.x, s.fail[c], lineStyle(nameColor(ep, ex), int(c)-1, 1.8), false)
		}
		if s.retries != nil {
			any = true
			sty := lineStyle(nameColor(ep, ex), 0, 3)
			sty.Color = color.NRGBA{R: 0x80, G: 0x30, B: 0xa0, A: 0xff}
			addSeries(p, leg, "/"+ep+" retries sent (client)", s.x, s.retries, sty, false)
		}
	}
	if !any {
		leg.Add("no failures")
	}
	p.Y.Min = 0
	if _, hi, ok := yRange(false, failMaxes(eps, series)...); !ok || hi == 0 {
		p.Y.Max = 1
	}
}

func failMaxes(eps []string, series map[string]runSeries) [][]float64 {
	var out [][]float64
	for _, ep := range eps {
		for c := rundata.ClassRejected; c < rundata.NumClasses; c++ {
			out = append(out, series[ep].fail[c])
		}
		out = append(out, series[ep].retries)
	}
	return out
}

func successPanel(p *plot.Plot, leg *plot.Legend, eps []string, series map[string]runSeries, ex rundata.Expectations) {
	for _, ep := range eps {
		s := series[ep]
		addSeries(p, leg, "/"+ep+" success", s.x, s.success, lineStyle(nameColor(ep, ex), 0, 2), false)
	}
	p.Y.Min, p.Y.Max = 0, 105
}

// hline is a horizontal reference line across the panel.
type hline struct {
	Y     float64
	Style draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.Y)
	if c.ContainsY(y) {
		c.StrokeLine2(h.Style, c.Min.X, y, c.Max.X, y)
	}
}

// noisePanel draws the run's noise floor: the canary's p99 per window, its
// validity limit, and each process's Go scheduling latency p99 per sample.
func noisePanel(p *plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time) {
	var all [][]float64
	if s := seriesOf(r, rundata.CanaryEndpoint, origin); len(s.x) > 0 {
		addSeries(p, leg, "canary p99", s.x, s.p99, lineStyle(color.Black, 0, 2), true)
		all = append(all, s.p99)
		if c := r.Data.Meta.Canary; c != nil && c.MaxP99 > 0 {
			sty := lineStyle(color.Black, 3, 1)
			p.Add(hline{Y: measure.Millis(c.MaxP99), Style: sty})
			leg.Add(fmt.Sprintf("canary limit %s", c.MaxP99), &plotter.Line{LineStyle: sty})
			all = append(all, []float64{measure.Millis(c.MaxP99)})
		}
	}
	for i, comp := range r.Components() {
		xs, ys := metricXY(r.Data.Metric(comp, rundata.MetricSchedLatencyP99), origin)
		if len(xs) == 0 {
			continue
		}
		for j := range ys {
			ys[j] *= 1000
		}
		addSeries(p, leg, comp+" sched p99", xs, ys, lineStyle(componentColor(comp, i), 1+i%4, 1.2), true)
		all = append(all, ys)
	}
	if n := r.NoiseFloor(); !math.IsNaN(float64(n.MachineBusy)) {
		text := fmt.Sprintf("machine CPU busy %.0f %%", 100*float64(n.MachineBusy))
		if st := float64(n.MachineSteal); !math.IsNaN(st) {
			text += fmt.Sprintf(", of it steal %.0f %%", 100*st)
		}
		leg.Add(text)
	}
	if len(all) == 0 {
		leg.Add("no canary, no runtime metrics")
	}
	lo, hi, ok := yRange(true, all...)
	setLogY(p, lo, hi, ok)
}

// componentColor colours a component of the noise panel.
func componentColor(comp string, i int) color.Color {
	switch {
	case comp == rundata.ServiceComponent:
		return colorShared
	case comp == rundata.LoadgenComponent:
		return colorGrey
	}
	return extraColors[i%len(extraColors)]
}
