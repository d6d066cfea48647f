package render

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	colorRecovered = color.NRGBA{R: 0x17, G: 0x6d, B: 0x2a, A: 0xff}
	colorDead      = color.NRGBA{R: 0xb0, G: 0x00, B: 0x20, A: 0xff}
)

// recoveryMarks draws the fault's end and the run's recovery on a panel:
// a solid line where the fault ended, and a green line where every
// endpoint was back at its baseline ("back after 1 T"), or a red note
// "did not recover" at the end of the recovery phase. Labels only where
// Labels is set.
type recoveryMarks struct {
	FaultEnd, Back, End float64 // seconds; Back NaN when not back
	Note                string
	Dead, Labels        bool
}

func (m recoveryMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	text := func(col color.Color, x vg.Length, dy float64, s string, align draw.XAlignment) {
		if !m.Labels {
			return
		}
		ts := draw.TextStyle{Color: col, Font: font.From(plot.DefaultFont, vg.Points(10)), Handler: plot.DefaultTextHandler, XAlign: align}
		c.FillText(ts, vg.Point{X: x, Y: c.Max.Y - vg.Points(dy)}, s)
	}
	if x := trX(m.FaultEnd); c.ContainsX(x) {
		c.StrokeLine2(lineStyle(color.NRGBA{R: 0x40, G: 0x40, B: 0x40, A: 0xff}, 0, 1.4), x, c.Min.Y, x, c.Max.Y)
		text(color.Black, x-vg.Points(3), 26, "fault ends", draw.XRight)
	}
	switch {
	case m.Dead:
		text(colorDead, trX(m.End)-vg.Points(3), 40, m.Note, draw.XRight)
	case !math.IsNaN(m.Back):
		if x := trX(m.Back); c.ContainsX(x) {
			c.StrokeLine2(lineStyle(colorRecovered, 0, 1.6), x, c.Min.Y, x, c.Max.Y)
			text(colorRecovered, x+vg.Points(3), 40, m.Note, draw.XLeft)
		}
	case m.Note != "":
		text(colorGrey, trX(m.End)-vg.Points(3), 40, m.Note, draw.XRight)
	}
}

// addRecoveryMarks marks the fault's end and the recovery on the latency
// and success panels (labels on the first).
func addRecoveryMarks(panels []*plot.Plot, r *measure.Run, ex rundata.Expectations, origin time.Time) {
	rec := r.Recovery(ex)
	if rec == nil {
		return
	}
	fe := r.Data.FaultEnd()
	m := recoveryMarks{FaultEnd: fe.Sub(origin).Seconds(), Back: math.NaN(), End: r.Data.End().Sub(origin).Seconds()}
	if span, ok := r.Data.PhaseSpan(rundata.PhaseRecovery); ok {
		m.End = span.End.Sub(origin).Seconds()
	}
	switch {
	case !rec.Recovered:
		m.Dead = true
		m.Note = "did not recover"
		for _, e := range rec.Endpoints {
			if e.Judged && !e.Recovered {
				m.Note += fmt.Sprintf(": /%s %s %% errors, p99 %s ms", e.Endpoint, words.FmtHuman(100*float64(e.LastErrorRate)), words.FmtHuman(float64(e.LastP99Ms)))
				break
			}
		}
	case !rec.Judged:
		m.Note = "recovery: cannot tell (phase too short)"
	default:
		back := fe.Add(time.Duration(float64(rec.TimeT) * float64(r.Data.Meta.Timeout)))
		m.Back = back.Sub(origin).Seconds()
		m.Note = fmt.Sprintf("back at baseline after %s T", words.FmtHuman(float64(rec.TimeT)))
	}
	for i, p := range panels {
		mi := m
		mi.Labels = i == 0
		p.Add(mi)
	}
}
