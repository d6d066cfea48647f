package render

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// figure is a drawing of a fixed size.
type figure interface {
	size() (w, h vg.Length)
	draw(dc draw.Canvas)
}

const figureDPI = 96

// savePNG renders f into path (atomically).
func savePNG(path string, f figure) error {
	w, h := f.size()
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(figureDPI), vgimg.UseBackgroundColor(color.White))
	f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return fmt.Errorf("analysis: png %s: %w", path, err)
	}
	if err := WriteFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	return nil
}

// Colours: the culprit /a is red, the victim /b blue, a shared pool purple;
// other names take the remaining palette in sorted order.
var (
	colorA      = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorB      = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorShared = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colorGrey   = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	// colorLeftOut draws what no verdict uses (INVALID or damaged runs).
	colorLeftOut = color.RGBA{R: 0xaa, G: 0xaa, B: 0xaa, A: 0xff}
	faultShade   = color.NRGBA{R: 0xff, G: 0xa5, B: 0x00, A: 0x38}
	extraColors  = []color.Color{
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	}
)

// nameColor returns the colour of an endpoint or pool name.
func nameColor(name string, ex rundata.Expectations) color.Color {
	switch name {
	case ex.Culprit:
		return colorA
	case ex.Victim:
		return colorB
	case "shared":
		return colorShared
	}
	var h int
	for _, c := range name {
		h += int(c)
	}
	return extraColors[h%len(extraColors)]
}

// Dash patterns, used to tell series of the same colour apart.
var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}, {vg.Points(1), vg.Points(3)}, {vg.Points(10), vg.Points(4)}}

func lineStyle(c color.Color, dash int, width float64) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(width), Dashes: dashes[dash%len(dashes)]}
}

// newPanel returns a plot with the report's fonts.
func newPanel(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(4)
	p.Y.Label.Text = ylabel
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())
	return p
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(plot.DefaultFont, vg.Points(10))
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(28)
	return l
}

// addSeries adds xs/ys to p as lines, split into segments where y is NaN
// (or ≤ 0 on a log axis), with single points drawn as glyphs. It adds a
// legend entry to leg when label is not empty.
func addSeries(p *plot.Plot, leg *plot.Legend, label string, xs, ys []float64, sty draw.LineStyle, logY bool) {
	var seg plotter.XYs
	flush := func() {
		switch len(seg) {
		case 0:
		case 1:
			s, _ := plotter.NewScatter(seg)
			s.GlyphStyle = draw.GlyphStyle{Color: sty.Color, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
			p.Add(s)
		default:
			l, _ := plotter.NewLine(seg)
			l.LineStyle = sty
			p.Add(l)
		}
		seg = nil
	}
	for i := range xs {
		y := ys[i]
		if math.IsNaN(y) || math.IsInf(y, 0) || (logY && y <= 0) {
			flush()
			continue
		}
		seg = append(seg, plotter.XY{X: xs[i], Y: y})
	}
	flush()
	if label != "" && leg != nil {
		l := &plotter.Line{LineStyle: sty}
		leg.Add(label, l)
	}
}

// yRange returns min and max of the finite values of all series (positive
// only when logY), or ok false when there are none.
func yRange(logY bool, series ...[]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s {
			if math.IsNaN(v) || math.IsInf(v, 0) || (logY && v <= 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return lo, hi, !math.IsInf(lo, 0)
}

// setLogY makes p's Y axis logarithmic over [lo/1.5, hi·1.5], or over
// [1, 1000] without data, so the axis never sees a value ≤ 0.
func setLogY(p *plot.Plot, lo, hi float64, ok bool) {
	if !ok {
		lo, hi = 1, 1000
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	if p.Y.Max/p.Y.Min < 10 {
		mid := math.Sqrt(p.Y.Min * p.Y.Max)
		p.Y.Min, p.Y.Max = mid/4, mid*4
	}
}

// spanShade shades [From, To] of the x axis over the full panel height. It
// is not a DataRanger, so it never changes the axes.
type spanShade struct {
	From, To float64
	Color    color.Color
}

func (s spanShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(s.From), trX(s.To)
	pts := []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}
	c.FillPolygon(s.Color, c.ClipPolygonX(pts))
}

// phaseMarks draws a vertical dotted line at each boundary and, when Labels
// is set, the phase names along the top.
type phaseMarks struct {
	At     []float64 // phase starts, seconds
	Names  []string
	Labels bool
}

func (m phaseMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := lineStyle(colorGrey, 2, 0.8)
	ts := draw.TextStyle{Color: colorGrey, Font: font.From(plot.DefaultFont, vg.Points(10)), Handler: plot.DefaultTextHandler}
	for i, x := range m.At {
		px := trX(x)
		if !c.ContainsX(px) {
			continue
		}
		c.StrokeLine2(sty, px, c.Min.Y, px, c.Max.Y)
		if m.Labels && i < len(m.Names) {
			c.FillText(ts, vg.Point{X: px + vg.Points(3), Y: c.Max.Y - vg.Points(12)}, m.Names[i])
		}
	}
}

// titleText draws a figure title centred at the top of dc.
func titleText(dc draw.Canvas, s string, size float64) {
	ts := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(size)),
		Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
	dc.FillText(ts, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(6)}, s)
}
