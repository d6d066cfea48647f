package service

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestTenantIsolation: tenant noisy sends 3×P requests that its dependency
// holds; tenant quiet then calls /b, a fast dependency, through the same
// shared pool. Without a tenant limit noisy takes every permit and quiet
// is refused each time (one tenant's load is a denial of service against
// the others); with a partition per tenant, or a fair share with a cap,
// noisy is refused past its share at once and quiet is served every time.
func TestTenantIsolation(t *testing.T) {
	const p, quietCalls = 4, 10
	for _, tt := range []struct {
		name    string
		tenants *TenantConfig
		noisyIn int  // noisy's requests that reach the dependency
		isolate bool // quiet is served
	}{
		{"shared", &TenantConfig{Mode: TenantShared, Names: []string{"noisy", "quiet"}}, p, false},
		{"partitioned", &TenantConfig{Mode: TenantPartitioned, Partitions: map[string]int{"noisy": 2, "quiet": 1}, Other: 1}, 2, true},
		{"fair-share", &TenantConfig{Mode: TenantFairShare, Names: []string{"noisy", "quiet"}, Cap: 2}, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			heldA := startHeldDep(t, 3*p)
			fastB := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond, Size: 2})
			svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: p},
				Timeout: 30 * time.Second, Endpoints: TwoEndpoints(heldA.url, fastB), Tenants: tt.tenants})
			c := testClient(t)
			noisy := map[string]string{DefaultTenantHeader: "noisy"}
			replies := make(chan reply, 3*p)
			var wg sync.WaitGroup
			for range 3 * p {
				wg.Go(func() { replies <- get(t, c, url+"/a", noisy) })
			}
			heldA.awaitArrivals(t, tt.noisyIn)
			wantReject := map[bool]string{true: RejectTenant, false: "full"}[tt.isolate]
			for range 3*p - tt.noisyIn { // the rest are refused at once
				if r := <-replies; r.status != http.StatusServiceUnavailable || r.header.Get(rundata.HeaderBulkheadReject) != wantReject {
					t.Errorf("noisy over its share: %d %s, want 503 %s", r.status, r.header.Get(rundata.HeaderBulkheadReject), wantReject)
				}
			}
			ok := 0
			for range quietCalls {
				if r := get(t, c, url+"/b", map[string]string{DefaultTenantHeader: "quiet"}); r.status == http.StatusOK {
					ok++
				}
			}
			heldA.release()
			wg.Wait()
			t.Logf("%s: quiet tenant %d of %d ok (%d%%) while noisy holds %d permits of %d", tt.name, ok, quietCalls, 100*ok/quietCalls, tt.noisyIn, p)
			if want := map[bool]int{true: quietCalls, false: 0}[tt.isolate]; ok != want {
				t.Errorf("quiet tenant: %d of %d calls ok, want %d", ok, quietCalls, want)
			}
			m := svc.tenants.m
			overShare := map[bool]int{true: 3*p - tt.noisyIn, false: 0}[tt.isolate]
			for _, c := range []struct {
				tenant, outcome string
				want            int
			}{
				{"noisy", answerOK, tt.noisyIn},
				{"noisy", answerOverShare, overShare},
				{"noisy", answerRejected, 3*p - tt.noisyIn - overShare},
				{"quiet", answerOK, map[bool]int{true: quietCalls}[tt.isolate]},
				{"quiet", answerRejected, map[bool]int{false: quietCalls}[tt.isolate]},
			} {
				if got := metricValue(t, m.requests.WithLabelValues(c.tenant, c.outcome)); got != float64(c.want) {
					t.Errorf("tenant %s, outcome %s: %v requests, want %d", c.tenant, c.outcome, got, c.want)
				}
			}
			if got := metricValue(t, m.inUse.WithLabelValues("noisy")); got != 0 {
				t.Errorf("noisy's permits in use after its requests: %v, want 0", got)
			}
		})
	}
}

