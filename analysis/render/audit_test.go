package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"html"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot/vg"
)

const hostile = `<script>alert("x")</script>`

var nan = measure.Num(math.NaN())

// synthAudit is an audit map of nEP endpoints × nDep dependencies × two
// faults (slow, failing) with every class. Endpoint i calls dependency
// i mod nDep. With nEP ≥ 4 and nDep ≥ 3:
//
//	(0, DB slow)     DEGRADED, /checkout is critical: a violation
//	(3, CACHE slow)  DEGRADED, the hostile endpoint, error rate NaN
//	(1, PAY slow)    ISOLATED
//	(0, DB failing)  ISOLATED
//	(0, PAY slow)    EXPECTED, degraded (checkout calls PAY)
//	(0, PAY failing) EXPECTED
//	(1, DB failing)  EXPECTED, degraded (cart calls DB)
//	(2, PAY failing) INVALID, numbers NaN
//	(1, last)        ABORTED with a trigger
//	(2, last)        SKIPPED
func synthAudit(nEP, nDep int) *verdict.AuditMap {
	eps := []string{"checkout", "cart", "search", hostile, "profile", "orders", "inventory", "reviews", "login", "health"}[:nEP]
	deps := []string{"PAY", "DB", "CACHE", "AUTH", "MAIL", "QUEUE"}[:nDep]
	m := &verdict.AuditMap{
		Experiment: "shop-audit", Mode: "shared", TimeoutMs: 1000, Endpoints: eps, Arrivals: "poisson", Declared: map[string][]string{},
		Config: rundata.Audit{
			Faults: []string{rundata.AuditSlow, rundata.AuditFailing}, Critical: []string{"checkout"},
			Calls: map[string][]string{},
			Abort: []rundata.AbortRule{
				{ErrorRate: 0.5, For: 500 * time.Millisecond},
				{Probe: "http://health.local/ready?a=1&b=<2>", For: time.Second},
			},
		},
	}
	for _, d := range deps {
		for _, f := range []string{rundata.AuditSlow, rundata.AuditFailing} {
			m.Columns = append(m.Columns, verdict.AuditColumn{Condition: f + "-" + d, Dependency: d, Fault: f})
		}
	}
	graph := &rundata.CallGraph{Requests: 20, Rate: 20, Edges: map[string][]string{}}
	for i, ep := range eps {
		dep := deps[i%nDep]
		if ep != "search" { // declares nothing: the audit measures it
			m.Declared[ep] = []string{dep}
		}
		if ep == "checkout" {
			m.Config.Calls[ep] = []string{dep}
		}
		graph.Edges[ep] = []string{dep}
		graph.Endpoints = append(graph.Endpoints, rundata.EndpointCalls{Endpoint: ep, OK: 20, Calls: map[string]float64{dep: 1}})
		m.Control = append(m.Control, verdict.AuditControl{Endpoint: ep, P99Ms: 12.5, P99RiseT: 0.004, ErrorRate: 0, NoiseT: 0.004})
		if ep == hostile {
			m.Control[i].P99RiseT, m.Control[i].ErrorRate, m.Control[i].NoiseT = nan, nan, nan
		}
		row := make([]verdict.AuditCell, len(m.Columns))
		for j, col := range m.Columns {
			c := verdict.AuditCell{Calls: col.Dependency == dep, BaselineP99Ms: 12.5, FaultP99Ms: 14, P99RiseT: 0.0015,
				ErrorRate: 0, ErrorPoints: 0, TimeToDegradeS: nan, Runs: 3, Class: verdict.CellIsolated}
			if c.Calls {
				c.Class, c.Degraded, c.FaultP99Ms, c.P99RiseT, c.ErrorRate, c.ErrorPoints, c.TimeToDegradeS = verdict.CellExpected, true, 912, 0.9, 0.2, 20, 0.4
				if col.Fault == rundata.AuditFailing {
					c.Degraded, c.FaultP99Ms, c.P99RiseT, c.ErrorRate, c.ErrorPoints, c.TimeToDegradeS = false, 13, 0.0005, 0.004, 0.4, nan
				}
			}
			row[j] = c
		}
		m.Cells = append(m.Cells, row)
	}
	set := func(i, j int, f func(c *verdict.AuditCell)) {
		if i < nEP && j < len(m.Columns) {
			f(&m.Cells[i][j])
		}
	}
	finding := func(i, j int, summary, resource string) {
		if i >= nEP || j >= len(m.Columns) {
			return
		}
		col := m.Columns[j]
		m.Findings = append(m.Findings, verdict.AuditFinding{Endpoint: eps[i], Dependency: col.Dependency, Fault: col.Fault,
			Condition: col.Condition, Summary: summary, Resource: resource})
	}
	set(0, 2, func(c *verdict.AuditCell) {
		c.Class, c.Degraded, c.FaultP99Ms, c.P99RiseT, c.ErrorRate, c.ErrorPoints, c.TimeToDegradeS = verdict.CellDegraded, true, 852.5, 0.84, 0.31, 30.6, 0.3
		c.Resource, c.Detail = "pool core", "pool core full 0.3 s after fault start"
		c.Failures, c.DegradedRuns = "30 % rejected by a pool (503 X-Reject: pool), 1 % unanswered within the client's timeout", 3
	})
	finding(0, 2, "/checkout degraded when DB was slow: p99 +0.84 T, 31 % errors after 0.3 s; ran out first: pool core", "pool core")
	set(3, 4, func(c *verdict.AuditCell) {
		c.Class, c.Degraded, c.FaultP99Ms, c.P99RiseT, c.ErrorRate, c.ErrorPoints = verdict.CellDegraded, true, 1712.5, 1.7, nan, nan
		c.Resource, c.Detail = "connections shared | <i>", "waits"
	})
	finding(3, 4, "/"+hostile+" degraded when CACHE was slow: p99 +1.7 T", "connections shared | <i>")
	set(1, 3, func(c *verdict.AuditCell) {
		c.Degraded, c.FaultP99Ms, c.P99RiseT, c.ErrorRate, c.ErrorPoints, c.TimeToDegradeS = true, 13, 0.0005, 0.12, 11.6, 0.2
		c.DegradedRuns = 2 // the runs disagree
	})
	set(2, 1, func(c *verdict.AuditCell) {
		*c = verdict.AuditCell{Class: verdict.CellInvalid, BaselineP99Ms: nan, FaultP99Ms: nan, P99RiseT: nan, ErrorRate: nan,
			ErrorPoints: nan, TimeToDegradeS: nan, Detail: "no valid run: canary p99 over its limit"}
	})
	last := len(m.Columns) - 1
	set(1, last, func(c *verdict.AuditCell) {
		c.Class, c.FaultP99Ms, c.P99RiseT, c.ErrorRate, c.Aborted = verdict.CellAborted, 1300, 1.29, 0.82, "/cart error rate 0.82 over the last 500ms (41 of 50)"
	})
	set(2, last, func(c *verdict.AuditCell) {
		*c = verdict.AuditCell{Class: verdict.CellSkipped, BaselineP99Ms: nan, FaultP99Ms: nan, P99RiseT: nan, ErrorRate: nan,
			ErrorPoints: nan, TimeToDegradeS: nan}
	})
	m.Violations = []string{}
	for i, ep := range eps {
		for j, col := range m.Columns {
			if violates(isCritical(m.Config, ep), m.Cells[i][j]) {
				m.Violations = append(m.Violations, fmt.Sprintf("/%s × %s: %s", ep, columnLabel(col), m.Cells[i][j].Class))
			}
		}
	}
	if nEP >= 2 && nDep >= 2 {
		graph.Edges["cart"] = append(graph.Edges["cart"], "PAY")
		graph.Endpoints[1].Calls["PAY"] = 0.5
		m.GraphDiffs = []string{"cart calls PAY (measured), not declared"}
	}
	if nEP >= 3 {
		graph.Failed = map[string]string{"search": "3 of 20 requests answered 503"}
	}
	m.CallGraph = graph
	return m
}

