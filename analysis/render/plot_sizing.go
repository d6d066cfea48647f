package render

import (
	"image/color"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SizingChartFile is the sizing curve's figure.
const SizingChartFile = "sizing.png"

// Colours of the sizing regions.
var (
	colorTooSmall = color.NRGBA{R: 0xe0, G: 0x40, B: 0x40, A: 0x30}
	colorHurts    = color.NRGBA{R: 0x60, G: 0x60, B: 0x60, A: 0x30}
)

// sizingFigure draws the sizing curve: the culprit's rejections and
// successful throughput (healthy, busy) and the victim's p99 rise and
// errors (slow) against the swept size, means with their CIs (3+
// repeats); sizes that reject healthy traffic shaded red, sizes that let a
// slow culprit hurt the victim grey, Little's-law size dashed.
func sizingFigure(s *verdict.Summary) figure {
	sc := s.Sizing
	if sc == nil || len(sc.Points) == 0 {
		return nil
	}
	ex := s.Expectations
	f := &gridFig{leg: newLegend(), w: 14 * vg.Inch, h: 10 * vg.Inch,
		title: "Sizing " + sc.Field + " (mode " + sc.Mode + "): red = rejects " + ex.Healthy + " traffic, grey = a " + ex.Slow + " /" + ex.Culprit + " hurts /" + ex.Victim + "; dashed = Little's law"}
	rej := newPanel("/"+ex.Culprit+" rejected (fault phase)", "rejected (%)")
	okp := newPanel("/"+ex.Culprit+" successful throughput (fault phase)", "ok (req/s)")
	rise := newPanel("/"+ex.Victim+" p99 rise over its baseline in "+ex.Slow, "p99 rise (T)")
	errs := newPanel("/"+ex.Victim+" error rate in "+ex.Slow, "errors (%)")
	series := []struct {
		p     *plot.Plot
		label string
		get   func(verdict.SizingPoint) measure.Estimate
		scale float64
		c     color.Color
	}{
		{rej, ex.Healthy, func(p verdict.SizingPoint) measure.Estimate { return p.HealthyRejected }, 100, colorShared},
		{rej, ex.Busy, func(p verdict.SizingPoint) measure.Estimate { return p.BusyRejected }, 100, extraColors[0]},
		{okp, ex.Healthy, func(p verdict.SizingPoint) measure.Estimate { return p.HealthyOKPerS }, 1, colorShared},
		{okp, ex.Busy, func(p verdict.SizingPoint) measure.Estimate { return p.BusyOKPerS }, 1, extraColors[0]},
		{rise, ex.Slow, func(p verdict.SizingPoint) measure.Estimate { return p.SlowVictimP99RiseT }, 1, colorGrey},
		{errs, ex.Slow, func(p verdict.SizingPoint) measure.Estimate { return p.SlowVictimErrorRate }, 100, colorGrey},
	}
	labelled := map[string]bool{}
	for _, sr := range series {
		var pts errPoints
		for _, p := range sc.Points {
			addErrPoint(&pts, p.Size, sr.get(p), sr.scale)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		l, _ := plotter.NewLine(pts.XYs)
		l.LineStyle = lineStyle(sr.c, 0, 2)
		gs := draw.GlyphStyle{Color: sr.c, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		scat, _ := plotter.NewScatter(pts.XYs)
		scat.GlyphStyle = gs
		eb, _ := plotter.NewYErrorBars(pts)
		eb.LineStyle = lineStyle(sr.c, 0, 1.2)
		sr.p.Add(l, eb, scat)
		if !labelled[sr.label] {
			labelled[sr.label] = true
			f.leg.Add(sr.label, l, scat)
		}
	}
	lo, hi := sc.Points[0].Size, sc.Points[len(sc.Points)-1].Size
	var ticks []plot.Tick
	for _, p := range sc.Points {
		ticks = append(ticks, plot.Tick{Value: p.Size, Label: p.Value})
	}
	pad := (hi - lo) * 0.04
	for _, p := range []*plot.Plot{rej, okp, rise, errs} {
		// A region spans halfway to the neighbouring sizes.
		for i, pt := range sc.Points {
			from, to := edge(sc.Points, i)
			switch {
			case pt.TooSmall:
				p.Add(spanShade{From: from, To: to, Color: colorTooSmall})
			case pt.Hurts:
				p.Add(spanShade{From: from, To: to, Color: colorHurts})
			}
		}
		if sc.LittleSize > 0 {
			p.Add(vline{X: float64(sc.LittleSize), Style: lineStyle(color.Black, 1, 1.5)})
		}
		p.X.Min, p.X.Max = lo-pad, hi+pad
		p.X.Label.Text = sc.Field
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		if p != rise || p.Y.Min > 0 {
			p.Y.Min = 0 // a p99 rise may be below zero: the baseline's p99 was the larger
		}
		if p.Y.Max <= 0 {
			p.Y.Max = 1
		}
		p.Y.Max *= 1.1
	}
	rise.Add(hline{Y: ex.P2MaxP99RiseT, Style: lineStyle(colorGrey, 2, 1)})
	f.leg.Add("Little's law size", vline{Style: lineStyle(color.Black, 1, 1.5)})
	f.panels = [][]*plot.Plot{{rej, okp}, {rise, errs}}
	return f
}

// edge returns the x span of point i: halfway to its neighbours.
func edge(pts []verdict.SizingPoint, i int) (float64, float64) {
	from, to := pts[i].Size, pts[i].Size
	if i > 0 {
		from = (pts[i-1].Size + pts[i].Size) / 2
	} else if len(pts) > 1 {
		from = pts[i].Size - (pts[1].Size-pts[0].Size)/2
	}
	if i+1 < len(pts) {
		to = (pts[i].Size + pts[i+1].Size) / 2
	} else if len(pts) > 1 {
		to = pts[i].Size + (pts[i].Size-pts[i-1].Size)/2
	}
	return from, to
}

// vline is a vertical line across a panel; it also draws as a legend thumb.
type vline struct {
	X     float64
	Style draw.LineStyle
}

func (v vline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(v.X)
	if c.ContainsX(x) {
		c.StrokeLine2(v.Style, x, c.Min.Y, x, c.Max.Y)
	}
}

// Thumbnail implements plot.Thumbnailer.
func (v vline) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(v.Style, c.Min.X, y, c.Max.X, y)
}
