package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// poolHooks are what a sharedPoolHandler's service says of a request:
// gaveUp is called when it waited in vain for a permit (before its 503),
// called after its dependency call; each may set w's headers.
type poolHooks struct {
	gaveUp func(w http.ResponseWriter, route string, wait time.Duration)
	called func(w http.ResponseWriter, route string, wait, call time.Duration)
}

// sharedPoolHandler is a user's service as small as it gets: /a calls
// dependency A (at proxyA) and /b dependency B (at proxyB), each call
// holding one of 8 permits of a pool both share (a caller waits at most
// 100 ms for one, then gets a 503); any other path answers 200 (the
// canary, a ready check).
func sharedPoolHandler(proxyA, proxyB string, hooks poolHooks) http.Handler {
	pool := make(chan struct{}, 8)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	deps := map[string]string{"/a": "http://" + proxyA + "/", "/b": "http://" + proxyB + "/"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		url, ok := deps[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusOK)
			return
		}
		route := r.URL.Path[1:]
		start := time.Now()
		timer := time.NewTimer(100 * time.Millisecond)
		defer timer.Stop()
		select {
		case pool <- struct{}{}:
		case <-timer.C:
			hooks.gaveUp(w, route, time.Since(start))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		wait := time.Since(start)
		callStart := time.Now()
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		<-pool
		hooks.called(w, route, wait, time.Since(callStart))
		if err != nil || resp.StatusCode != http.StatusOK {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
}

// serveHandler serves h on the listener until the context ends.
func serveHandler(h http.Handler) func(context.Context, net.Listener) error {
	return func(ctx context.Context, ln net.Listener) error {
		srv := &http.Server{Handler: h}
		go func() { <-ctx.Done(); srv.Close() }()
		return srv.Serve(ln)
	}
}

// timingService is a sharedPoolHandler whose every answer says where its
// time went: `Server-Timing: pool;dur=<wait>, db;dur=<call>` (db only
// once the call was made).
func timingService(proxyA, proxyB string) func(context.Context, net.Listener) error {
	return serveHandler(sharedPoolHandler(proxyA, proxyB, poolHooks{
		gaveUp: func(w http.ResponseWriter, _ string, wait time.Duration) {
			w.Header().Set("Server-Timing", fmt.Sprintf("pool;dur=%.3f", timingMs(wait)))
		},
		called: func(w http.ResponseWriter, _ string, wait, call time.Duration) {
			w.Header().Set("Server-Timing", fmt.Sprintf(`pool;desc="connection";dur=%.3f, db;dur=%.3f`, timingMs(wait), timingMs(call)))
		},
	}))
}

// timingSpec is the experiment on a sharedPoolHandler's service at addr,
// with external's own lines (indented two spaces) added: A slow (its calls
// hold the shared pool), then B slow (its own calls take longer, the pool
// has room).
func timingSpec(addr string, deps map[string]string, proxyA, proxyB, external string) string {
	return fmt.Sprintf(`name: timing
seed: 5
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  canary:    "http://%[1]s/healthz"
  upstreams: {A: "%[2]s", B: "%[3]s"}
  proxies:   {A: "%[4]s", B: "%[5]s"}
  rules:
    - {status: "503", class: rejected}
    - {status: "502", class: dep_error}
%[6]s
service: {timeout: 250ms, max_wait: 100ms}
load: {rates: {a: 50, b: 20}}
phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 300ms}
validity: {retries: 0}
conditions:
  - {name: slowa, dependency: A, faults: [{type: latency, latency: 200ms}]}
  - {name: slowb, dependency: B, faults: [{type: latency, latency: 40ms}]}
modes: [shared]
expectations: {slow: slowa}
`, addr, deps["A"], deps["B"], proxyA, proxyB, strings.TrimRight(external, "\n"))
}

func timingMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestWhereTheTimeWent: a user's service that says in Server-Timing where
// its time went. With A slow, /a's calls hold the shared pool's
// connections and /b waits for one: the report says /b's wait grew while
// its work stayed flat. With B slow instead, /b's own calls take longer
// and the pool has room: the report says /b's work grew while its wait
// stayed flat — the attribution follows the service's numbers, not the
// fault.
func TestWhereTheTimeWent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment of two runs (~15 s)")
	}
	deps := stubDeps(t, service.DepConfig{Latency: 5 * time.Millisecond, Seed: 1, Size: 16})
	proxyA, proxyB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	addr := serveOn(t, timingService(proxyA, proxyB))

	spec := timingSpec(addr, deps, proxyA, proxyB, "  timing: {wait: [pool], work: [db]}")
	// --check judges P1 on these runs (not what this test is about): any
	// verdict's exit code will do, not a harness error.
	code, out, dir := runSpec(t, "timing", spec)
	if code != ExitOK && code != ExitFailed && code != ExitInvalid || dir == "" {
		t.Fatalf("run: exit %d; output:\n%s", code, out)
	}

	// The run's data: every endpoint's every phase after the warmup has its record.
	phases := readPhases(t, dir, "slowa-shared-r1")
	for _, p := range phases {
		if p.Endpoint == rundata.CanaryEndpoint || p.Phase == rundata.PhaseWarmup {
			continue
		}
		st := p.ServerTiming
		if _, ok := st.Metric("pool"); !ok || st.With == 0 || st.With+st.Without != p.Counts.Total() || st.Bad != 0 {
			t.Errorf("/%s %s: Server-Timing record %+v of %d results", p.Endpoint, p.Phase, st, p.Counts.Total())
		}
	}
	m, err := readMeta(dir, "slowa-shared-r1")
	if err != nil || m.TimingRoles == nil || m.TimingRoles.Wait[0] != "pool" {
		t.Errorf("meta: roles %+v (%v), want external.timing's", m.TimingRoles, err)
	}

	// The report.
	sum := readSummary(t, dir)
	want := map[string]string{"slowa": measure.GrewWait, "slowb": measure.GrewWork}
	for _, run := range sum.Runs {
		if run.WhereTime == nil {
			t.Errorf("%s: no where_time_went in summary.json", run.ID)
			continue
		}
		found := false
		for _, sh := range run.WhereTime.Shifts {
			t.Logf("%s: %s", run.ID, sh.Text)
			if sh.Endpoint != "b" {
				continue
			}
			found = true
			if sh.Grew != want[run.Condition] {
				t.Errorf("%s: /b's %s grew (%s), want its %s", run.ID, sh.Grew, sh.Text, want[run.Condition])
			}
		}
		if !found {
			t.Errorf("%s: no shift of /b in %+v", run.ID, run.WhereTime)
		}
	}
	md := readReport(t, dir)
	html, err := os.ReadFile(filepath.Join(dir, rundata.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Where the time went", "| slowa-shared-r1 | /b | fault | server-timing | `pool` ",
		"slowa-shared-r1 (server-timing): /b: fault phase: waited ", "for `pool`, worked ", "the wait grew (`pool` mean ",
		"slowb-shared-r1 (server-timing): /b: fault phase: ", "the work grew (`db` mean "} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	if !strings.Contains(string(html), "<h2>Where the time went</h2>") {
		t.Error("index.html lacks the section")
	}
	if t.Failed() {
		i := strings.Index(md, "## Where the time went")
		t.Logf("report section:\n%s", md[max(i, 0):])
	}
}
