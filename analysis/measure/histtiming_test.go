package measure

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestBucketQuantile: the quantiles histogram_quantile gives for the same
// buckets: linear within the bucket, from 0 in the first, the highest
// finite bound in the +Inf bucket, NaN without +Inf or observations.
func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, tt := range []struct {
		q    float64
		bs   []LeCount
		want float64
	}{
		{0.5, []LeCount{{0.1, 50}, {0.2, 100}, {inf, 100}}, 0.1},
		{0.99, []LeCount{{0.2, 100}, {inf, 100}, {0.1, 50}}, 0.198}, // any order
		{0.25, []LeCount{{0.1, 50}, {0.2, 100}, {inf, 100}}, 0.05},
		{0.99, []LeCount{{0.1, 50}, {0.2, 60}, {inf, 100}}, 0.2}, // in +Inf: the highest bound
		{0.5, []LeCount{{-1, 10}, {0, 10}, {inf, 10}}, -1},
		{0.5, []LeCount{{0.1, 60}, {0.2, 50}, {inf, 100}}, 0.1 * 50 / 60}, // a count that fell is raised
		{0.5, []LeCount{{0.1, 50}, {0.2, 100}}, math.NaN()},               // no +Inf
		{0.5, []LeCount{{0.1, 0}, {inf, 0}}, math.NaN()},
		{0.5, []LeCount{{inf, 3}}, math.NaN()},
		{0.5, nil, math.NaN()},
	} {
		got := BucketQuantile(tt.q, append([]LeCount(nil), tt.bs...))
		if math.IsNaN(tt.want) != math.IsNaN(got) || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("BucketQuantile(%g, %v) = %g, want %g", tt.q, tt.bs, got, tt.want)
		}
	}
}

// FuzzBucketQuantile: any buckets give NaN or a value within the finite
// bounds (or 0, the first bucket's lower bound), and never a panic.
func FuzzBucketQuantile(f *testing.F) {
	f.Add(0.5, 0.1, 50.0, 0.2, 100.0, 100.0)
	f.Add(0.99, -1.0, 3.0, math.Inf(1), 0.0, 7.0)
	f.Fuzz(func(t *testing.T, q, le1, c1, le2, c2, cInf float64) {
		bs := []LeCount{{le1, c1}, {le2, c2}, {math.Inf(1), cInf}}
		got := BucketQuantile(q, bs)
		if math.IsNaN(got) {
			return
		}
		lo, hi := min(0, le1, le2), max(le1, le2)
		if got < lo || got > hi {
			t.Errorf("BucketQuantile(%g, %v) = %g, outside [%g, %g]", q, bs, got, lo, hi)
		}
	})
}

// histRun is a run of endpoints a and b and the samples of a service that
// exports, every 250 ms from the baseline's start, the histograms of
// tick(i) (series key → cumulative value); the baseline is samples 0–20,
// the fault 20–40.
func histRun(h *rundata.TimingHistograms, tick func(i int, fault bool) map[string]float64) *Run {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &rundir.Run{Meta: rundata.RunMeta{External: true, TimingHistograms: h,
		Endpoints: []rundata.EndpointInfo{{Name: "a"}, {Name: "b"}},
		Phases: []rundata.PhaseSpan{{Name: rundata.PhaseWarmup, Start: t0.Add(-time.Second), End: t0},
			{Name: rundata.PhaseBaseline, Start: t0, End: t0.Add(5 * time.Second)},
			{Name: rundata.PhaseFault, Start: t0.Add(5 * time.Second), End: t0.Add(10 * time.Second)}}}}
	for i := 0; i <= 40 && tick != nil; i++ {
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: t0.Add(time.Duration(i) * 250 * time.Millisecond),
			Component: rundata.ServiceComponent, Values: tick(i, i > 20)})
	}
	return &Run{Data: r}
}

// poolTick is a service whose acquire histogram (seconds, labelled pool)
// grows by 10 observations a tick per pool, all ≤ 1 ms in the baseline and
// for pool "orders" between 50 and 100 ms in the fault; its query
// histogram (milliseconds) by 10 of 10–20 ms a tick, throughout.
func poolTick(i int, fault bool) map[string]float64 {
	v := map[string]float64{"go_goroutines": 12}
	base, fast := 10.0*float64(min(i, 20)), 10.0*float64(i)
	slow := 10.0 * float64(max(i-20, 0))
	for _, pool := range []string{"orders", "catalog"} {
		pl := rundata.L("pool", pool)
		le := func(b string) rundata.Label { return rundata.L("le", b) }
		n, s := fast, fast*0.0005
		under1ms, under100ms := fast, fast
		if pool == "orders" {
			under1ms, s = base, base*0.0005+slow*0.075
		}
		v[rundata.Key("acq_seconds_bucket", pl, le("0.001"))] = under1ms
		v[rundata.Key("acq_seconds_bucket", pl, le("0.05"))] = under1ms
		v[rundata.Key("acq_seconds_bucket", pl, le("0.1"))] = under100ms
		v[rundata.Key("acq_seconds_bucket", pl, le("+Inf"))] = n
		v[rundata.Key("acq_seconds_sum", pl)], v[rundata.Key("acq_seconds_count", pl)] = s, n
		for _, m := range []string{"GET", "POST"} { // summed over method
			ls := []rundata.Label{pl, rundata.L("method", m)}
			v[rundata.Key("query_ms_bucket", append(ls, le("10"))...)] = 0
			v[rundata.Key("query_ms_bucket", append(ls, le("20"))...)] = fast / 2
			v[rundata.Key("query_ms_bucket", append(ls, le("+Inf"))...)] = fast / 2
			v[rundata.Key("query_ms_sum", ls...)], v[rundata.Key("query_ms_count", ls...)] = fast/2*15, fast/2
		}
	}
	v["gauge_seconds"] = 3
	v[rundata.Key("render_seconds_sum")], v[rundata.Key("render_seconds_count")] = float64(i)*0.02, float64(i)
	return v
}

