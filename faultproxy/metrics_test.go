package faultproxy

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// histogram returns the sample count and sum of a single-series histogram
// of p's registry.
func histogram(t *testing.T, p *Proxy, name string) (uint64, float64) {
	t.Helper()
	mfs, err := p.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.Metric) == 1 {
			h := mf.Metric[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no histogram %s", name)
	return 0, 0
}

// TestUpstreamDuration: faultproxy_upstream_duration_seconds times the
// upstream call alone (an injected delay is not in it), on the raw data
// plane and through ServeHTTP.
func TestUpstreamDuration(t *testing.T) {
	const upLatency, delay, n = 20 * time.Millisecond, 150 * time.Millisecond, 3
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(upLatency)
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	check := func(t *testing.T, p *Proxy, base string, hc *http.Client) {
		t.Helper()
		if err := p.SetFaults([]Fault{{Type: TypeLatency, Percent: 100, Latency: delay}}); err != nil {
			t.Fatal(err)
		}
		for range n {
			resp, err := hc.Get(base + "/x")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		count, sum := histogram(t, p, "faultproxy_upstream_duration_seconds")
		mean := time.Duration(sum / float64(max(count, 1)) * float64(time.Second))
		// The upstream's own time at least; well below the injected delay
		// (with it, the mean would be above 170 ms).
		if count != n || mean < upLatency || mean >= delay {
			t.Errorf("upstream duration: %d calls, mean %v; want %d, within [%v, %v)", count, mean, n, upLatency, delay)
		}
		if c, _ := histogram(t, p, "faultproxy_injected_delay_seconds"); c != n {
			t.Errorf("injected delays observed: %d, want %d", c, n)
		}
	}
	t.Run("raw", func(t *testing.T) {
		p, err := New(Config{Upstream: u, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{}}
		defer func() {
			hc.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
		check(t, p, "http://"+srv.Addr(), hc)
	})
	t.Run("ServeHTTP", func(t *testing.T) {
		p, err := New(Config{Upstream: u, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		defer srv.Close()
		defer p.closeIdleConnections()
		check(t, p, srv.URL, srv.Client())
		srv.Client().CloseIdleConnections()
	})
}

// TestMetricsExposition: the control API's /metrics shows the upstream
// duration's buckets and the Go runtime's scheduling latency and GC pauses
// (runtimestats), next to the Go and process collectors.
func TestMetricsExposition(t *testing.T) {
	e := newEnv(t)
	if status, _, _, err := e.get(context.Background(), "/", ""); err != nil || status != 200 {
		t.Fatalf("GET / = %d %v", status, err)
	}
	status, body := controlDo(t, e, "GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("GET /metrics = %d", status)
	}
	for _, want := range []string{
		`faultproxy_upstream_duration_seconds_bucket{le="0.0001"} `,
		`faultproxy_upstream_duration_seconds_bucket{le="60"} 1`,
		`faultproxy_upstream_duration_seconds_bucket{le="+Inf"} 1`,
		"faultproxy_upstream_duration_seconds_count 1",
		runtimestats.SchedLatency + "_bucket",
		runtimestats.GCPause + "_count",
		"go_goroutines",
		"process_cpu_seconds_total",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
