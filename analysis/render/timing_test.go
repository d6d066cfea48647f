package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// TestWhereTimeSection: the section holds every row and shift in both
// outputs, escapes what a service may put in a metric's name (a token may
// hold '|'; HTML its own), and is absent without any row.
func TestWhereTimeSection(t *testing.T) {
	row := func(phase string, pool, db float64) measure.TimeSplit {
		return measure.TimeSplit{Endpoint: "search", Phase: phase, Source: measure.TimingServer, With: 990, Without: 10, Bad: 2,
			Wait: []measure.TimePart{{Name: "pool", Count: 990, P50Ms: measure.Num(pool), P99Ms: measure.Num(pool * 1.5), MeanMs: measure.Num(pool)}},
			Work: []measure.TimePart{{Name: "db|<b>", Count: 990, P50Ms: measure.Num(db), P99Ms: measure.Num(db), MeanMs: measure.Num(db)}}}
	}
	s := &verdict.Summary{Runs: []measure.RunSummary{{ID: "slow-shared-r1"}, {ID: "slow-bulkhead-r1", WhereTime: &measure.WhereTime{
		Rows:   []measure.TimeSplit{row("baseline", 0.2, 10.8), row("fault", 85, 10.8)},
		Shifts: []measure.TimeShift{{Endpoint: "search", Source: measure.TimingServer, Grew: measure.GrewWait, Text: "/search: fault phase: waited 85 ms (p50) for `pool`, worked 10.8 ms (p50) on `db|<b>`; the wait grew"}},
	}}}}
	var b bytes.Buffer
	writeTimingMD(&b, s)
	md := b.String()
	for _, want := range []string{"## Where the time went\n",
		"| slow-bulkhead-r1 | /search | fault | server-timing | `pool` 85.00 / 127.5 | `db\\|<b>` 10.80 / 10.80 | 990 / 10 (2 malformed) |",
		"- slow-bulkhead-r1 (server-timing): /search: fault phase: waited 85 ms (p50) for `pool`, worked 10.8 ms (p50) on `db\\|<b>`; the wait grew"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "slow-shared-r1") {
		t.Errorf("a run without rows is listed:\n%s", md)
	}
	html := string(timingHTML(s))
	for _, want := range []string{"<h2>Where the time went</h2>", "<td>`db|&lt;b&gt;` 10.80 / 10.80</td>", "<li>slow-bulkhead-r1 (server-timing): /search: fault phase:"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, html)
		}
	}
	b.Reset()
	none := &verdict.Summary{Runs: []measure.RunSummary{{ID: "x"}}}
	if writeTimingMD(&b, none); b.Len() != 0 || timingHTML(none) != "" {
		t.Errorf("no rows: markdown %q, HTML %q; want nothing", b.String(), timingHTML(none))
	}
}

// TestWhereTimeSectionMetrics: a row of the service's histograms names its
// scope, the introduction explains the source, and a histogram that could
// not be read is said in both outputs, even without any row.
func TestWhereTimeSectionMetrics(t *testing.T) {
	part := func(name string, ms float64) []measure.TimePart {
		return []measure.TimePart{{Name: name, Count: 200, P50Ms: measure.Num(ms), P99Ms: measure.Num(ms * 2), MeanMs: measure.Num(ms)}}
	}
	s := &verdict.Summary{Runs: []measure.RunSummary{{ID: "slow-shared-r1", WhereTime: &measure.WhereTime{
		Rows: []measure.TimeSplit{{Scope: "pool=orders", Phase: "fault", Source: measure.TimingMetrics, With: measure.Undefined, Without: measure.Undefined,
			Wait: part("acq_seconds", 75), Work: part("query_ms", 15)}},
		Notes: []string{"`missing_seconds` (a wait under external.timing.histograms): the service never exported it"},
	}}}}
	var b bytes.Buffer
	writeTimingMD(&b, s)
	md := b.String()
	for _, want := range []string{"Source metrics: the histograms your service exports",
		"| slow-shared-r1 | pool=orders | fault | metrics | `acq_seconds` 75.00 / 150.0 | `query_ms` 15.00 / 30.00 | — |",
		"- slow-shared-r1 (metrics): **not read**: `missing_seconds` (a wait under external.timing.histograms): the service never exported it"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	html := string(timingHTML(s))
	for _, want := range []string{"<td>pool=orders</td>", "<strong>not read</strong>: `missing_seconds`"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, html)
		}
	}
	s.Runs[0].WhereTime.Rows = nil
	b.Reset()
	if writeTimingMD(&b, s); !strings.Contains(b.String(), "**not read**") || strings.Contains(b.String(), "| run |") {
		t.Errorf("notes alone: %s, want the note and no table", b.String())
	}
}
