package render

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// auditRGB is an opaque colour of the audit's map, shared by the heatmap
// and the page.
type auditRGB struct{ R, G, B uint8 }

func (c auditRGB) rgba() color.RGBA { return color.RGBA{R: c.R, G: c.G, B: c.B, A: 0xff} }

// The classes' colours. A DEGRADED cell's red runs from auditDegradedLo
// (just over the thresholds) to auditDegradedHi (a p99 rise of 1 T or
// half the requests failing).
var (
	auditIsolated    = auditRGB{0x7f, 0xc9, 0x7f}
	auditDegradedLo  = auditRGB{0xf2, 0x8b, 0x82}
	auditDegradedHi  = auditRGB{0xb7, 0x1c, 0x1c}
	auditExpected    = auditRGB{0xd4, 0xd4, 0xd4}
	auditExpectedDeg = auditRGB{0x80, 0x80, 0x80}
	auditNone        = auditRGB{0xf0, 0xf0, 0xf0}
	auditAborted     = auditRGB{0xff, 0x9f, 0x1c}
	auditMark        = auditRGB{0xb4, 0xb4, 0xb4}
	auditBlack       = auditRGB{0, 0, 0}
	auditWhite       = auditRGB{0xff, 0xff, 0xff}
)

// textOn is the text colour readable on bg: black on light, white on dark.
func textOn(bg auditRGB) auditRGB {
	if 0.299*float64(bg.R)+0.587*float64(bg.G)+0.114*float64(bg.B) < 140 {
		return auditWhite
	}
	return auditBlack
}

// auditSeverity is how hard a cell degraded, 0 to 1: its p99 rise in T or
// twice its error rate, whichever is larger; 0.5 without a number.
func auditSeverity(c verdict.AuditCell) float64 {
	s, any := 0.0, false
	if r := float64(c.P99RiseT); !math.IsNaN(r) && !math.IsInf(r, 0) {
		s, any = math.Max(s, r), true
	}
	if e := float64(c.ErrorRate); !math.IsNaN(e) && !math.IsInf(e, 0) {
		s, any = math.Max(s, 2*e), true
	}
	if !any {
		return 0.5
	}
	return math.Min(1, math.Max(0, s))
}

// auditFill is a cell's colour and whether it carries the mark of a cell
// without numbers (INVALID, SKIPPED).
func auditFill(c verdict.AuditCell) (auditRGB, bool) {
	switch c.Class {
	case verdict.CellIsolated:
		return auditIsolated, false
	case verdict.CellDegraded:
		t := auditSeverity(c)
		lerp := func(a, b uint8) uint8 { return uint8(math.Round(float64(a) + t*(float64(b)-float64(a)))) }
		return auditRGB{lerp(auditDegradedLo.R, auditDegradedHi.R), lerp(auditDegradedLo.G, auditDegradedHi.G), lerp(auditDegradedLo.B, auditDegradedHi.B)}, false
	case verdict.CellExpected:
		if c.Degraded {
			return auditExpectedDeg, false
		}
		return auditExpected, false
	case verdict.CellAborted:
		return auditAborted, false
	}
	return auditNone, true
}

// Sizes of the audit's heatmap, in points.
const (
	auditPad        = 12
	auditCellH      = 32
	auditMinCellW   = 58
	auditCellGap    = 1 // white between cells, each side
	auditLabelGap   = 8 // between row labels and the grid
	auditLegendGap  = 22
	auditLegendRow  = 16
	auditSwatch     = 12
	auditLabelRunes = 32 // longest endpoint or column name drawn in full
	auditTitleRunes = 90
)

// Layouts of the column labels.
const (
	colOneLine  = iota // "PAY slow" over the cell
	colTwoLines        // "PAY" over "slow"
	colRotated         // "PAY slow" upright, reading up
)

var (
	auditTitleStyle  = auditText(14)
	auditSubStyle    = auditText(10)
	auditLabelStyle  = auditText(10)
	auditCellStyle   = auditText(9)
	auditLegendStyle = auditText(9)
)

func auditText(size float64) draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

// auditLayout is the heatmap's geometry, in points from the figure's top
// left corner, y down.
type auditLayout struct {
	W, H         vg.Length // the figure, whole pixels at figureDPI
	Rows, Cols   int
	GridX        vg.Length // left edge of the grid
	GridTop      vg.Length // top edge of the grid
	CellW, CellH vg.Length
	HeaderTop    vg.Length // top of the column labels' band
	ColLabels    int       // colOneLine, colTwoLines or colRotated
	LegendX      vg.Length // left edge of the legend
}

