//go:build e2e

package main

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestBackgroundJobsPreset: a burst of jobs drained by the service's own
// workers beside /checkout and /invoice. With the jobs on the request pool
// (32 workers, a pool of 16) the drain takes it and the live traffic is
// refused (JOBS-STARVE); on 8 workers of their own the live traffic stays
// at its baseline while the queue drains more slowly (JOBS-ISOLATED): exit
// 0. Judged with the layouts' roles swapped — the jobs on the request pool
// as the bounded layout, the own workers as the shared one — both are NOT
// SUPPORTED.
func TestBackgroundJobsPreset(t *testing.T) {
	// A 2.5 s fault phase: 600 jobs drain in ≈ 2 s on the pool (≈ 300/s).
	text := presetEdited(t, "background-jobs",
		"phases: {warmup: 1s, baseline: 3s, fault: 4s, recovery: 2s}", "phases: {warmup: 500ms, baseline: 1500ms, fault: 2500ms, recovery: 300ms}",
		"jobs: {count: 1000}", "jobs: {count: 600}")
	code, out, dir := runSpecJudged(t, "background-jobs", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		j := measure.JobsOf(r)
		if j == nil {
			t.Fatalf("run %s has no job numbers", r.ID)
		}
		live := j.LiveOf("checkout")
		t.Logf("%s: %v jobs enqueued, %v done in the fault (%.0f/s), peak depth %v, drained in %v s (%v left); /checkout while draining ok %.2f p99 %.0f ms, fault errors %.2f",
			r.ID, j.Enqueued, j.DoneInFault, float64(j.DonePerS), j.PeakDepth, j.DrainS, j.Left, float64(live.OKShare), float64(live.P99Ms), float64(r.Endpoint("checkout").FaultErrorRate))
		if r.Condition != "drain" {
			if j.Enqueued != 0 {
				t.Errorf("%s: %v jobs enqueued without a burst", r.ID, j.Enqueued)
			}
			continue
		}
		if j.Enqueued != 600 || !(j.StartedInFault > 0) || !(j.PeakDepth > 0) {
			t.Errorf("%s: %v enqueued, %v started in the fault, peak depth %v; want 600 enqueued, a queue, jobs run", r.ID, j.Enqueued, j.StartedInFault, j.PeakDepth)
		}
		switch r.Mode {
		case "shared-workers":
			// The drain holds the pool: /checkout mostly refused while it lasts.
			if !(live.OKShare < 0.5) || !(measure.PeakPoolShare(r) >= 1) {
				t.Errorf("%s: /checkout ok %v while draining, pool peak %v; want most refused, the pool full", r.ID, live.OKShare, measure.PeakPoolShare(r))
			}
		case "own-workers":
			// 8 workers: 160 jobs a second, not all 600 in 2.5 s.
			if !(live.OKShare > 0.99) || !(j.MeanBusy > 7) || !(j.DoneInFault < 600) {
				t.Errorf("%s: /checkout ok %v while draining, %v workers busy, %v done; want all ok, 8 busy, the drain slower than the fault", r.ID, live.OKShare, j.MeanBusy, j.DoneInFault)
			}
		}
	}
	for _, tc := range []struct {
		claim string
		roles rundata.JobsRoles
	}{
		{"JOBS-ISOLATED", rundata.JobsRoles{Condition: "drain", Bounded: []string{"shared-workers"}, Live: []string{"checkout", "invoice"}}},
		{"JOBS-STARVE", rundata.JobsRoles{Condition: "drain", Shared: "own-workers", Bounded: []string{"shared-workers"}, Live: []string{"checkout", "invoice"}}},
	} {
		roles := tc.roles
		if o := rejudge(t, dir, tc.claim, func(ex *rundata.Expectations) { ex.Jobs = &roles }); o != verdict.NotSupported {
			t.Errorf("%s with %+v: %s, want NOT SUPPORTED", tc.claim, tc.roles, o)
		}
	}
}

// TestJobsOnTheLiveEndpointsDependency: another shape of the claim — the
// live endpoint is /shop (load class storefront), the jobs call its own
// dependency, and the pools are per dependency. A bulkhead per dependency
// is no wall between a dependency's jobs and its requests: jobs sharing
// /shop's pool starve it (JOBS-STARVE) while /mailer, behind its own pool,
// is untouched; 4 workers of their own keep /shop at its baseline
// (JOBS-ISOLATED).
func TestJobsOnTheLiveEndpointsDependency(t *testing.T) {
	code, out, dir := runSpecJudged(t, "jobs-shape", `name: jobs-shape
seed: 7
repeats: 1
service: {timeout: 250ms, pool_size: 16, queue: 8, max_wait: 1T, conns: 64}
endpoints:
  - {name: storefront, dependency: db, path: shop}
  - {name: mailer, dependency: mail}
dependencies:
  db: {latency: 20ms, jitter: 2ms}
  mail: {latency: 20ms, jitter: 2ms}
load: {rates: {storefront: 100, mailer: 20}}
phases: {warmup: 300ms, baseline: 1s, fault: 1500ms, recovery: 200ms}
conditions:
  - healthy
  - {name: reindex, description: "a reindex of the catalog: 500 jobs, each reading db", jobs: {count: 500, dependency: db}}
modes:
  - {name: per-dependency, pools: bulkhead, pool_sizes: {shop: 8, mailer: 8}, queues: {shop: 4, mailer: 4}, jobs: {mode: shared, workers: 16}}
  - {name: own, pools: bulkhead, pool_sizes: {shop: 8, mailer: 8}, queues: {shop: 4, mailer: 4}, jobs: {mode: own, workers: 4}}
expectations:
  victim: storefront
  culprit: mailer
  jobs: {condition: reindex, shared: per-dependency, bounded: [own]}
  check: [JOBS-STARVE, JOBS-ISOLATED]
validity: {retries: 2}
`)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		j := measure.JobsOf(r)
		if j == nil || r.Condition != "reindex" {
			continue
		}
		shop, mailer := j.LiveOf("storefront"), j.LiveOf("mailer")
		t.Logf("%s: jobs through /%s, %v done in the fault; while draining /shop ok %.2f, /mailer ok %.2f", r.ID, j.Endpoint, j.DoneInFault, float64(shop.OKShare), float64(mailer.OKShare))
		if j.Endpoint != "shop" {
			t.Errorf("%s: jobs through /%s, want /shop", r.ID, j.Endpoint)
		}
		if !(mailer.OKShare > 0.99) {
			t.Errorf("%s: /mailer ok %v while draining; want all ok behind its own pool", r.ID, mailer.OKShare)
		}
	}
}