// TestWhereTimeHistograms: recorded samples of a service's histograms give
// a row per value of the by label (an endpoint's row when the value names
// one), p50 / p99 from the buckets' increase over the phase, means from
// sum and count in each histogram's unit, a summary's mean alone; the pool
// whose acquire time grew is a wait grown beside flat work; what cannot
// be read is a note, not a silent empty row.
func TestWhereTimeHistograms(t *testing.T) {
	h := &rundata.TimingHistograms{By: "pool", Histograms: []rundata.TimingHistogram{
		{Name: "acq_seconds", Role: rundata.TimingWait, Unit: rundata.UnitSeconds},
		{Name: "query_ms", Role: rundata.TimingWork, Unit: rundata.UnitMilliseconds},
		{Name: "render_seconds", Role: rundata.TimingWork, Unit: rundata.UnitSeconds},
		{Name: "missing_seconds", Role: rundata.TimingWait, Unit: rundata.UnitSeconds},
		{Name: "gauge_seconds", Role: rundata.TimingWait, Unit: rundata.UnitSeconds}}}
	w := timeSplits{histRun(h, poolTick).Data}.whereTime()
	if w == nil || len(w.Rows) != 6 {
		t.Fatalf("where %+v, want baseline and fault rows of pools catalog, orders and none", w)
	}
	byWho := map[string]TimeSplit{}
	for _, row := range w.Rows {
		byWho[row.Who()+" "+row.Phase] = row
		if row.Source != TimingMetrics || row.Endpoint != "" {
			t.Errorf("row %+v, want source metrics, no endpoint", row)
		}
	}
	f := byWho["pool=orders fault"]
	if len(f.Wait) != 1 || len(f.Work) != 1 {
		t.Fatalf("orders' fault row %+v, want acq_seconds waited and query_ms worked", f)
	}
	if r := byWho[`pool="" fault`]; len(r.Work) != 1 || r.Work[0].Name != "render_seconds" {
		t.Errorf("the row of the series without a pool label: %+v, want render_seconds", r)
	}
	approx := func(what string, got Num, want float64) {
		if math.Abs(float64(got)-want) > 1e-6 {
			t.Errorf("%s = %g, want %g", what, got, want)
		}
	}
	approx("orders' fault wait count", f.Wait[0].Count, 200)
	approx("orders' fault wait mean", f.Wait[0].MeanMs, 75)
	approx("orders' fault wait p50", f.Wait[0].P50Ms, 75) // half of the 50–100 ms bucket
	approx("orders' fault wait p99", f.Wait[0].P99Ms, 99.5)
	approx("orders' fault work p50", f.Work[0].P50Ms, 15)
	approx("orders' fault work mean", f.Work[0].MeanMs, 15)
	approx("orders' baseline wait p50", byWho["pool=orders baseline"].Wait[0].P50Ms, 0.5)
	approx("catalog's fault wait mean", byWho["pool=catalog fault"].Wait[0].MeanMs, 0.5)
	shifts := map[string]string{}
	for _, sh := range w.Shifts {
		shifts[sh.Scope] = sh.Grew
		if sh.Scope == "pool=orders" && !strings.Contains(sh.Text, "pool=orders: fault phase: waited 75 ms (p50) for `acq_seconds`, worked 15 ms (p50) on `query_ms`; the wait grew (`acq_seconds` mean 0.5 → 75 ms) while the work stayed flat") {
			t.Errorf("orders' shift: %s", sh.Text)
		}
	}
	if shifts["pool=orders"] != GrewWait || shifts["pool=catalog"] != GrewNeither {
		t.Errorf("shifts %+v, want orders' wait grown, catalog's neither", w.Shifts)
	}
	if len(w.Notes) != 2 || !strings.Contains(w.Notes[0], "`missing_seconds` (a wait under external.timing.histograms): the service never exported it in the run's scrapes") ||
		!strings.Contains(w.Notes[1], "`gauge_seconds` (a wait under external.timing.histograms): exported, but not as a histogram") {
		t.Errorf("notes %q, want missing_seconds never exported and gauge_seconds no histogram", w.Notes)
	}

	// No by label: one row of the service, every series summed; the summary's mean alone.
	h.By = ""
	w = timeSplits{histRun(h, poolTick).Data}.whereTime()
	if len(w.Rows) != 2 || w.Rows[1].Scope != "service" || len(w.Rows[1].Work) != 2 {
		t.Fatalf("rows %+v, want the service's baseline and fault, query_ms and render_seconds worked", w.Rows)
	}
	approx("service fault wait count", w.Rows[1].Wait[0].Count, 400)
	approx("service fault wait mean", w.Rows[1].Wait[0].MeanMs, (200*75+200*0.5)/400.0)
	if r := w.Rows[1].Work[1]; r.Name != "render_seconds" || !math.IsNaN(float64(r.P50Ms)) || math.Abs(float64(r.MeanMs)-20) > 1e-9 {
		t.Errorf("the summary's part %+v, want its mean 20 ms alone", r)
	}

	// By a label whose values are endpoints: the endpoints' rows.
	h.By, h.Histograms = "ep", h.Histograms[:1]
	w = timeSplits{histRun(h, func(i int, _ bool) map[string]float64 {
		v := map[string]float64{}
		for _, ep := range []string{"a", "b"} {
			l := rundata.L("ep", ep)
			v[rundata.Key("acq_seconds_bucket", l, rundata.L("le", "+Inf"))], v[rundata.Key("acq_seconds_count", l)] = float64(i), float64(i)
		}
		return v
	}).Data}.whereTime()
	if len(w.Rows) != 4 || w.Rows[0].Who() != "/a" || w.Rows[2].Who() != "/b" || !math.IsNaN(float64(w.Rows[0].Wait[0].P50Ms)) {
		t.Errorf("rows %+v, want /a's and /b's, no quantile from a +Inf bucket alone", w.Rows)
	}

	// A label filter nothing matches; no scrape at all.
	h.By, h.Match = "", map[string]string{"pool": "nope"}
	if w = (timeSplits{histRun(h, poolTick).Data}).whereTime(); len(w.Rows) != 0 || len(w.Notes) != 1 || !strings.Contains(w.Notes[0], `none of its series carries the labels of external.timing.histograms.match {pool="nope"}`) {
		t.Errorf("unmatched: %+v", w)
	}
	if w = (timeSplits{histRun(h, nil).Data}).whereTime(); w == nil || len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "no scrape of the service's metrics") {
		t.Errorf("no samples: %+v", w)
	}
	if w = (timeSplits{histRun(nil, poolTick).Data}).whereTime(); w != nil {
		t.Errorf("no histograms declared: %+v, want nil", w)
	}
}

