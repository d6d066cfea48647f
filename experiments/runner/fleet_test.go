package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// fleetShortSpec is shortSpec's service as a fleet of three instances,
// healthy only.
func fleetShortSpec() string {
	text := strings.Replace(shortSpec, "conditions: [slow]", "conditions: [healthy]", 1)
	return strings.Replace(text, "modes: [shared, bulkhead]", "modes: [{name: fleet, pools: bulkhead, instances: 3}]", 1)
}

// TestLaunchFleet: every instance of a fleet is started on its own address,
// answers, is sampled, and is stopped by Stop; a launch that fails at the
// last instance stops the instances it had started.
func TestLaunchFleet(t *testing.T) {
	run := testPlan(t, fleetShortSpec(), nil).Runs[0]
	logs := func(string) string { return filepath.Join(t.TempDir(), "log") }
	st, err := (inProcess()).Launch(context.Background(), run, logs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"service-1", "service-2", "service-3"}
	var urls []string
	for _, c := range want {
		u := st.URLs[c]
		if u == "" || slices.Contains(urls, u) {
			t.Fatalf("%s: URL %q (all: %v), want one of its own", c, u, st.URLs)
		}
		urls = append(urls, u)
		if !slices.ContainsFunc(st.Samples, func(s SampleTarget) bool { return s.Component == c && s.MetricsURL == u+"/metrics" }) {
			t.Errorf("%s is not sampled at %s/metrics: %+v", c, u, st.Samples)
		}
		if err := get(u + "/healthz"); err != nil {
			t.Errorf("%s /healthz: %v", c, err)
		}
	}
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		if err := get(u + "/healthz"); err == nil {
			t.Errorf("%s still answers after Stop", want[i])
		}
	}

	// The third instance cannot listen: the first two are stopped again.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	run.Components = slices.Clone(run.Components)
	run.Components[len(run.Components)-1].Listen = busy.Addr().String()
	var up []string
	starter := func(ctx context.Context, c plan.Component, log string) (started, error) {
		s, err := startInProcess(ctx, c, "")
		if err == nil && c.Kind == plan.KindService {
			up = append(up, s.url)
		}
		return s, err
	}
	if _, err := launch(context.Background(), run, logs, "", starter); err == nil {
		t.Fatal("launch with a busy address for service-3: no error")
	}
	if len(up) != 2 {
		t.Fatalf("started %d instances before the failure, want 2", len(up))
	}
	for _, u := range up {
		if err := get(u + "/healthz"); err == nil {
			t.Errorf("instance at %s still answers after the failed launch", u)
		}
	}
}

func get(url string) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// TestRunnerFleet: a run of three instances samples each as its own
// component (none as "service"), names them in the meta, and each served a
// third of /a's requests (round-robin).
func TestRunnerFleet(t *testing.T) {
	p := testPlan(t, fleetShortSpec(), nil)
	dir, err := (&Runner{Plan: p, Root: t.TempDir(), Launcher: inProcess()}).Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rd := dir.RunDir(p.Runs[0].ID)
	var meta rundata.RunMeta
	readJSON(t, filepath.Join(rd, rundata.MetaFile), &meta)
	if want := []string{"service-1", "service-2", "service-3"}; !slices.Equal(meta.Instances, want) {
		t.Errorf("meta instances %v, want %v", meta.Instances, want)
	}
	f, err := os.Open(filepath.Join(rd, rundata.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := map[string]float64{} // instance → its /a calls at its last sample
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s rundata.MetricSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Component == rundata.ServiceComponent {
			t.Fatalf("a fleet's samples must be its instances', got one of %q", s.Component)
		}
		if rundata.IsInstanceComponent(s.Component) {
			if v, ok := rundata.Sum(s.Values, rundata.MetricDepRequests, rundata.L("dependency", "a")); ok {
				last[s.Component] = v
			}
		}
	}
	var total float64
	for _, v := range last {
		total += v
	}
	if len(last) != 3 || total < 60 {
		t.Fatalf("/a calls per instance %v, want three instances and the run's /a load", last)
	}
	for c, v := range last {
		if d := v - total/3; d < -0.05*total || d > 0.05*total {
			t.Errorf("%s made %.0f of %.0f /a calls, want about a third (all: %v)", c, v, total, last)
		}
	}
}
