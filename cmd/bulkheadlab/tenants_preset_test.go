//go:build e2e

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestNoisyTenantPreset: three tenants on one endpoint, the noisy one's
// batch 13× its rate. With one pool for every tenant the quiet ones lose
// their baseline (TENANTS-DOS); with a partition per tenant, or a fair
// share with a cap, they keep it and the noisy tenant's excess is refused
// at once by its share (TENANTS-ISOLATED): exit 0. Judged with the layouts'
// roles swapped — the shared pool as the isolated layout, a partitioned
// one as the shared — both are NOT SUPPORTED.
func TestNoisyTenantPreset(t *testing.T) {
	text := shortPreset(t, "noisy-tenant",
		"phases: {warmup: 1s, baseline: 3s, fault: 5s, recovery: 2s}", "phases: {warmup: 500ms, baseline: 1500ms, fault: 2500ms, recovery: 300ms}")
	code, out, dir := runSpecJudged(t, "noisy-tenant", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		noisy, quiet := r.Endpoint("noisy"), r.Endpoint("quiet")
		nt := measure.TenantOf(r, "noisy")
		t.Logf("%s: /noisy errors %.2f (refused by its share %.0f/s, peak %v of %v), /quiet p99 %.0f → %.0f ms, errors %.2f; pool peak %v",
			r.ID, float64(noisy.FaultErrorRate), float64(nt.OverSharePerS), nt.PeakInUse, nt.Limit,
			float64(quiet.BaselineP99Ms), float64(quiet.FaultP99Ms), float64(quiet.FaultErrorRate), measure.PeakPoolShare(r))
		if r.Condition != "batch" {
			continue
		}
		switch r.Mode {
		case "shared":
			if !(nt.OverSharePerS == 0) || !(measure.PeakPoolShare(r) >= 1) {
				t.Errorf("%s: the shared pool refused by share %v/s, peaked at %v of its limit; want none refused by a share, the pool full", r.ID, nt.OverSharePerS, measure.PeakPoolShare(r))
			}
		default:
			// The noisy tenant holds its 8 and the rest of its 400/s is
			// refused by its share: ≈ 320/s.
			if !(nt.PeakInUse <= 8) || !(nt.OverSharePerS > 200) || !(measure.PeakPoolShare(r) < 1) {
				t.Errorf("%s: /noisy's tenant peaked at %v of %v, refused %v/s by its share, pool at %v; want ≤ 8, > 200/s, the pool never full",
					r.ID, nt.PeakInUse, nt.Limit, nt.OverSharePerS, measure.PeakPoolShare(r))
			}
		}
	}
	t.Logf("/quiet harm in shared %.1f; /noisy fast-reject share in partitioned %.3f",
		measureOf(s, "TENANTS-DOS", "/quiet harm in shared"), measureOf(s, "TENANTS-ISOLATED", "/noisy fast-reject share of failures in partitioned"))

	for _, tc := range []struct {
		claim string
		roles rundata.TenantsRoles
	}{
		{"TENANTS-ISOLATED", rundata.TenantsRoles{Condition: "batch", Isolated: []string{"shared"}, Quiet: []string{"quiet", "guest"}}},
		{"TENANTS-DOS", rundata.TenantsRoles{Condition: "batch", Shared: "partitioned", Isolated: []string{"fair-share"}, Quiet: []string{"quiet", "guest"}}},
	} {
		roles := tc.roles
		if o := rejudge(t, dir, tc.claim, func(ex *rundata.Expectations) { ex.Tenants = &roles }); o != verdict.NotSupported {
			t.Errorf("%s with %+v: %s, want NOT SUPPORTED", tc.claim, tc.roles, o)
		}
	}
}

// TestExternalTenants plays a user whose service tells tenants apart by a
// header: two endpoints with one target URL that differ only by X-Tenant
// are two load classes, each with its results and verdicts. The user's
// service runs twice, as one pool for every tenant and with a partition
// per tenant (the built-in service, served by the test); the tenant claims
// judge the two configurations as they do the built-in service's: the
// shared one denies the quiet tenant service, the partitioned one keeps it
// at its baseline and refuses the noisy one's excess fast.
func TestExternalTenants(t *testing.T) {
	deps := stubDeps(t, service.DepConfig{Latency: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Seed: 1, Size: 16})
	proxyA := testkit.FreeAddr(t)
	serveWith := func(tc *service.TenantConfig) string {
		svc, err := service.New(service.Config{
			Layout:    service.LayoutConfig{Mode: service.ModeShared, PoolSize: 20, Queue: 20, MaxWait: 250 * time.Millisecond},
			Timeout:   250 * time.Millisecond,
			Endpoints: []service.Endpoint{{Name: "work", URL: "http://" + proxyA}},
			Tenants:   tc,
		})
		if err != nil {
			t.Fatal(err)
		}
		return serveOn(t, svc.Serve)
	}
	shared := serveWith(nil)
	parts := serveWith(&service.TenantConfig{Mode: service.TenantPartitioned, Partitions: map[string]int{"noisy": 8, "quiet": 8}, Other: 4})
	text := fmt.Sprintf(`name: ext-tenants
seed: 5
repeats: 1
endpoints:
  - {name: noisy, dependency: A, headers: {X-Tenant: noisy}}
  - {name: quiet, dependency: A, headers: {X-Tenant: quiet}}
external:
  upstreams: {A: "%[1]s"}
  proxies:   {A: "%[2]s"}
  rules: [{status: "503", header: X-Bulkhead-Reject, class: rejected}]
modes:
  - name: shared
    external:
      targets: {noisy: "http://%[3]s/work", quiet: "http://%[3]s/work"}
      canary: "http://%[3]s/healthz"
  - name: partitioned
    pools: shared
    external:
      targets: {noisy: "http://%[4]s/work", quiet: "http://%[4]s/work"}
      canary: "http://%[4]s/healthz"
service: {timeout: 250ms, max_wait: 250ms}
load: {rates: {noisy: 30, quiet: 50}, arrivals: constant}
phases: {warmup: 500ms, baseline: 2s, fault: 3s, recovery: 500ms}
conditions: [healthy, {name: batch, rates: {noisy: 400}}]
expectations:
  victim: quiet
  culprit: noisy
  tenants: {condition: batch, shared: shared, isolated: [partitioned]}
  check: [TENANTS-DOS, TENANTS-ISOLATED]
validity: {retries: 2}
`, deps["A"], proxyA, shared, parts)
	code, out, dir := runSpecJudged(t, "ext-tenants", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, claim := range []string{"TENANTS-DOS", "TENANTS-ISOLATED"} {
		if o := outcomeOf(s, claim); o != verdict.Supported {
			t.Errorf("%s: %s, want SUPPORTED", claim, o)
		}
	}
	for _, r := range s.Runs {
		if len(r.Endpoints) != 2 {
			t.Errorf("%s: endpoints %+v, want noisy and quiet apart", r.ID, r.Endpoints)
		}
		if r.Condition == "batch" && r.Mode == "partitioned" {
			if n := r.Endpoint("noisy"); !(n.FaultErrorRate > 0.5) || n.FaultCounts[rundata.ClassRejected]*2 < n.FaultCounts.Total() {
				t.Errorf("%s: /noisy %v, want most of its batch rejected", r.ID, n.FaultCounts)
			}
		}
	}
}