func TestSynthAuditHasEveryClass(t *testing.T) {
	m := synthAudit(4, 3)
	seen := map[string]bool{}
	for _, row := range m.Cells {
		for _, c := range row {
			seen[c.Class] = true
		}
	}
	for _, c := range []string{verdict.CellIsolated, verdict.CellDegraded, verdict.CellExpected, verdict.CellInvalid, verdict.CellAborted, verdict.CellSkipped} {
		if !seen[c] {
			t.Errorf("the synthetic map has no %s cell", c)
		}
	}
	if len(m.Findings) != 2 || len(m.Violations) != 1 {
		t.Fatalf("findings %d, violations %v", len(m.Findings), m.Violations)
	}
}

// writeAudit writes m into a new folder and returns it.
func writeAudit(t *testing.T, m *verdict.AuditMap) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	if err := WriteAudit(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func sameNum(a, b measure.Num) bool {
	return a == b || (math.IsNaN(float64(a)) && math.IsNaN(float64(b)))
}

func TestWriteAuditJSONRoundTrip(t *testing.T) {
	m := synthAudit(4, 3)
	dir := writeAudit(t, m)
	b, err := os.ReadFile(filepath.Join(dir, AuditJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	quoted := strings.ReplaceAll(hostile, `"`, `\"`)
	if !bytes.Contains(b, []byte(`"time_to_degrade_s": null`)) || !bytes.Contains(b, []byte(quoted)) {
		t.Errorf("audit.json lacks a NaN as null or the endpoint %s", hostile)
	}
	var got verdict.AuditMap
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("audit.json does not decode into an AuditMap: %v", err)
	}
	if again, _ := MarshalAudit(&got); !bytes.Equal(again, b) {
		t.Error("audit.json decoded and encoded again differs")
	}
	if len(got.Cells) != len(m.Cells) {
		t.Fatalf("%d rows, want %d", len(got.Cells), len(m.Cells))
	}
	for i := range m.Cells {
		for j, w := range m.Cells[i] {
			g := got.Cells[i][j]
			for k, pair := range [][2]measure.Num{{g.BaselineP99Ms, w.BaselineP99Ms}, {g.FaultP99Ms, w.FaultP99Ms}, {g.P99RiseT, w.P99RiseT},
				{g.ErrorRate, w.ErrorRate}, {g.ErrorPoints, w.ErrorPoints}, {g.TimeToDegradeS, w.TimeToDegradeS}} {
				if !sameNum(pair[0], pair[1]) {
					t.Errorf("cell %d,%d number %d: %v, want %v", i, j, k, pair[0], pair[1])
				}
			}
			g.BaselineP99Ms, g.FaultP99Ms, g.P99RiseT, g.ErrorRate, g.ErrorPoints, g.TimeToDegradeS = 0, 0, 0, 0, 0, 0
			w.BaselineP99Ms, w.FaultP99Ms, w.P99RiseT, w.ErrorRate, w.ErrorPoints, w.TimeToDegradeS = 0, 0, 0, 0, 0, 0
			if !reflect.DeepEqual(g, w) {
				t.Errorf("cell %d,%d: %+v, want %+v", i, j, g, w)
			}
		}
	}
	if len(got.Control) != len(m.Control) {
		t.Fatalf("%d control rows, want %d", len(got.Control), len(m.Control))
	}
	for i, w := range m.Control {
		g := got.Control[i]
		if g.Endpoint != w.Endpoint || !sameNum(g.P99Ms, w.P99Ms) || !sameNum(g.P99RiseT, w.P99RiseT) || !sameNum(g.ErrorRate, w.ErrorRate) {
			t.Errorf("control %d: %+v, want %+v", i, g, w)
		}
	}
	want := *m
	got.Cells, want.Cells, got.Control, want.Control = nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("audit.json round trip:\n got %+v\nwant %+v", got, want)
	}
}

// TestAuditLeavesMapAlone: rendering a map does not change it (the
// configuration's defaults are filled in on a copy).
func TestAuditLeavesMapAlone(t *testing.T) {
	m := synthAudit(4, 3)
	before, _ := MarshalAudit(m)
	_, _ = renderAuditMarkdown(m), renderAuditHTML(m)
	_ = newAuditFig(m)
	if err := PrintAudit(io.Discard, m); err != nil {
		t.Fatal(err)
	}
	if after, _ := MarshalAudit(m); !bytes.Equal(after, before) {
		t.Errorf("rendering changed the map: stop condition %+v", m.Config.Abort[0])
	}
}

// decodePNG reads a PNG file.
func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// centre is the pixel at the centre of the heatmap's cell i, j.
func centre(img image.Image, l auditLayout, i, j int) (r, g, b int) {
	c := l.cell(i, j)
	x, y := ((c.Min.X + c.Max.X) / 2).Dots(figureDPI), ((c.Min.Y + c.Max.Y) / 2).Dots(figureDPI)
	r32, g32, b32, _ := img.At(int(x), int(y)).RGBA()
	return int(r32 >> 8), int(g32 >> 8), int(b32 >> 8)
}

func reddish(r, g, b int) bool   { return r > 150 && r > g+50 && r > b+50 }
func greenish(r, g, b int) bool  { return g > 150 && g > r+40 && g > b+40 }
func greyish(r, g, b int) bool   { return max(r, g, b)-min(r, g, b) < 12 && r < 235 }
func orangeish(r, g, b int) bool { return r > 220 && g > 110 && g < 200 && b < 80 }

func TestAuditMapPNG(t *testing.T) {
	for _, tc := range []struct {
		eps, deps int
		file      bool // through WriteAudit
	}{{4, 3, true}, {10, 6, false}, {1, 1, false}} {
		name := fmt.Sprintf("%dx%d", tc.eps, 2*tc.deps)
		t.Run(name, func(t *testing.T) {
			m := synthAudit(tc.eps, tc.deps)
			if tc.eps == 1 {
				m.Columns, m.Cells = m.Columns[:1], [][]verdict.AuditCell{m.Cells[0][:1]}
				m.Cells[0][0] = verdict.AuditCell{Class: verdict.CellDegraded, Degraded: true, P99RiseT: 0.5, ErrorRate: 0.1, TimeToDegradeS: 1}
				m.Findings = []verdict.AuditFinding{{Endpoint: "checkout", Dependency: "PAY", Fault: "slow", Condition: "slow-PAY", Summary: "/checkout degraded when PAY was slow"}}
				m.Violations = []string{"/checkout × PAY slow: DEGRADED"}
			}
			path := filepath.Join(t.TempDir(), AuditMapFile)
			if tc.file {
				path = filepath.Join(writeAudit(t, m), AuditMapFile)
			} else if err := savePNG(path, newAuditFig(m)); err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, path)
			f := newAuditFig(m)
			l := f.lay
			if l.Rows != tc.eps || l.Cols != len(m.Columns) {
				t.Fatalf("layout %d × %d, want %d × %d", l.Rows, l.Cols, tc.eps, len(m.Columns))
			}
			w, h := img.Bounds().Dx(), img.Bounds().Dy()
			if float64(w) != math.Round(float64(l.W.Dots(figureDPI))) || float64(h) != math.Round(float64(l.H.Dots(figureDPI))) {
				t.Errorf("image %d × %d px, layout %v × %v", w, h, l.W, l.H)
			}
			// The grid fills the image but for labels and the legend: it is
			// cols cells wide and rows tall, each at least 58 × 32 points.
			gridW, gridH := int((vg.Length(l.Cols) * l.CellW).Dots(figureDPI)), int((vg.Length(l.Rows) * l.CellH).Dots(figureDPI))
			if gridW > w || gridH > h || l.CellW < auditMinCellW || l.CellH < auditCellH {
				t.Errorf("grid %d × %d px in an image of %d × %d; cells %v × %v", gridW, gridH, w, h, l.CellW, l.CellH)
			}
			if r := float64(w) / float64(h); r < 0.5 || r > 6 {
				t.Errorf("aspect %.2f (%d × %d px)", r, w, h)
			}
			// Legible: every cell's text and every row label fits its room,
			// and a column label fits its cell unless it stands upright.
			for i, row := range f.cells {
				for j, c := range row {
					for _, s := range c.lines {
						if auditCellStyle.Width(s) > l.CellW-4 {
							t.Errorf("cell %d,%d: %q wider than its cell", i, j, s)
						}
					}
				}
				if auditLabelStyle.Width(f.rows[i]) > l.GridX-auditPad {
					t.Errorf("row label %q overlaps the grid", f.rows[i])
				}
			}
			if l.ColLabels == colOneLine {
				for _, s := range f.cols {
					if auditLabelStyle.Width(s) > l.CellW {
						t.Errorf("column label %q wider than its cell", s)
					}
				}
			}
			if r, g, b := centre(img, l, 0, 0); tc.eps == 1 && !reddish(r, g, b) {
				t.Errorf("DEGRADED cell's centre is %d,%d,%d, not red", r, g, b)
			}
			if tc.eps == 1 {
				return
			}
			checks := []struct {
				i, j int
				what string
				ok   func(r, g, b int) bool
			}{
				{0, 2, "DEGRADED, red", reddish}, {3, 4, "DEGRADED, red", reddish}, {1, 0, "ISOLATED, green", greenish},
				{0, 3, "ISOLATED, green", greenish}, {0, 1, "EXPECTED, grey", greyish}, {1, 3, "EXPECTED degraded, grey", greyish},
				{1, len(m.Columns) - 1, "ABORTED, orange", orangeish},
			}
			for _, c := range checks {
				if class := m.Cells[c.i][c.j].Class; !strings.HasPrefix(c.what, class) {
					t.Fatalf("cell %d,%d is %s, the check is for %s", c.i, c.j, class, c.what)
				}
				if r, g, b := centre(img, l, c.i, c.j); !c.ok(r, g, b) {
					t.Errorf("cell %d,%d (%s): centre pixel %d,%d,%d", c.i, c.j, c.what, r, g, b)
				}
			}
			// A degraded EXPECTED cell is darker than one that is not, and
			// the larger rise the darker red.
			degExp, _, _ := centre(img, l, 1, 3)
			exp, _, _ := centre(img, l, 0, 1)
			if degExp >= exp {
				t.Errorf("EXPECTED degraded (%d) not darker than EXPECTED (%d)", degExp, exp)
			}
			_, big, _ := centre(img, l, 3, 4)
			_, small, _ := centre(img, l, 0, 2)
			if big >= small {
				t.Errorf("a rise of 1.7 T (green %d) not a deeper red than 0.84 T (green %d)", big, small)
			}
		})
	}
}

