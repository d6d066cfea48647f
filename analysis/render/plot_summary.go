package render

import (
	"fmt"
	"image/color"
	"math"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// errPoints are points with asymmetric y errors (CI bounds).
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// summaryFigure plots the victim's fault-phase p99 and error rate per
// condition (x) and mode (marker), mean with the bootstrap CI as error bars.
func summaryFigure(s *verdict.Summary) figure {
	if len(s.Cells) == 0 {
		return nil
	}
	ex := s.Expectations
	var conds, modes []string
	seenC, seenM := map[string]bool{}, map[string]bool{}
	for _, c := range s.Cells {
		if !seenC[c.Condition] {
			seenC[c.Condition] = true
			conds = append(conds, c.Condition)
		}
		if !seenM[c.Mode] {
			seenM[c.Mode] = true
			modes = append(modes, c.Mode)
		}
	}
	f := &gridFig{leg: newLegend(), w: 14 * vg.Inch, h: 5.5 * vg.Inch,
		title: fmt.Sprintf("/%s in the fault phase: mean over the valid repeats (n); bars = 95 %% bootstrap CI, drawn where n ≥ %d; × = no valid run", ex.Victim, measure.MinRepeatsForCI)}
	p99 := newPanel("/"+ex.Victim+" fault-phase p99", "p99 (ms)")
	errp := newPanel("/"+ex.Victim+" fault-phase error rate", "errors (%)")
	ticks := make([]plot.Tick, len(conds))
	for i, c := range conds {
		ticks[i] = plot.Tick{Value: float64(i), Label: c}
	}
	modeColors := []color.Color{colorShared, extraColors[0], colorGrey, extraColors[1]}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}}
	for mi, mode := range modes {
		off := 0.3 * (float64(mi) - float64(len(modes)-1)/2) / math.Max(1, float64(len(modes)-1))
		var a, b errPoints
		var counts, none plotter.XYLabels
		for ci, cond := range conds {
			c := verdict.FindCell(s.Cells, cond, mode)
			if c == nil {
				continue
			}
			x := float64(ci) + off
			if len(c.Runs) == 0 {
				none.XYs = append(none.XYs, plotter.XY{X: x, Y: 0})
				none.Labels = append(none.Labels, "×")
				continue
			}
			addErrPoint(&a, x, c.VictimP99Ms, 1)
			addErrPoint(&b, x, c.VictimErrorRate, 100)
			if e := c.VictimP99Ms; e.Defined() {
				counts.XYs = append(counts.XYs, plotter.XY{X: x, Y: e.Mean})
				counts.Labels = append(counts.Labels, fmt.Sprintf("  n=%d", len(c.Runs)))
			}
		}
		for _, l := range []struct {
			pts  plotter.XYLabels
			p    *plot.Plot
			size vg.Length
		}{{counts, p99, 0}, {none, p99, vg.Points(18)}, {none, errp, vg.Points(18)}} {
			if len(l.pts.XYs) == 0 {
				continue
			}
			if lb, err := plotter.NewLabels(l.pts); err == nil {
				for i := range lb.TextStyle {
					lb.TextStyle[i].Color = colorGrey
					if l.size > 0 {
						lb.TextStyle[i].Font.Size = l.size
						lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
					}
				}
				l.p.Add(lb)
			}
		}
		gs := draw.GlyphStyle{Color: modeColors[mi%len(modeColors)], Radius: vg.Points(5), Shape: shapes[mi%len(shapes)]}
		for _, pair := range []struct {
			p   *plot.Plot
			pts errPoints
		}{{p99, a}, {errp, b}} {
			if len(pair.pts.XYs) == 0 {
				continue
			}
			sc, _ := plotter.NewScatter(pair.pts.XYs)
			sc.GlyphStyle = gs
			eb, _ := plotter.NewYErrorBars(pair.pts)
			eb.LineStyle = lineStyle(gs.Color, 0, 1.5)
			eb.CapWidth = vg.Points(8)
			pair.p.Add(eb, sc)
		}
		sc := &plotter.Scatter{GlyphStyle: gs}
		f.leg.Add(mode, sc)
	}
	for _, p := range []*plot.Plot{p99, errp} {
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.6, float64(len(conds))-0.4
		p.X.Label.Text = "condition"
		p.Y.Min = 0
		if p.Y.Max <= 0 {
			p.Y.Max = 1
		}
		p.Y.Max *= 1.1
	}
	f.panels = [][]*plot.Plot{{p99, errp}}
	return f
}

// addErrPoint appends e·scale with its CI (zero-width without one).
func addErrPoint(pts *errPoints, x float64, e measure.Estimate, scale float64) {
	if !e.Defined() {
		return
	}
	y := e.Mean * scale
	lo, hi := 0.0, 0.0
	if e.HasCI() {
		lo, hi = math.Max(0, y-e.Lo*scale), math.Max(0, e.Hi*scale-y)
	}
	pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: y})
	pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{lo, hi})
}
