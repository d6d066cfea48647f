//go:build e2e

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// histShape is how a histService exports its two histograms: the wait for
// one of the pool's 8 permits (observed whether the caller got one or gave
// up after 100 ms) and the dependency call made holding it.
type histShape struct {
	wait, work string  // metric names
	perMs      float64 // observations are in this many ms
	labels     func(route string) prometheus.Labels
	// decoy, if set, is a series of each histogram with other labels that
	// observes 5 s on every request: only a label filter keeps it out.
	decoy prometheus.Labels
}

// histService is a sharedPoolHandler's service that says where its time
// went only in the histograms it exports at /metrics (no Server-Timing).
func histService(proxyA, proxyB string, sh histShape) func(context.Context, net.Listener) error {
	reg := prometheus.NewRegistry()
	var keys []string
	for k := range sh.labels("a") {
		keys = append(keys, k)
	}
	buckets := prometheus.ExponentialBuckets(0.5/sh.perMs, 2, 14) // 0.5 ms to 4 s
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: sh.wait, Help: "Time to get a pool permit.", Buckets: buckets}, keys)
	work := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: sh.work, Help: "Time of the dependency call.", Buckets: buckets}, keys)
	reg.MustRegister(wait, work)
	observe := func(h *prometheus.HistogramVec, route string, d time.Duration) {
		h.With(sh.labels(route)).Observe(timingMs(d) / sh.perMs)
		if sh.decoy != nil {
			h.With(sh.decoy).Observe(5000 / sh.perMs)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", sharedPoolHandler(proxyA, proxyB, poolHooks{
		gaveUp: func(_ http.ResponseWriter, route string, d time.Duration) { observe(wait, route, d) },
		called: func(_ http.ResponseWriter, route string, d, call time.Duration) {
			observe(wait, route, d)
			observe(work, route, call)
		},
	}))
	return serveHandler(mux)
}

// histSpec starts a histService of shape sh (and its dependencies) and
// returns timingSpec's experiment on it, its histograms as hist (the body
// of external.timing.histograms) declares them.
func histSpec(t *testing.T, sh histShape, hist string) string {
	deps := stubDeps(t, service.DepConfig{Latency: 5 * time.Millisecond, Seed: 1, Size: 16})
	proxyA, proxyB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	addr := serveOn(t, histService(proxyA, proxyB, sh))
	return timingSpec(addr, deps, proxyA, proxyB, fmt.Sprintf("  metrics: {url: \"http://%s/metrics\"}\n  timing:\n    histograms:\n%s", addr, hist))
}

// runHist runs spec and returns the results folder, the console output
// and the summary once the row named who (its endpoint or scope) from the
// service's histograms shifted in every run as want says by condition; it
// runs again (twice at most) when a run that did not was INVALID (the
// loaded machine, not the service).
func runHist(t *testing.T, name string, spec func() string, who string, want map[string][]string) (string, string, verdict.Summary) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		code, out, dir := runSpec(t, name, spec())
		if code != ExitOK && code != ExitFailed && code != ExitInvalid || dir == "" {
			t.Fatalf("run: exit %d; output:\n%s", code, out)
		}
		sum := readSummary(t, dir)
		var wrong []string
		invalid := false
		for _, run := range sum.Runs {
			invalid = invalid || !run.Valid
			grew := "no shift"
			for _, sh := range runShifts(run) {
				t.Logf("%s (%s): %s", run.ID, sh.Source, sh.Text)
				if sh.Source == measure.TimingMetrics && (sh.Scope == who || "/"+sh.Endpoint == who) {
					grew = sh.Grew
				}
			}
			if !slices.Contains(want[run.Condition], grew) {
				wrong = append(wrong, fmt.Sprintf("%s: %s's %s grew, want %v", run.ID, who, grew, want[run.Condition]))
			}
		}
		switch {
		case len(wrong) == 0:
			return dir, out, sum
		case invalid && attempt < 3:
			t.Logf("attempt %d had INVALID runs and %v: again", attempt, wrong)
		case invalid:
			t.Skipf("every attempt had INVALID runs: %v", wrong)
		default:
			md := readReport(t, dir)
			i := strings.Index(md, "## Where the time went")
			t.Fatalf("%v\nreport section:\n%s", wrong, md[max(i, 0):])
		}
	}
}

func runShifts(r measure.RunSummary) []measure.TimeShift {
	if r.WhereTime == nil {
		return nil
	}
	return r.WhereTime.Shifts
}

