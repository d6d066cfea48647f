package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// histBody is a service's /metrics with a typed histogram (pool label, in
// seconds), the same kind of histogram without # TYPE lines (its series
// parse as untyped ones), a summary, and a histogram nobody named.
const histBody = `# HELP pg_pool_acquire_seconds Time to get a connection.
# TYPE pg_pool_acquire_seconds histogram
pg_pool_acquire_seconds_bucket{pool="main",le="0.005"} 90
pg_pool_acquire_seconds_bucket{pool="main",le="0.1"} 99
pg_pool_acquire_seconds_bucket{pool="main",le="+Inf"} 100
pg_pool_acquire_seconds_sum{pool="main"} 1.5
pg_pool_acquire_seconds_count{pool="main"} 100
query_ms_bucket{le="10"} 7
query_ms_bucket{le="+Inf"} 8
query_ms_sum 60
query_ms_count 8
# TYPE render_seconds summary
render_seconds{quantile="0.5"} 0.2
render_seconds_sum 4
render_seconds_count 20
# TYPE other_seconds histogram
other_seconds_bucket{le="1"} 1
other_seconds_bucket{le="+Inf"} 1
other_seconds_sum 0.5
other_seconds_count 1
`

// TestSamplerKeepsTimingHistograms: the histograms of the metric map are
// kept under their own series names, buckets (the typed one's +Inf bucket
// from its count) with sum and count, a summary's sum and count; the rest
// of the body is not.
func TestSamplerKeepsTimingHistograms(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, histBody) }))
	defer srv.Close()
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{Targets: []SampleTarget{{Component: rundata.ServiceComponent, MetricsURL: srv.URL,
		Map: &plan.MetricMap{PoolLabel: "pool", Histograms: []string{"pg_pool_acquire_seconds", "query_ms", "render_seconds"}}}},
		Out: &out, Interval: time.Hour, OnSample: func([]rundata.MetricSample) { cancel() }}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var sm rundata.MetricSample
	if err := json.Unmarshal(out.Bytes(), &sm); err != nil {
		t.Fatalf("sample %q: %v", out.String(), err)
	}
	want := map[string]float64{
		`pg_pool_acquire_seconds_bucket{le="0.005",pool="main"}`: 90,
		`pg_pool_acquire_seconds_bucket{le="0.1",pool="main"}`:   99,
		`pg_pool_acquire_seconds_bucket{le="+Inf",pool="main"}`:  100,
		`pg_pool_acquire_seconds_sum{pool="main"}`:               1.5,
		`pg_pool_acquire_seconds_count{pool="main"}`:             100,
		`query_ms_bucket{le="10"}`:                               7,
		`query_ms_bucket{le="+Inf"}`:                             8,
		`query_ms_sum`:                                           60,
		`query_ms_count`:                                         8,
		`render_seconds_sum`:                                     4,
		`render_seconds_count`:                                   20,
	}
	if fmt.Sprint(sm.Values) != fmt.Sprint(want) {
		t.Errorf("kept %v\nwant %v", sm.Values, want)
	}
	for k := range sm.Values {
		if strings.HasPrefix(k, "other_") {
			t.Errorf("kept %s, a histogram nobody named", k)
		}
	}
}

// TestHistogramWarnings: the pre-flight warns of a named histogram the
// service does not export (a gauge of that name is no histogram), and of
// metrics that do not answer; a histogram it exports is no warning.
func TestHistogramWarnings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, histBody+"# TYPE gauge_seconds gauge\ngauge_seconds 3\n")
	}))
	defer srv.Close()
	run := plan.Run{Mode: "shared", ServiceMetrics: &plan.ServiceMetrics{URL: srv.URL,
		Map: &plan.MetricMap{Histograms: []string{"pg_pool_acquire_seconds", "query_ms", "gauge_seconds", "missing_seconds"}}}}
	got := histogramWarnings(context.Background(), run)
	if len(got) != 2 || !strings.Contains(got[0], "no histogram gauge_seconds at "+srv.URL) || !strings.Contains(got[1], "no histogram missing_seconds") {
		t.Errorf("warnings %q, want gauge_seconds and missing_seconds", got)
	}
	srv.Close()
	if got := histogramWarnings(context.Background(), run); len(got) != 1 || !strings.Contains(got[0], "did not answer") {
		t.Errorf("metrics down: warnings %q", got)
	}
	run.ServiceMetrics.Map.Histograms = nil
	if got := histogramWarnings(context.Background(), run); got != nil {
		t.Errorf("no histograms named: warnings %q", got)
	}
}
