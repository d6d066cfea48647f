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
	return &Run{r}
}

func TestTenantsStats(t *testing.T) {
	ex := rundata.DefaultExpectations()
	if got := tenantRunOf().tenantsStats(ex); got != nil {
		t.Errorf("without expectations.tenants: %+v, want none", got)
	}
	ex.Tenants = &rundata.TenantsRoles{Condition: "batch", Isolated: []string{"partitioned"}}
	got := tenantRunOf().tenantsStats(ex)
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