// cell is the rectangle of endpoint i's cell under column j, gaps
// included: Min its top left corner, Max its bottom right (y down).
func (l auditLayout) cell(i, j int) vg.Rectangle {
	x0, y0 := l.GridX+vg.Length(j)*l.CellW, l.GridTop+vg.Length(i)*l.CellH
	return vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x0 + l.CellW, Y: y0 + l.CellH}}
}

// auditFigCell is one cell as drawn.
type auditFigCell struct {
	fill      auditRGB
	mark      bool      // INVALID, SKIPPED: a diagonal stroke
	lines     [2]string // above and below the centre; one line centred when the second is empty
	violation bool      // outlined
}

// auditFig is the heatmap of an audit's map.
type auditFig struct {
	title, subtitle string
	rows            []string
	cols            []string
	colDep, colRest []string
	cells           [][]auditFigCell
	legend          []auditLegendItem
	notes           []string
	lay             auditLayout
}

type auditLegendItem struct {
	fill      auditRGB
	fill2     *auditRGB // a second half (a range of reds)
	mark      bool
	violation bool
	text      string
}

// plainText is s with every control character (a terminal's escape, a
// line break) as a space.
func plainText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// figText makes a user's string drawable: control characters as spaces,
// at most n runes (an ellipsis marks a cut).
func figText(s string, n int) string {
	s = plainText(s)
	n = max(n, 2)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// auditCellLines are a cell's two lines of text: its p99 rise in T and
// its error rate, or its class when it has no number.
func auditCellLines(c verdict.AuditCell) [2]string {
	if !cellNumbers(c) || c.Class == verdict.CellInvalid || c.Class == verdict.CellSkipped {
		return [2]string{figText(orDash(c.Class), 12), ""}
	}
	second := errText(c.ErrorRate)
	if disagreement(c) != "" {
		second += fmt.Sprintf(" %d/%d", c.DegradedRuns, c.Runs)
	}
	return [2]string{riseText(c.P99RiseT), second}
}

// newAuditFig lays out m's heatmap: rows the endpoints, columns the
// faults, a legend on the right.
func newAuditFig(m *verdict.AuditMap) *auditFig {
	f := &auditFig{
		title: figText("Blast radius: "+m.Experiment, auditTitleRunes),
		subtitle: figText(fmt.Sprintf("%s, %s · mode %s · T = %s ms · each cell: p99 rise (T), fault-phase error rate, k/n runs degraded where they disagree",
			countNoun(len(m.Findings), "finding"), countNoun(len(m.Violations), "critical violation"), orDash(m.Mode), measure.FmtNum(m.TimeoutMs)), 2*auditTitleRunes),
	}
	for _, c := range m.Columns {
		// A long label loses the end of its dependency's name, not its
		// fault: the columns of one dependency must stay apart.
		label := columnLabel(c)
		if n := utf8.RuneCountInString(c.Fault); c.Dependency != "" && n > 0 && utf8.RuneCountInString(label) > auditLabelRunes {
			label = figText(c.Target(), auditLabelRunes-1-min(n, auditLabelRunes/2)) + " " + c.Fault
		}
		f.cols = append(f.cols, figText(label, auditLabelRunes))
		dep, rest := c.Target(), c.Fault
		if dep == "" || rest == "" {
			dep, rest = columnLabel(c), ""
		}
		f.colDep, f.colRest = append(f.colDep, figText(dep, auditLabelRunes)), append(f.colRest, figText(rest, auditLabelRunes))
	}
	anyCritical := false
	for i, ep := range m.Endpoints {
		crit := isCritical(m.Config, ep)
		anyCritical = anyCritical || crit
		label := figText(endpointLabel(ep), auditLabelRunes)
		if crit {
			label += " *"
		}
		f.rows = append(f.rows, label)
		row := make([]auditFigCell, len(m.Columns))
		for j := range m.Columns {
			c, ok := auditCell(m, i, j)
			if !ok {
				row[j] = auditFigCell{fill: auditNone, mark: true, lines: [2]string{"—", ""}}
				continue
			}
			fill, mark := auditFill(c)
			row[j] = auditFigCell{fill: fill, mark: mark, lines: auditCellLines(c), violation: violates(crit, c)}
		}
		f.cells = append(f.cells, row)
	}
	lo := auditDegradedLo
	f.legend = []auditLegendItem{
		{fill: auditIsolated, text: "ISOLATED: does not call it, stayed at its baseline"},
		{fill: auditDegradedHi, fill2: &lo, text: "DEGRADED: does not call it, yet degraded (darker: worse)"},
		{fill: auditExpected, text: "EXPECTED: calls it, within the thresholds"},
		{fill: auditExpectedDeg, text: "EXPECTED: calls it, degraded"},
		{fill: auditNone, mark: true, text: "INVALID (no valid run) or SKIPPED (not run)"},
		{fill: auditAborted, text: "ABORTED: a stop condition removed the fault"},
	}
	if anyCritical {
		f.legend = append(f.legend, auditLegendItem{fill: auditWhite, violation: true, text: "* critical endpoint; outlined: --check fails"})
	}
	f.notes = []string{"cell text: p99 rise over the baseline in T,", "then the fault phase's error rate"}
	f.lay = f.layout()
	return f
}

// layout sizes the figure to its labels: cells as wide as their widest
// text, column labels on one line, on two, or upright when neither fits.
func (f *auditFig) layout() auditLayout {
	l := auditLayout{Rows: len(f.rows), Cols: len(f.cols), CellH: auditCellH}
	if len(f.cells) == 0 || l.Cols == 0 {
		l.Rows, l.Cols = 0, 0
	}
	cellW := vg.Length(auditMinCellW)
	for _, row := range f.cells {
		for _, c := range row {
			for _, s := range c.lines {
				cellW = max(cellW, auditCellStyle.Width(s)+10)
			}
		}
	}
	l.CellW = cellW
	lineH := auditLabelStyle.Height("Mg")
	var oneW, twoW vg.Length
	for j := range f.cols {
		oneW = max(oneW, auditLabelStyle.Width(f.cols[j]))
		twoW = max(twoW, auditLabelStyle.Width(f.colDep[j]), auditLabelStyle.Width(f.colRest[j]))
	}
	var headerH vg.Length
	switch {
	case oneW <= cellW-6:
		l.ColLabels, headerH = colOneLine, lineH+8
	case twoW <= cellW-6:
		l.ColLabels, headerH = colTwoLines, 2*lineH+10
	default:
		l.ColLabels, headerH = colRotated, oneW+10
	}
	l.HeaderTop = auditPad + auditTitleStyle.Height("Mg") + 4 + auditSubStyle.Height("Mg") + 10
	l.GridTop = l.HeaderTop + headerH
	var rowW vg.Length
	for _, r := range f.rows {
		rowW = max(rowW, auditLabelStyle.Width(r))
	}
	l.GridX = auditPad + rowW + auditLabelGap
	gridW, gridH := vg.Length(l.Cols)*l.CellW, vg.Length(l.Rows)*l.CellH
	if l.Rows == 0 {
		gridW, gridH = auditLabelStyle.Width("the map has no cells"), lineH
	}
	l.LegendX = l.GridX + gridW + auditLegendGap
	var legW vg.Length
	for _, it := range f.legend {
		legW = max(legW, auditSwatch+6+auditLegendStyle.Width(it.text))
	}
	for _, n := range f.notes {
		legW = max(legW, auditLegendStyle.Width(n))
	}
	legH := vg.Length(len(f.legend)+len(f.notes))*auditLegendRow + 6
	w := max(l.LegendX+legW, auditPad+auditTitleStyle.Width(f.title), auditPad+auditSubStyle.Width(f.subtitle)) + auditPad
	h := max(l.GridTop+gridH, l.GridTop+legH) + auditPad
	l.W, l.H = wholePixels(w), wholePixels(h)
	return l
}

// wholePixels rounds v up to a whole number of pixels at figureDPI, so
// the PNG is exactly the layout's size.
func wholePixels(v vg.Length) vg.Length {
	return vg.Length(math.Ceil(float64(v.Dots(figureDPI)))) * vg.Inch / figureDPI
}

func (f *auditFig) size() (vg.Length, vg.Length) { return f.lay.W, f.lay.H }

func (f *auditFig) draw(dc draw.Canvas) {
	l := f.lay
	// pt converts the layout's coordinates (from the top left, y down) to
	// the canvas's.
	pt := func(x, y vg.Length) vg.Point { return vg.Point{X: dc.Min.X + x, Y: dc.Max.Y - y} }
	at := func(sty draw.TextStyle, c color.Color, xa draw.XAlignment, ya draw.YAlignment) draw.TextStyle {
		sty.Color, sty.XAlign, sty.YAlign = c, xa, ya
		return sty
	}
	dc.FillText(at(auditTitleStyle, color.Black, draw.XLeft, draw.YTop), pt(auditPad, auditPad), f.title)
	dc.FillText(at(auditSubStyle, colorGrey, draw.XLeft, draw.YTop), pt(auditPad, auditPad+auditTitleStyle.Height("Mg")+4), f.subtitle)

	if l.Rows == 0 {
		dc.FillText(at(auditLabelStyle, colorGrey, draw.XLeft, draw.YTop), pt(l.GridX, l.GridTop), "the map has no cells")
	}
	// Column labels, bottom-aligned on the grid's top edge.
	label := at(auditLabelStyle, color.Black, draw.XCenter, draw.YBottom)
	lineH := auditLabelStyle.Height("Mg")
	for j := 0; j < l.Cols; j++ {
		r := l.cell(0, j)
		cx := (r.Min.X + r.Max.X) / 2
		switch l.ColLabels {
		case colOneLine:
			dc.FillText(label, pt(cx, l.GridTop-4), f.cols[j])
		case colTwoLines:
			dc.FillText(label, pt(cx, l.GridTop-4-lineH-2), f.colDep[j])
			dc.FillText(label, pt(cx, l.GridTop-4), f.colRest[j])
		default:
			up := at(auditLabelStyle, color.Black, draw.XLeft, draw.YCenter)
			up.Rotation = math.Pi / 2
			dc.FillText(up, pt(cx, l.GridTop-5), f.cols[j])
		}
	}
	// Row labels, right-aligned against the grid.
	rowSty := at(auditLabelStyle, color.Black, draw.XRight, draw.YCenter)
	for i := 0; i < l.Rows; i++ {
		r := l.cell(i, 0)
		dc.FillText(rowSty, pt(l.GridX-auditLabelGap, (r.Min.Y+r.Max.Y)/2), f.rows[i])
	}
	for i := 0; i < l.Rows; i++ {
		for j := 0; j < l.Cols; j++ {
			f.drawCell(dc, pt, l.cell(i, j), f.cells[i][j])
		}
	}
	f.drawLegend(dc, pt)
}

// rect is the polygon of r (layout coordinates) inset by d.
func rect(pt func(x, y vg.Length) vg.Point, r vg.Rectangle, d vg.Length) []vg.Point {
	return []vg.Point{pt(r.Min.X+d, r.Min.Y+d), pt(r.Max.X-d, r.Min.Y+d), pt(r.Max.X-d, r.Max.Y-d), pt(r.Min.X+d, r.Max.Y-d)}
}

func (f *auditFig) drawCell(dc draw.Canvas, pt func(x, y vg.Length) vg.Point, r vg.Rectangle, c auditFigCell) {
	dc.FillPolygon(c.fill.rgba(), rect(pt, r, auditCellGap))
	if c.mark {
		a, b := pt(r.Min.X+auditCellGap+3, r.Max.Y-auditCellGap-3), pt(r.Max.X-auditCellGap-3, r.Min.Y+auditCellGap+3)
		dc.StrokeLine2(draw.LineStyle{Color: auditMark.rgba(), Width: vg.Points(1)}, a.X, a.Y, b.X, b.Y)
	}
	if c.violation {
		pts := rect(pt, r, auditCellGap+1)
		dc.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(2)}, append(pts, pts[0]))
	}
	ink := textOn(c.fill).rgba()
	if c.mark {
		ink = colorGrey
	}
	cx, cy := (r.Min.X+r.Max.X)/2, (r.Min.Y+r.Max.Y)/2
	sty := auditCellStyle
	sty.Color, sty.XAlign = ink, draw.XCenter
	if c.lines[1] == "" {
		sty.YAlign = draw.YCenter
		dc.FillText(sty, pt(cx, cy), c.lines[0])
		return
	}
	// The two lines leave the cell's centre clear: its colour shows there.
	sty.YAlign = draw.YBottom
	dc.FillText(sty, pt(cx, cy-2.5), c.lines[0])
	sty.YAlign = draw.YTop
	dc.FillText(sty, pt(cx, cy+2.5), c.lines[1])
}