// TestTenantLabelsAndCaps: unnamed tenants, and a request without the
// header (tenant default), are labelled other, yet each has a cap of its
// own in fair-share mode; the permits in use are exported while held.
func TestTenantLabelsAndCaps(t *testing.T) {
	heldA := startHeldDep(t, 4)
	svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 8},
		Timeout: 30 * time.Second, Endpoints: TwoEndpoints(heldA.url, heldA.url),
		Tenants: &TenantConfig{Mode: TenantFairShare, Header: "X-Customer", Names: []string{"known"}, Cap: 1}})
	c := testClient(t)
	var wg sync.WaitGroup
	for _, tenant := range []string{"x1", "x2", ""} {
		wg.Go(func() {
			hdr := map[string]string{}
			if tenant != "" {
				hdr["X-Customer"] = tenant
			}
			if r := get(t, c, url+"/a", hdr); r.status != http.StatusOK {
				t.Errorf("tenant %q under its cap: %d, want 200", tenant, r.status)
			}
		})
	}
	heldA.awaitArrivals(t, 3)
	if r := get(t, c, url+"/b", map[string]string{"X-Customer": "x1"}); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"reason":"tenant"`) {
		t.Errorf("x1 over its cap of 1: %d %q, want 503 tenant", r.status, r.body)
	}
	m := get(t, c, url+"/metrics", nil).body
	for _, want := range []string{
		`bulkheadlab_tenant_permits_in_use{tenant="other"} 3`, `bulkheadlab_tenant_permits_in_use{tenant="known"} 0`,
		`bulkheadlab_tenant_permits_limit{tenant="other"} 1`,
		`bulkheadlab_tenant_requests_total{outcome="over_share",tenant="other"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(m, `tenant="x1"`) {
		t.Error("an unnamed tenant has a label of its own")
	}
	heldA.release()
	wg.Wait()
	svc.tenants.mu.Lock()
	defer svc.tenants.mu.Unlock()
	if len(svc.tenants.held) != 0 {
		t.Errorf("fair-share counts after every request ended: %v, want none", svc.tenants.held)
	}
}

func TestTenantConfigErrors(t *testing.T) {
	good := Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 4}, Timeout: time.Second,
		Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2")}
	for _, tt := range []struct {
		field string
		tc    TenantConfig
	}{
		{"tenant_mode", TenantConfig{Mode: "split"}},
		{"tenant_header", TenantConfig{Mode: TenantShared, Header: "X Tenant"}},
		{"tenants", TenantConfig{Mode: TenantShared, Names: []string{"other"}}},
		{"tenants", TenantConfig{Mode: TenantShared, Names: []string{"a", "a"}}},
		{"tenant_cap", TenantConfig{Mode: TenantFairShare}},
		{"tenant_cap", TenantConfig{Mode: TenantShared, Cap: 2}},
		{"tenant_partitions", TenantConfig{Mode: TenantPartitioned, Other: 1}},
		{"tenant_partitions", TenantConfig{Mode: TenantFairShare, Cap: 1, Partitions: map[string]int{"a": 1}}},
		{"tenant_other", TenantConfig{Mode: TenantPartitioned, Partitions: map[string]int{"a": 1}}},
		{"tenant_partitions.Big", TenantConfig{Mode: TenantPartitioned, Partitions: map[string]int{"Big": 1}, Other: 1}},
		{"tenant_partitions.a", TenantConfig{Mode: TenantPartitioned, Partitions: map[string]int{"a": 0}, Other: 1}},
		{"tenant_partitions", TenantConfig{Mode: TenantPartitioned, Partitions: map[string]int{"a": 3, "b": 1}, Other: 1}},
		{"", TenantConfig{Mode: TenantPartitioned, Partitions: map[string]int{"a": 2, "b": 1}, Other: 1}},
		{"", TenantConfig{Mode: TenantFairShare, Cap: 9}},
	} {
		cfg := good
		cfg.Tenants = &tt.tc
		checkField(t, tt.tc, cfg.Validate(), tt.field)
	}
}
