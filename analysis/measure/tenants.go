package measure

import (
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TenantStats are what the built-in service's tenant stage saw of one
// endpoint's tenant over the fault phase (the run, without one), from the
// stage's metrics (rundata.MetricTenant*): the tenant is the endpoint's
// label there, which other endpoints may share (the tenants labelled
// "other").
type TenantStats struct {
	Endpoint string `json:"endpoint"`
	Tenant   string `json:"tenant"`
	// Limit is the tenant's partition or cap (0: tenants share the pools
	// without a limit).
	Limit Num `json:"limit"`
	// PeakInUse is the most requests of the tenant admitted at once in the
	// samples (holding or waiting for a permit of the pool).
	PeakInUse Num `json:"peak_in_use"`
	// OverSharePerS are the tenant's requests refused at once, over its
	// partition or cap, per second.
	OverSharePerS Num `json:"over_share_per_s"`
}

// TenantsRun holds a run's tenant numbers, one entry per endpoint whose
// tenant the run's metadata names, in endpoint order.
type TenantsRun struct {
	Tenants []TenantStats `json:"tenants"`
}

// tenantFamily adds the tenant stage's numbers.
func tenantFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	s.Tenants = tenantsStats(r, ex)
}

// tenantsStats computes TenantsRun; nil unless the experiment names the
// tenant claims and the run's endpoints have tenants.
func tenantsStats(run *rundir.Run, ex rundata.Expectations) *TenantsRun {
	if ex.Tenants == nil {
		return nil
	}
	from, ok := run.FaultStart()
	if !ok {
		from = run.Origin()
	}
	to := run.FaultEnd()
	out := &TenantsRun{}
	for _, e := range run.Meta.Endpoints {
		if e.Tenant == "" {
			continue
		}
		l := rundata.L("tenant", e.Tenant)
		st := TenantStats{Endpoint: e.Name, Tenant: e.Tenant, Limit: Undefined, PeakInUse: Undefined, OverSharePerS: Undefined}
		if lim := run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricTenantLimit, l)); len(lim) > 0 {
			st.Limit = Num(lim[len(lim)-1].Value)
		}
		peak := math.NaN()
		for _, p := range run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricTenantInUse, l)) {
			if inRange(p.Time, from, to) && (math.IsNaN(peak) || p.Value > peak) {
				peak = p.Value
			}
		}
		st.PeakInUse = Num(peak)
		over := run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricTenantRequests, l, rundata.L("outcome", rundata.TenantOverShare)))
		if d, ok := rundir.DeltaOver(over, from, to); ok && to.After(from) {
			st.OverSharePerS = Num(d / to.Sub(from).Seconds())
		}
		out.Tenants = append(out.Tenants, st)
	}
	if len(out.Tenants) == 0 {
		return nil
	}
	return out
}

// TenantOf returns endpoint ep's tenant numbers in r, all undefined when it
// has none.
func TenantOf(r RunSummary, ep string) TenantStats {
	if r.Tenants != nil {
		for _, t := range r.Tenants.Tenants {
			if t.Endpoint == ep {
				return t
			}
		}
	}
	return TenantStats{Endpoint: ep, Limit: Undefined, PeakInUse: Undefined, OverSharePerS: Undefined}
}

// PeakPoolShare is the highest in_use / limit any worker pool of r reached
// over the fault phase; undefined without pool numbers.
func PeakPoolShare(r RunSummary) Num {
	peak := math.NaN()
	for _, p := range r.Pools {
		if sh := Ratio(float64(p.PeakInUse), float64(p.Limit)); !math.IsNaN(sh) && (math.IsNaN(peak) || sh > peak) {
			peak = sh
		}
	}
	return Num(peak)
}

// serviceEndpoint is the service's endpoint that endpoint ep's requests go
// to: ep, or the path it shares with other load classes.
func serviceEndpoint(run *rundir.Run, ep string) string {
	if p := run.EndpointInfo(ep).Path; p != "" {
		return p
	}
	return ep
}

// tenantRefused is how many of endpoint ep's requests between from and to
// its tenant's share refused at once, by the tenant stage's metrics: the
// tenant's refusals, split among the endpoints of that tenant in
// proportion to their results; 0 without a tenant stage.
func tenantRefused(run *rundir.Run, ep string, from, to time.Time) float64 {
	t := run.EndpointInfo(ep).Tenant
	if t == "" {
		return 0
	}
	over := run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricTenantRequests, rundata.L("tenant", t), rundata.L("outcome", rundata.TenantOverShare)))
	d, ok := rundir.DeltaOver(over, from, to)
	if !ok || d <= 0 {
		return 0
	}
	phase := mainPhase(run)
	results := func(e string) float64 {
		ps, ok := run.PhaseSummary(e, phase)
		if !ok {
			ps = endpointWindows{run}.mergeWindows(e, phase)
		}
		return float64(ps.Counts.Total())
	}
	mine, all := results(ep), 0.0
	for _, e := range run.Meta.Endpoints {
		if e.Tenant == t {
			all += results(e.Name)
		}
	}
	if all <= 0 {
		return 0
	}
	return d * mine / all
}
