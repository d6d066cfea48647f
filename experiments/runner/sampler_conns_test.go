package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestSamplerKeepsConnPoolMetrics: the service's connection-pool series
// pass the sampler's prefilter under the names the analysis reads, scraped
// from a real service in each connection layout.
func TestSamplerKeepsConnPoolMetrics(t *testing.T) {
	for svc, rd := range map[string]string{
		rundata.MetricConnPoolLimit: rundata.MetricConnPoolLimit, rundata.MetricConnPoolInUse: rundata.MetricConnPoolInUse,
		rundata.MetricConnPoolWaiting: rundata.MetricConnPoolWaiting, rundata.MetricConnWait + "_sum": rundata.MetricConnWaitSum,
		rundata.MetricConnWait + "_count": rundata.MetricConnWaitCount, rundata.MetricConnWaitTimeouts: rundata.MetricConnWaitTimeouts,
	} {
		if svc != rd {
			t.Errorf("the service exports %s, the analysis reads %s", svc, rd)
		}
		if !kept(svc) {
			t.Errorf("the sampler drops %s", svc)
		}
	}
	for _, tc := range []struct {
		layout service.ConnsLayout
		pools  []string
	}{
		{service.ConnsPerDependency, []string{"a", "b"}},
		{service.ConnsShared, []string{service.SharedConnPool}},
	} {
		s, err := service.New(service.Config{Layout: service.LayoutConfig{Mode: service.ModeShared, PoolSize: 2}, Timeout: time.Second,
			ConnsLayout: tc.layout, Conns: 5, Endpoints: service.TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2")})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		tr := &http.Transport{}
		vals, err := Scrape(context.Background(), &http.Client{Transport: tr, Timeout: 10 * time.Second}, srv.URL+"/metrics")
		tr.CloseIdleConnections()
		srv.Close()
		s.Close()
		if err != nil {
			t.Fatalf("layout %s: %v", tc.layout, err)
		}
		var want []string
		for _, p := range tc.pools {
			want = append(want, rundata.Key(rundata.MetricConnPoolLimit, rundata.L("pool", p)),
				rundata.Key(rundata.MetricConnPoolInUse, rundata.L("pool", p)), rundata.Key(rundata.MetricConnPoolWaiting, rundata.L("pool", p)))
		}
		for _, ep := range []string{"a", "b"} {
			dep := rundata.L("dependency", ep)
			want = append(want, rundata.Key(rundata.MetricConnWaitSum, dep), rundata.Key(rundata.MetricConnWaitCount, dep),
				rundata.Key(rundata.MetricConnWaitTimeouts, dep))
		}
		for _, k := range want {
			if _, ok := vals[k]; !ok {
				t.Errorf("layout %s: the sample lacks %s", tc.layout, k)
			}
		}
		if v := vals[rundata.Key(rundata.MetricConnPoolLimit, rundata.L("pool", tc.pools[0]))]; v != 5 {
			t.Errorf("layout %s: %s = %g, want 5", tc.layout, rundata.MetricConnPoolLimit, v)
		}
	}
}
