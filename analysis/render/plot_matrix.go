package render

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type matrixMetric int

const (
	metricP99 matrixMetric = iota
	metricSuccess
)

// gridFig is a grid of panels with one legend at the top right.
type gridFig struct {
	title  string
	panels [][]*plot.Plot
	leg    plot.Legend
	w, h   vg.Length
}

func (f *gridFig) size() (vg.Length, vg.Length) { return f.w, f.h }

func (f *gridFig) draw(dc draw.Canvas) {
	titleText(dc, f.title, 15)
	tiles := draw.Tiles{Rows: len(f.panels), Cols: len(f.panels[0]), PadTop: vg.Points(34), PadBottom: vg.Points(6),
		PadLeft: vg.Points(6), PadRight: vg.Points(legendWidth), PadX: vg.Points(12), PadY: vg.Points(12)}
	cs := plot.Align(f.panels, tiles, dc)
	for i, row := range f.panels {
		for j, p := range row {
			p.Draw(cs[i][j])
		}
	}
	drawSideLegend(dc, cs[0][len(cs[0])-1], &f.leg)
}

// matrixAxes returns the conditions (role order) and modes of exp's runs.
func matrixAxes(exp *rundir.Experiment, ex rundata.Expectations) (conds, modes []string) {
	cs, ms := map[string]bool{}, map[string]bool{}
	for _, r := range exp.Runs {
		if len(r.Windows) > 0 {
			cs[r.Entry.Condition], ms[r.Entry.Mode] = true, true
		}
	}
	conds, modes = slices.Sorted(maps.Keys(cs)), slices.Sorted(maps.Keys(ms))
	sort.SliceStable(conds, func(i, j int) bool { return verdict.ConditionRank(ex, conds[i]) < verdict.ConditionRank(ex, conds[j]) })
	sort.SliceStable(modes, func(i, j int) bool { return verdict.ModeRank(modes[i]) < verdict.ModeRank(modes[j]) })
	return conds, modes
}

// comparisonFigure draws conditions × modes small multiples of one metric
// for the victim and the culprit, every repeat, on identical axes; nil when
// no run has windows.
func comparisonFigure(exp *rundir.Experiment, ex rundata.Expectations, m matrixMetric) figure {
	conds, modes := matrixAxes(exp, ex)
	if len(conds) == 0 {
		return nil
	}
	f := &gridFig{leg: newLegend(), w: vg.Length(4.5*float64(len(modes))+2.8) * vg.Inch, h: vg.Length(2.9*float64(len(conds))+0.6) * vg.Inch}
	name, unit, logY := "p99 latency", "p99 (ms)", true
	if m == metricSuccess {
		name, unit, logY = "success rate", "successful (%)", false
	}
	f.title = fmt.Sprintf("%s over time: /%s (victim, solid) and /%s (faulted, dashed); every repeat, runs left out (INVALID, damaged) thin grey", name, ex.Victim, ex.Culprit)
	var all [][]float64
	xmax := 1.0
	labelled := map[string]bool{}
	for _, cond := range conds {
		var row []*plot.Plot
		for _, mode := range modes {
			p := newPanel(cond+" / "+mode, unit)
			var runs, left int
			for _, r := range exp.Runs {
				if r.Entry.Condition != cond || r.Entry.Mode != mode || len(r.Windows) == 0 {
					continue
				}
				runs++
				// A run no verdict uses is drawn thin and grey, so that it
				// is seen and not taken for evidence.
				usable := r.Usable()
				if !usable {
					left++
				}
				origin := r.Origin()
				xmax = math.Max(xmax, r.End().Sub(origin).Seconds())
				if fs, ok := r.FaultStart(); ok && r.Entry.Repeat <= 1 {
					p.Add(spanShade{From: fs.Sub(origin).Seconds(), To: r.FaultEnd().Sub(origin).Seconds(), Color: faultShade})
				}
				for k, ep := range []string{ex.Victim, ex.Culprit} {
					s := seriesOf(&measure.Run{Data: r}, ep, origin)
					ys := s.p99
					if m == metricSuccess {
						ys = s.success
					}
					label, sty := "/"+ep, lineStyle(nameColor(ep, ex), k, 1.6-0.4*float64(k))
					if !usable {
						label, sty = "/"+ep+", run left out", lineStyle(colorLeftOut, k, 0.8)
					}
					var leg *plot.Legend
					if !labelled[label] {
						leg, labelled[label] = &f.leg, true
					}
					addSeries(p, leg, label, s.x, ys, sty, logY)
					all = append(all, ys)
				}
			}
			switch {
			case runs == 0:
				p.Title.Text += " — no run"
			case left == runs:
				p.Title.Text += " — no valid run"
			case left > 0:
				p.Title.Text += fmt.Sprintf(" — %d of %d runs left out (grey)", left, runs)
			}
			row = append(row, p)
		}
		f.panels = append(f.panels, row)
	}
	f.leg.Add("fault window", &plotter.Polygon{Color: faultShade})
	lo, hi, ok := yRange(logY, all...)
	for _, row := range f.panels {
		for _, p := range row {
			p.X.Min, p.X.Max = 0, xmax
			p.X.Label.Text = "time (s)"
			if logY {
				setLogY(p, lo, hi, ok)
			} else {
				p.Y.Min, p.Y.Max = 0, 105
			}
		}
	}
	return f
}