func TestAuditMapLabels(t *testing.T) {
	// Long dependency names do not fit a cell on one line or two: the
	// labels stand upright and the figure stays as wide as its cells.
	m := synthAudit(3, 2)
	for j := range m.Columns {
		m.Columns[j].Dependency = "payments-gateway-primary-" + m.Columns[j].Dependency
	}
	f := newAuditFig(m)
	if f.lay.ColLabels != colRotated {
		t.Errorf("long column labels laid out as %d, want upright", f.lay.ColLabels)
	}
	if f.lay.CellW > 2*auditMinCellW {
		t.Errorf("cells %v wide for long labels", f.lay.CellW)
	}
	for j, c := range m.Columns {
		full := c.Dependency + " " + c.Fault
		if (f.cols[j] != full && !strings.HasSuffix(f.cols[j], "… "+c.Fault)) || utf8.RuneCountInString(f.cols[j]) > auditLabelRunes {
			t.Errorf("column %d labelled %q: not cut before its fault %q", j, f.cols[j], c.Fault)
		}
	}
	// Short ones share a line.
	if f := newAuditFig(synthAudit(3, 2)); f.lay.ColLabels != colOneLine {
		t.Errorf("short column labels laid out as %d, want one line", f.lay.ColLabels)
	}
}

// mdWant is s as audit.md writes it.
func mdWant(s string) string { return mdText(s) }

