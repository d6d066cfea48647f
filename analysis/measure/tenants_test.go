package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// tenantRunOf builds a run of a partitioned service sampled every 250 ms,
// 2 s before the fault and 4 s of fault: the noisy tenant (partition 8)
// holds 3 before the fault and its 8 during it, while 320 of its requests
// a second are refused by its share; the quiet one holds 5 of its 8; guest
// is one of the tenants labelled other.
func tenantRunOf() *Run {
	start := time.Unix(1000, 0)
	fault := start.Add(2 * time.Second)
	r := &rundir.Run{Meta: rundata.RunMeta{Phases: []rundata.PhaseSpan{
		{Name: rundata.PhaseBaseline, Start: start, End: fault},
		{Name: rundata.PhaseFault, Start: fault, End: fault.Add(4 * time.Second)}},
		Endpoints: []rundata.EndpointInfo{{Name: "noisy", Tenant: "noisy"}, {Name: "quiet", Tenant: "quiet"}, {Name: "guest", Tenant: "other"}, {Name: "b"}}}}
	key := func(m, t string) string { return rundata.Key(m, rundata.L("tenant", t)) }
	var refused float64
	for i := 0; i <= 24; i++ {
		at := start.Add(time.Duration(i) * 250 * time.Millisecond)
		noisy := 3.0
		if at.After(fault) {
			noisy = 8
			refused += 80
		}
		v := map[string]float64{key(rundata.MetricTenantLimit, "noisy"): 8, key(rundata.MetricTenantLimit, "quiet"): 8, key(rundata.MetricTenantLimit, "other"): 4,
			key(rundata.MetricTenantInUse, "noisy"): noisy, key(rundata.MetricTenantInUse, "quiet"): 5, key(rundata.MetricTenantInUse, "other"): 2,
			rundata.Key(rundata.MetricTenantRequests, rundata.L("tenant", "noisy"), rundata.L("outcome", rundata.TenantOverShare)): refused}
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: v})
	}
	return &Run{Data: r}
}

func TestTenantsStats(t *testing.T) {
	ex := rundata.DefaultExpectations()
	if got := tenantsStats(tenantRunOf().Data, ex); got != nil {
		t.Errorf("without expectations.tenants: %+v, want none", got)
	}
	ex.Tenants = &rundata.TenantsRoles{Condition: "batch", Isolated: []string{"partitioned"}}
	got := tenantsStats(tenantRunOf().Data, ex)
	if got == nil || len(got.Tenants) != 3 {
		t.Fatalf("tenants %+v, want noisy, quiet and guest", got)
	}
	s := RunSummary{Tenants: got}
	for _, want := range []TenantStats{
		{Endpoint: "noisy", Tenant: "noisy", Limit: 8, PeakInUse: 8, OverSharePerS: 320},
		{Endpoint: "quiet", Tenant: "quiet", Limit: 8, PeakInUse: 5, OverSharePerS: Undefined},
		{Endpoint: "guest", Tenant: "other", Limit: 4, PeakInUse: 2, OverSharePerS: Undefined},
	} {
		g := TenantOf(s, want.Endpoint)
		same := func(a, b Num) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) }
		if g.Tenant != want.Tenant || !same(g.Limit, want.Limit) || !same(g.PeakInUse, want.PeakInUse) || !same(g.OverSharePerS, want.OverSharePerS) {
			t.Errorf("%s: %+v, want %+v", want.Endpoint, g, want)
		}
	}
	if b := TenantOf(s, "b"); !math.IsNaN(float64(b.Limit)) {
		t.Errorf("an endpoint without a tenant: %+v, want undefined", b)
	}
}

// TestMeasuredDemandOfLoadClasses: load classes of one path are measured
// by the service's metrics of that path (its calls' mean duration), and a
// tenant's requests its share refused never reach the pool: the noisy
// tenant's 1600 results of 4 s of fault, 1280 of them refused by its
// share, hold 320/4 s × 0.1 s = 8 permits; quiet's 200 hold 5.
func TestMeasuredDemandOfLoadClasses(t *testing.T) {
	r := tenantRunOf()
	r.Data.Meta.Endpoints = []rundata.EndpointInfo{{Name: "noisy", Tenant: "noisy", Path: "work", Pool: "shared"}, {Name: "quiet", Tenant: "quiet", Path: "work", Pool: "shared"}}
	r.Data.Meta.Pools = []rundata.PoolInfo{{Name: "shared", Limit: 20, Endpoints: []string{"noisy", "quiet"}}}
	fault, _ := r.Data.PhaseSpan(rundata.PhaseFault)
	for ep, n := range map[string]int64{"noisy": 1600, "quiet": 200} {
		var c rundata.Counts
		c[rundata.ClassOK] = n
		// The mean latency of the ok results is a wait in a queue too: not W.
		r.Data.Phases = append(r.Data.Phases, rundata.PhaseStats{Endpoint: ep, Phase: rundata.PhaseFault, Start: fault.Start, End: fault.End, Counts: c,
			LatencyOK: rundata.Quantiles{Count: n, Mean: 300 * time.Millisecond}})
	}
	l := rundata.L("dependency", "work")
	for i := range r.Data.Metrics {
		k := float64(i)
		r.Data.Metrics[i].Values[rundata.Key(rundata.MetricDepDurationSum, l)] = k * 10 * 0.1
		r.Data.Metrics[i].Values[rundata.Key(rundata.MetricDepDurationCount, l)] = k * 10
	}
	if got := (littlesLaw{r.Data}).measuredDemand(r.Data.Meta.Pools[0], fault.Start, fault.End); math.Abs(got-13) > 0.01 {
		t.Errorf("measured demand %.3f, want 13 (noisy 8 + quiet 5)", got)
	}
	if got := serviceEndpoint(r.Data, "b"); got != "b" {
		t.Errorf("service endpoint of an endpoint without a path: %q, want its name", got)
	}
}
