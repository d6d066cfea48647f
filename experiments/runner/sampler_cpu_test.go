package runner

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// TestSamplerCPUAttribution: a scraped Go component's samples carry the
// runtime's CPU accounting (GC, idle, total), and a process the runner
// only knows by its PID (a user's service that exports no metrics at all)
// still gets its CPU seconds from /proc, growing as it burns CPU; on a
// system without /proc it gets none and the sampler carries on.
func TestSamplerCPUAttribution(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(runtimestats.NewCollector())
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	// A child that burns CPU for a while and exports nothing.
	child := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done")
	if err := child.Start(); err != nil {
		t.Skipf("no shell to start a child: %v", err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &lineWriter{n: 8, cancel: cancel}
	s := &Sampler{Out: w, Interval: 100 * time.Millisecond, Targets: []SampleTarget{
		{Component: "service", MetricsURL: srv.URL + "/metrics", PID: os.Getpid()},
		{Component: "silent", PID: child.Process.Pid},
	}}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var first, last = map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(w.buf.String()), "\n") {
		var sm rundata.MetricSample
		if err := json.Unmarshal([]byte(line), &sm); err != nil {
			t.Fatal(err)
		}
		switch sm.Component {
		case "service":
			for _, k := range []string{rundata.MetricGoCPUGC, rundata.MetricGoCPUIdle, rundata.MetricGoCPUTotal} {
				if _, ok := sm.Values[k]; !ok {
					t.Errorf("service sample lacks %s: %v", k, sm.Values)
				}
			}
		case "silent":
			v, ok := sm.Values[rundata.MetricCPUSeconds]
			if !ok {
				continue
			}
			if _, seen := first["cpu"]; !seen {
				first["cpu"] = v
			}
			last["cpu"] = v
		}
	}
	_, seen := last["cpu"]
	switch {
	case runtime.GOOS != "linux":
		if seen {
			t.Errorf("CPU seconds of a silent child without /proc: %v", last)
		}
	case !seen:
		t.Errorf("no CPU seconds from /proc for the silent child")
	case last["cpu"] <= first["cpu"]:
		t.Errorf("silent child's CPU seconds %v → %v; want them to grow while it burns CPU", first["cpu"], last["cpu"])
	}
}