func TestAuditMarkdownAndHTML(t *testing.T) {
	m := synthAudit(4, 3)
	dir := writeAudit(t, m)
	md := readText(t, dir, AuditMarkdownFile)
	raw := readText(t, dir, AuditHTMLFile)
	page := html.UnescapeString(raw)
	for _, f := range m.Findings {
		if !strings.Contains(md, mdWant(f.Summary)) || !strings.Contains(md, mdWant(f.Resource)) {
			t.Errorf("audit.md lacks the finding %q (%s)", f.Summary, f.Resource)
		}
		if !strings.Contains(page, f.Summary) || !strings.Contains(page, f.Resource) {
			t.Errorf("audit.html lacks the finding %q (%s)", f.Summary, f.Resource)
		}
	}
	for _, v := range m.Violations {
		if !strings.Contains(md, mdWant(v)) || !strings.Contains(page, v) {
			t.Errorf("audit.md or audit.html lacks the violation %q", v)
		}
	}
	for _, want := range []string{
		"2 findings, 1 critical violation", "**DEGRADED +0.84T 31%** ✗", "DEGRADED +1.70T —", "EXPECTED (degraded) +0.9T 20%",
		"ISOLATED +0.0015T 0%", "| INVALID |", "| SKIPPED |", "ABORTED +1.29T 82%", "/cart error rate 0.82 over the last 500ms (41 of 50) — /cart",
		"EXPECTED (degraded) +0.0005T 12% (2 of 3 runs degraded)", "| 3 (2 degraded) |",
		"cart calls PAY (measured), not declared", "| /cart | DB (1.00/req), PAY (0.5/req) | DB | differs |", "| /checkout | PAY (1.00/req) | PAY |  |",
		"| /search | CACHE (1.00/req) | — | calibration failed: 3 of 20 requests answered 503 |",
		"| 30 % rejected by a pool (503 X-Reject: pool), 1 % unanswered within the client's timeout |", "Arrivals: Poisson",
		"at least 0.25 T", "reached 1 %", "slow (a delay of 0.9 T)", "each endpoint's error rate ≥ 50 % for 500ms", "(asked every 100ms) for 1s",
		"Critical endpoints (must stay ISOLATED from every dependency they do not call): /checkout.", "| /checkout | 12.50 | +0.004T | 0.004T | 0 % |", "| /\\<script>alert(\"x\")\\</script> | 12.50 | — | — | — |",
		"1 cell was skipped: the audit stopped before it.", "](" + AuditMapFile + ")",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("audit.md lacks %q", want)
		}
	}
	for _, want := range []string{"2 findings, 1 critical violation", `src="` + AuditMapFile + `"`, "td.c-degraded{background:#b71c1c", "<br>2 of 3 runs degraded</td>",
		`class="cell c-degraded violation"`, `class="cell c-isolated"`, `class="cell c-aborted"`, `class="cell c-none"`, `class="cell c-expected-deg"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("audit.html lacks %q", want)
		}
	}
	// The hostile endpoint is text on the page and in the Markdown, never
	// markup.
	if strings.Contains(raw, "<script") || strings.Contains(raw, "<i>") {
		t.Error("audit.html holds the endpoint's markup unescaped")
	}
	if !strings.Contains(raw, "&lt;script&gt;") || !strings.Contains(page, "/"+hostile) {
		t.Error("audit.html lacks the hostile endpoint, escaped")
	}
	if strings.Count(md, "<") != strings.Count(md, `\<`) || !strings.Contains(md, `\<script>`) || !strings.Contains(md, `\<i>`) {
		t.Error("audit.md holds markup unescaped")
	}
	// Every row of a table has its table's columns: a "|" of a name is
	// escaped.
	cols := 0
	for _, line := range strings.Split(md, "\n") {
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		switch {
		case !strings.HasPrefix(line, "|"):
			cols = 0
		case cols == 0:
			cols = n
		case n != cols:
			t.Errorf("row of %d cells in a table of %d: %s", n-1, cols-1, line)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(raw, "NaN") {
		t.Error("a NaN is shown as NaN, not —")
	}
}

func TestAuditGolden(t *testing.T) {
	dir := writeAudit(t, synthAudit(4, 3))
	got := []byte(readText(t, dir, AuditMarkdownFile))
	golden := filepath.Join("testdata", "audit-4x6.audit.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("audit.md differs from %s (run with -update and review the diff)", golden)
	}
}

func TestPrintAudit(t *testing.T) {
	m := synthAudit(10, 6)
	m.Findings[0].Summary += "\x1b[2J"
	var b bytes.Buffer
	if err := PrintAudit(&b, m); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	flat := strings.Join(strings.Fields(out), " ")
	for _, f := range m.Findings {
		if !strings.Contains(flat, strings.Join(strings.Fields(strings.ReplaceAll(f.Summary, "\x1b", " ")), " ")) {
			t.Errorf("console lacks the finding %q", f.Summary)
		}
	}
	for _, v := range m.Violations {
		if !strings.Contains(flat, v) {
			t.Errorf("console lacks the violation %q", v)
		}
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Error("console passes a terminal escape through")
	}
	if !strings.Contains(out, "2 findings, 1 critical violation") || !strings.Contains(out, "DEGRADED") || !strings.Contains(out, "aborted") {
		t.Errorf("console:\n%s", out)
	}
	findings := strings.Index(out, "findings:")
	if findings < 0 || strings.Index(out, "critical violations") < findings || strings.Index(out, "ENDPOINT") > findings {
		t.Errorf("console does not end with the findings and the violations:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > DefaultConsoleWidth && strings.Contains(strings.TrimSpace(line), " ") {
			t.Errorf("line of %d runes: %q", n, line)
		}
	}
}

// TestWriteAuditDegenerate: a nil map is an error; a map without cells,
// or cut short, still writes every file.
func TestWriteAuditDegenerate(t *testing.T) {
	if err := WriteAudit(t.TempDir(), nil); err == nil {
		t.Error("WriteAudit(nil) did not fail")
	}
	short := synthAudit(4, 3)
	short.Cells = short.Cells[:2]
	short.Cells[1] = short.Cells[1][:3]
	for name, m := range map[string]*verdict.AuditMap{"empty": {Experiment: "x"}, "no columns": {Endpoints: []string{"a"}}, "cut short": short} {
		t.Run(name, func(t *testing.T) {
			dir := writeAudit(t, m)
			for _, f := range []string{AuditJSONFile, AuditMarkdownFile, AuditHTMLFile, AuditMapFile} {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
			var b bytes.Buffer
			if err := PrintAudit(&b, m); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAuditReportHasNoPredictions: the report beside an audit's map
// opens with the audit and links its map, and judges no predictions: no
// victim and culprit, no P1–P4 table of SKIPPED verdicts, in report.md,
// index.html and on the console; an experiment that is not an audit keeps
// them.
func TestAuditReportHasNoPredictions(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool { return r.Mode == "bulkhead" && r.Cond != "busy" })
	audit := "audit:\n  critical: [b]\n  columns:\n    - {condition: slow, dependency: A, fault: slow}\n    - {condition: failing, dependency: A, fault: failing}\n"
	for _, tt := range []struct {
		name, spec string
		audit      bool
	}{{"audit", audit, true}, {"experiment", "", false}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := synth.Write(t, t.TempDir(), tt.spec, runs)
			sum, err := WriteReport(dir, Options{NoImages: true})
			if err != nil {
				t.Fatal(err)
			}
			md, page := readText(t, dir, "report.md"), readText(t, dir, "index.html")
			var con bytes.Buffer
			if err := PrintConsole(&con, sum, ConsoleOptions{Width: 100}); err != nil {
				t.Fatal(err)
			}
			for _, x := range []struct{ what, text, s string }{
				{"report.md", md, "Victim endpoint"}, {"report.md", md, "## Verdicts"}, {"index.html", page, "<p>Victim"},
				{"index.html", page, "<h2>Verdicts</h2>"}, {"console", con.String(), "PREDICTION"},
			} {
				if strings.Contains(x.text, x.s) == tt.audit {
					t.Errorf("%s: %q present: %v, want %v", x.what, x.s, strings.Contains(x.text, x.s), !tt.audit)
				}
			}
			if tt.audit && (strings.Contains(md, "SKIPPED") || strings.Contains(con.String(), "SKIPPED")) {
				t.Errorf("an audit's report or console shows SKIPPED verdicts")
			}
			if tt.audit {
				if len(sum.Verdicts) != 0 {
					t.Errorf("an audit's summary holds %d verdicts", len(sum.Verdicts))
				}
				if !strings.Contains(md, "A blast-radius audit: its result is the map of endpoints × faults in [audit.md](audit.md) (") ||
					!strings.Contains(page, `<a href="audit.md">audit.md</a>`) {
					t.Errorf("the audit's report does not open with its map:\n%s", md[:min(len(md), 600)])
				}
			}
		})
	}
}
