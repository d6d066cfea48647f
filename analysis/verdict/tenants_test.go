package verdict

import (
	"math"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// tenantEndpoint is one tenant's endpoint in a run at T = 250 ms: its
// baseline p99 is 110 ms and its fault phase p99 and error rate as given;
// of its failures, fast is the share of fast rejections (NaN: none).
func tenantEndpoint(name string, faultP99, errRate, fast float64) measure.EndpointStats {
	return measure.EndpointStats{Endpoint: name, Dependency: "A", BaselineP99Ms: 110, FaultP99Ms: measure.Num(faultP99),
		FaultErrorRate: measure.Num(errRate), FaultOKRate: 50, RejectedP99Ms: 2, FastRejectShare: measure.Num(fast),
		Phases: []measure.PhaseNumbers{{Phase: rundata.PhaseBaseline, ErrorRate: 0}}}
}

// tenantRun is a run of the noisy-tenant matrix: the noisy tenant and two
// quiet ones (quiet, guest), the quiet ones with the same numbers.
func tenantRun(cond, mode string, quietP99, quietErr, noisyErr, noisyFast float64) measure.RunSummary {
	return measure.RunSummary{ID: cond + "-" + mode + "-r1", Mode: mode, Condition: cond, Repeat: 1, Status: rundata.StatusComplete, Valid: true,
		TimeoutMs: 250,
		Endpoints: []measure.EndpointStats{
			tenantEndpoint("guest", quietP99, quietErr, nan),
			tenantEndpoint("noisy", 120, noisyErr, noisyFast),
			tenantEndpoint("quiet", quietP99, quietErr, nan)},
		Pools: []measure.PoolStats{{Pool: "shared", Limit: 20, PeakInUse: 15}},
		Tenants: &measure.TenantsRun{Tenants: []measure.TenantStats{
			{Endpoint: "noisy", Tenant: "noisy", Limit: 8, PeakInUse: 8, OverSharePerS: 320}}}}
}

// tenantExpectations name the roles: batch against healthy, shared against
// partitioned, the noisy tenant against quiet and guest.
func tenantExpectations() rundata.Expectations {
	ex := rundata.DefaultExpectations()
	ex.Victim, ex.Culprit = "quiet", "noisy"
	ex.Tenants = &rundata.TenantsRoles{Condition: "batch", Shared: "shared", Isolated: []string{"partitioned"}, Quiet: []string{"quiet", "guest"}}
	return ex
}

func TestTenantsIsolated(t *testing.T) {
	ex := tenantExpectations()
	healthy := tenantRun("healthy", "partitioned", 112, 0, 0, nan)
	for _, tc := range []struct {
		name   string
		runs   []measure.RunSummary
		want   Outcome
		reason string
	}{
		{"partitions: quiet tenants at baseline, the noisy one refused fast",
			[]measure.RunSummary{healthy, tenantRun("batch", "partitioned", 115, 0, 0.8, 1)}, Supported, ""},
		{"one pool for all (the layout that breaks it): quiet tenants lose half their requests and wait",
			[]measure.RunSummary{healthy, tenantRun("batch", "partitioned", 215, 0.57, 0.57, 1)}, NotSupported, "/quiet fault error rate in partitioned, batch = 0.57 share, needs <= 0.01"},
		{"quiet tenants slowed only",
			[]measure.RunSummary{healthy, tenantRun("batch", "partitioned", 200, 0, 0.8, 1)}, NotSupported, "/guest p99 rise in partitioned, batch − healthy = 0.352 T, needs <= 0.25"},
		{"the noisy tenant's excess times out instead of being refused",
			[]measure.RunSummary{healthy, tenantRun("batch", "partitioned", 115, 0, 0.8, 0.2)}, NotSupported, "/noisy fast-reject share of failures in partitioned, batch = 0.2 share, needs >= 0.9"},
		{"the noisy tenant never went past its share: nothing to judge",
			[]measure.RunSummary{healthy, tenantRun("batch", "partitioned", 115, 0, 0, nan)}, Inconclusive, "/noisy fast-reject share of failures in partitioned, batch could not be measured"},
		{"no control run", []measure.RunSummary{tenantRun("batch", "partitioned", 115, 0, 0.8, 1)}, Skipped, "healthy/partitioned"},
	} {
		v := verdictOn(t, claims.TenantsIsolated, buildCells(tc.runs, ex), ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
	}
	// Every isolated mode must hold: fair share judged beside partitions.
	ex.Tenants.Isolated = []string{"partitioned", "fair-share"}
	runs := []measure.RunSummary{healthy, tenantRun("batch", "partitioned", 115, 0, 0.8, 1),
		tenantRun("healthy", "fair-share", 112, 0, 0, nan), tenantRun("batch", "fair-share", 300, 0.2, 0.5, 1)}
	v := verdictOn(t, claims.TenantsIsolated, buildCells(runs, ex), ex)
	if v.Outcome != NotSupported || !strings.Contains(v.Reason, "in fair-share") || strings.Contains(v.Reason, "in partitioned") {
		t.Errorf("fair share broken, partitions holding: %s (%s), want NOT SUPPORTED naming fair-share only", v.Outcome, v.Reason)
	}
	if !strings.Contains(v.Claim, "partitioned, fair-share") || !strings.Contains(v.Claim, "(/quiet, /guest)") {
		t.Errorf("claim %q, want the isolated modes and the quiet tenants named", v.Claim)
	}
	var info []string
	for _, m := range v.Measures {
		if m.Op == "" {
			info = append(info, m.Name)
		}
	}
	for _, want := range []string{"/noisy rejected p99 in partitioned, batch", "/noisy's tenant: peak admitted at once in partitioned, batch"} {
		if !strings.Contains(strings.Join(info, "\n"), want) {
			t.Errorf("information %q missing from %v", want, info)
		}
	}
}

func TestTenantsDoS(t *testing.T) {
	ex := tenantExpectations()
	healthy := tenantRun("healthy", "shared", 112, 0, 0, nan)
	for _, tc := range []struct {
		name   string
		surge  measure.RunSummary
		want   Outcome
		reason string
	}{
		{"one pool for all: the quiet tenants lose half their requests", tenantRun("batch", "shared", 215, 0.57, 0.57, 1), Supported, ""},
		{"slowed past P2's limit is harm too", tenantRun("batch", "shared", 200, 0, 0.5, 1), Supported, ""},
		{"partitions judged as the shared mode: no harm", tenantRun("batch", "shared", 115, 0, 0.8, 1), NotSupported, "/quiet harm in shared"},
	} {
		v := verdictOn(t, claims.TenantsDoS, buildCells([]measure.RunSummary{healthy, tc.surge}, ex), ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
	}
	// Without a shared mode named the claim is not judged at all.
	ex.Tenants.Shared = ""
	for _, v := range judge(&Summary{Cells: buildCells([]measure.RunSummary{healthy}, ex), Expectations: ex}) {
		if v.Name == claims.TenantsDoS {
			t.Errorf("without expectations.tenants.shared: %s judged, want not", v.Name)
		}
	}
}

var nan = math.NaN()
