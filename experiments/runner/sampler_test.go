package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// lineWriter counts written lines and cancels after n.
type lineWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.n -= bytes.Count(p, []byte("\n")); w.n <= 0 {
		w.cancel()
	}
	return len(p), nil
}

func TestSampler(t *testing.T) {
	reg := prometheus.NewRegistry()
	inUse := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bulkhead_pool_in_use"}, []string{"pool"})
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bulkheadlab_dependency_duration_seconds"}, []string{"dependency"})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "unrelated_total"})
	reg.MustRegister(inUse, hist, other, collectors.NewGoCollector())
	inUse.WithLabelValues("a").Set(7)
	hist.WithLabelValues("A").Observe(0.25)
	hist.WithLabelValues("A").Observe(0.5)
	other.Inc()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &lineWriter{n: 6, cancel: cancel}
	s := &Sampler{Out: w, Interval: 10 * time.Millisecond, Targets: []SampleTarget{
		{Component: "service", MetricsURL: srv.URL + "/metrics", PID: os.Getpid()},
		{Component: "gone", MetricsURL: "http://127.0.0.1:1/metrics"},
	}}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(w.buf.String()), "\n")
	if len(lines) < 6 {
		t.Fatalf("%d samples, want ≥ 6", len(lines))
	}
	var sm rundata.MetricSample
	if err := json.Unmarshal([]byte(lines[0]), &sm); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`bulkhead_pool_in_use{pool="a"}`:                                7,
		`bulkheadlab_dependency_duration_seconds_sum{dependency="A"}`:   0.75,
		`bulkheadlab_dependency_duration_seconds_count{dependency="A"}`: 2,
	}
	for k, v := range want {
		if sm.Values[k] != v {
			t.Errorf("sample[%s] = %v, want %v (sample %v)", k, sm.Values[k], v, sm.Values)
		}
	}
	if sm.Component != "service" || sm.Values["go_goroutines"] <= 0 || sm.Values["process_resident_memory_bytes"] <= 0 {
		t.Errorf("sample = %+v; want component, go_goroutines, RSS", sm)
	}
	if _, ok := sm.Values["process_cpu_seconds_total"]; !ok {
		t.Errorf("no process_cpu_seconds_total in %v", sm.Values)
	}
	for k := range sm.Values {
		if strings.HasPrefix(k, "unrelated") || strings.HasPrefix(k, "go_gc") {
			t.Errorf("kept unwanted series %s", k)
		}
	}
	if strings.Contains(w.buf.String(), `"component":"gone"`) {
		t.Errorf("a failed scrape without a pid wrote a sample")
	}
}

func TestParseMetricsBad(t *testing.T) {
	if _, err := ParseMetrics(strings.NewReader("bulkhead_x{ 3\n")); err == nil {
		t.Error("ParseMetrics accepted garbage")
	}
}

// TestIntervalQuantiles: the p99 of a histogram over one sampling interval
// comes from the difference of its cumulative buckets, and the buckets are
// not kept.
func TestIntervalQuantiles(t *testing.T) {
	key := func(le string) string {
		return rundata.Key(runtimestats.SchedLatency+"_bucket", rundata.L("le", le))
	}
	tick := func(c1, c2, c3, inf float64) map[string]float64 {
		return map[string]float64{key("0.001"): c1, key("0.01"): c2, key("0.1"): c3, key("+Inf"): inf, "other": 1}
	}
	vals := tick(100, 100, 100, 100)
	prev := intervalQuantiles(vals, nil)
	if got := vals[runtimestats.SchedLatency+"_p99"]; got != 0.001 {
		t.Errorf("first interval p99 = %g, want 0.001", got)
	}
	vals = tick(150, 160, 200, 200) // 100 new: 50 ≤ 1 ms, 10 ≤ 10 ms, 40 ≤ 100 ms
	intervalQuantiles(vals, prev)
	if got := vals[runtimestats.SchedLatency+"_p99"]; got != 0.1 {
		t.Errorf("second interval p99 = %g, want 0.1", got)
	}
	for k := range vals {
		if strings.Contains(k, "_bucket") {
			t.Errorf("bucket series %s kept", k)
		}
	}
	vals = tick(150, 160, 200, 200) // nothing new
	intervalQuantiles(vals, tick(150, 160, 200, 200))
	if _, ok := vals[runtimestats.SchedLatency+"_p99"]; ok {
		t.Error("p99 written for an interval without observations")
	}
}

// TestApplyMap: a user's bulkhead metrics become the harness's, free
// permits become permits in use.
func TestApplyMap(t *testing.T) {
	m := &plan.MetricMap{Available: "bh_available", Limit: "bh_max", Rejected: "bh_rejected", PoolLabel: "name"}
	in := map[string]float64{
		`bh_available{name="orders"}`:      2,
		`bh_max{name="orders"}`:            10,
		`bh_rejected_total{name="orders"}`: 7,
		`go_goroutines`:                    30,
	}
	got := applyMap(in, m)
	want := map[string]float64{
		`bulkhead_pool_in_use{pool="orders"}`:                       8,
		`bulkhead_pool_limit{pool="orders"}`:                        10,
		`bulkhead_pool_rejected_total{pool="orders",reason="full"}`: 7,
		`go_goroutines`: 30,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("applyMap = %v, want %v", got, want)
	}
}

// TestApplyMapConns: a user's connection-pool gauges (HikariCP's names)
// become the harness's, labelled by their own pool label, next to the
// bulkhead metrics labelled by theirs.
func TestApplyMapConns(t *testing.T) {
	m := &plan.MetricMap{InUse: "bh_active", PoolLabel: "name",
		ConnInUse: "hikaricp_connections_active", ConnLimit: "hikaricp_connections_max", ConnWaiting: "hikaricp_connections_pending", ConnPoolLabel: "pool"}
	in := map[string]float64{
		`bh_active{name="orders"}`:                          3,
		`hikaricp_connections_active{pool="HikariPool-1"}`:  8,
		`hikaricp_connections_max{pool="HikariPool-1"}`:     8,
		`hikaricp_connections_pending{pool="HikariPool-1"}`: 4,
		`hikaricp_connections_idle{pool="HikariPool-1"}`:    0,
	}
	got := applyMap(in, m)
	want := map[string]float64{
		`bulkhead_pool_in_use{pool="orders"}`:                3,
		`bulkheadlab_conn_pool_in_use{pool="HikariPool-1"}`:  8,
		`bulkheadlab_conn_pool_limit{pool="HikariPool-1"}`:   8,
		`bulkheadlab_conn_pool_waiting{pool="HikariPool-1"}`: 4,
		`hikaricp_connections_idle{pool="HikariPool-1"}`:     0,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("applyMap = %v, want %v", got, want)
	}
	keep := mapKeep(m)
	for name, want := range map[string]bool{"hikaricp_connections_pending": true, "hikaricp_connections_idle": false} {
		if keep(name) != want {
			t.Errorf("mapKeep(%q) = %t, want %t", name, !want, want)
		}
	}
}