func (f *auditFig) drawLegend(dc draw.Canvas, pt func(x, y vg.Length) vg.Point) {
	l := f.lay
	sty := auditLegendStyle
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	y := l.GridTop + 2
	for _, it := range f.legend {
		sw := vg.Rectangle{Min: vg.Point{X: l.LegendX, Y: y}, Max: vg.Point{X: l.LegendX + auditSwatch, Y: y + auditSwatch}}
		dc.FillPolygon(it.fill.rgba(), rect(pt, sw, 0))
		if it.fill2 != nil {
			half := sw
			half.Max.X = sw.Min.X + auditSwatch/2
			dc.FillPolygon(it.fill2.rgba(), rect(pt, half, 0))
		}
		if it.mark {
			a, b := pt(sw.Min.X+1, sw.Max.Y-1), pt(sw.Max.X-1, sw.Min.Y+1)
			dc.StrokeLine2(draw.LineStyle{Color: auditMark.rgba(), Width: vg.Points(1)}, a.X, a.Y, b.X, b.Y)
		}
		if it.violation {
			pts := rect(pt, sw, 1)
			dc.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(2)}, append(pts, pts[0]))
		}
		dc.FillText(sty, pt(l.LegendX+auditSwatch+6, y+auditSwatch/2), it.text)
		y += auditLegendRow
	}
	sty.Color = colorGrey
	for _, n := range f.notes {
		dc.FillText(sty, pt(l.LegendX, y+auditSwatch/2), n)
		y += auditLegendRow
	}
}