// TestWhereTheTimeWentHistograms: a service that says nothing in its
// responses but exports a pool-acquire histogram and a call histogram,
// labelled by route (a value per endpoint, so the rows are the
// endpoints'). With A slow, /a's calls hold the shared pool and /b waits
// for a permit: /b's wait grew while its work stayed flat. With B slow,
// /b's own calls take longer: its work grew. A declared histogram the
// service does not export is said in the report, not left an empty row.
func TestWhereTheTimeWentHistograms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment of two runs (~15 s)")
	}
	spec := func() string {
		sh := histShape{wait: "pool_acquire_seconds", work: "dependency_call_seconds", perMs: 1000,
			labels: func(route string) prometheus.Labels { return prometheus.Labels{"route": route} }}
		return histSpec(t, sh, `      wait: [pool_acquire_seconds, pool_queue_seconds]
      work: [dependency_call_seconds]
      by: route`)
	}
	dir, out, sum := runHist(t, "timing", spec, "/b", map[string][]string{"slowa": {measure.GrewWait}, "slowb": {measure.GrewWork}})

	m, err := readMeta(dir, "slowa-shared-r1")
	if err != nil || m.TimingHistograms == nil || len(m.TimingHistograms.Histograms) != 3 {
		t.Errorf("meta: histograms %+v (%v), want external.timing.histograms'", m.TimingHistograms, err)
	}
	for _, run := range sum.Runs {
		if w := run.WhereTime; w == nil || len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "`pool_queue_seconds` (a wait under external.timing.histograms): the service never exported it") {
			t.Errorf("%s: notes %+v, want pool_queue_seconds never exported", run.ID, run.WhereTime)
		}
	}
	console := strings.Join(strings.Fields(out), " ")
	for _, s := range []string{"warning: pre-flight: mode shared: external.timing.histograms: no histogram pool_queue_seconds at ",
		"NOTE: Where the time went, not read in 2 of 2 runs: `pool_queue_seconds`"} {
		if !strings.Contains(console, s) {
			t.Errorf("the console lacks %q:\n%s", s, out)
		}
	}
	md := readReport(t, dir)
	html, err := os.ReadFile(filepath.Join(dir, rundata.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Where the time went", "Source metrics: ", "| slowa-shared-r1 | /b | fault | metrics | `pool_acquire_seconds` ",
		"slowa-shared-r1 (metrics): /b: fault phase: waited ", "for `pool_acquire_seconds`, worked ", "the wait grew (`pool_acquire_seconds` mean ",
		"slowb-shared-r1 (metrics): /b: fault phase: ", "the work grew (`dependency_call_seconds` mean ",
		"slowa-shared-r1 (metrics): **not read**: `pool_queue_seconds`"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	for _, s := range []string{"<h2>Where the time went</h2>", "<td>/b</td><td>fault</td><td>metrics</td>", "<strong>not read</strong>"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
}

// TestWhereTheTimeWentPoolHistograms: the same service exporting another
// shape: milliseconds, a pool label (one value, the shared pool, so the
// rows are the pool's), a unit the work's name does not say, and a decoy
// series of another service that only the label filter keeps out. By pool
// the two endpoints are one row: with A slow its wait grew and so did its
// work (/a's slow calls); with B slow only its work grew.
func TestWhereTheTimeWentPoolHistograms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment of two runs (~15 s)")
	}
	spec := func() string {
		sh := histShape{wait: "db_pool_wait_milliseconds", work: "db_query_time", perMs: 1,
			labels: func(string) prometheus.Labels { return prometheus.Labels{"pool": "shared", "app": "shop"} },
			decoy:  prometheus.Labels{"pool": "shared", "app": "other"}}
		return histSpec(t, sh, `      wait: [db_pool_wait_milliseconds]
      work: [db_query_time]
      unit: ms
      by: pool
      match: {app: shop}`)
	}
	_, _, sum := runHist(t, "timing", spec, "pool=shared", map[string][]string{"slowa": {measure.GrewBoth, measure.GrewWait}, "slowb": {measure.GrewWork}})
	for _, run := range sum.Runs {
		for _, row := range run.WhereTime.Rows {
			if row.Source != measure.TimingMetrics {
				continue
			}
			for _, p := range append(row.Wait, row.Work...) {
				if p.P99Ms >= 4000 || p.MeanMs >= 4000 {
					t.Errorf("%s %s: %s p99 %g ms, mean %g ms: the decoy's 5 s were not filtered out", run.ID, row.Phase, p.Name, p.P99Ms, p.MeanMs)
				}
			}
		}
	}
}