// recordedRun is a run recorded from a service that exports a pool-wait
// histogram in milliseconds and a query histogram (unit: ms) labelled pool
// and app, with a decoy app observing 5 s on every request, while A was
// slow (testdata/histograms: its meta and the service's samples).
func recordedRun(t *testing.T) *Run {
	t.Helper()
	var r rundir.Run
	b, err := os.ReadFile(filepath.Join("testdata", "histograms", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.Meta); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", "histograms", "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for dec := json.NewDecoder(f); dec.More(); {
		var s rundata.MetricSample
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		r.Metrics = append(r.Metrics, s)
	}
	return &Run{Data: &r}
}

// TestWhereTimeRecordedHistograms: on recorded samples the shared pool's
// wait grew from the baseline to the fault beside its work (/a's slow
// calls held the permits, /b waited), and the label filter keeps the
// decoy's 5 s out; without the filter they are in.
func TestWhereTimeRecordedHistograms(t *testing.T) {
	r := recordedRun(t)
	w := timeSplits{r.Data}.whereTime()
	if w == nil || len(w.Shifts) != 1 || len(w.Notes) != 0 {
		t.Fatalf("where %+v, want one shift, no note", w)
	}
	if sh := w.Shifts[0]; sh.Scope != "pool=shared" || sh.Grew != GrewBoth {
		t.Errorf("shift %+v, want pool=shared's wait and work grown", sh)
	}
	for _, row := range w.Rows {
		t.Logf("%s %s: %s", row.Who(), row.Phase, splitWords(row))
		for _, p := range append(row.Wait, row.Work...) {
			if p.P99Ms >= 4000 || p.MeanMs >= 4000 || !(p.P50Ms <= p.P99Ms) {
				t.Errorf("%s %s: %+v: the decoy's 5 s were not filtered out, or p50 > p99", row.Phase, p.Name, p)
			}
		}
		if row.Phase == rundata.PhaseFault && (len(row.Wait) != 1 || row.Wait[0].MeanMs < 20) {
			t.Errorf("fault row %+v, want a wait of tens of ms", row)
		}
	}
	r.Data.Meta.TimingHistograms.Match = nil
	for _, row := range (timeSplits{r.Data}).whereTime().Rows {
		if row.Phase == rundata.PhaseBaseline && row.Wait[0].P99Ms < 4000 {
			t.Errorf("without the filter: baseline %+v, want the decoy's 5 s in its p99", row.Wait[0])
		}
	}
}
