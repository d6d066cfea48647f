package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
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
