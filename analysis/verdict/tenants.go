package verdict

import (
	"fmt"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// tenantDecisions are the tenant claims, judged when Expectations.Tenants
// names their runs. The tenants are load classes: endpoints whose requests
// carry a tenant's header (the noisy one and the quiet ones).
var tenantDecisions = []decision{
	{claims.TenantsDoS, tenantsDoSText, tenantsDoS},
	{claims.TenantsIsolated, tenantsIsolatedText, tenantsIsolated},
}

// tenantEndpoints writes endpoints as "/a, /b".
func tenantEndpoints(eps []string) string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = "/" + e
	}
	return strings.Join(out, ", ")
}

func tenantsDoSText(s *Summary) string {
	tr := s.Expectations.TenantRoles()
	return fmt.Sprintf("%s + %s: with one pool for every tenant, /%s's load (not malicious, just more of it) takes the quiet tenants (%s) off their baseline",
		tr.Shared, tr.Condition, tr.Noisy, tenantEndpoints(tr.Quiet))
}

// tenantsDoS is seed-004's "without tenant partitioning, one tenant's load
// is a denial of service against every other tenant, and it need not be
// malicious to be effective": in the mode without partitions, under the
// condition that raises the noisy tenant's load, every quiet tenant is
// harmed (its p99 rise or its error rate beyond what P2 tolerates).
func tenantsDoS(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	tr := ex.TenantRoles()
	b.need([2]string{tr.Condition, tr.Shared}, [2]string{tr.Control, tr.Shared})
	surge, ctrl := b.cells[0], b.cells[1]
	for _, q := range tr.Quiet {
		b.check("/"+q+" harm in "+tr.Shared+": max(p99 rise / P2's limit, error rate / P2's limit)", "×",
			measure.EstimateOf(surge.vals(func(r measure.RunSummary) measure.Num { return r.Harm(q, ex) })), ">=", 1)
	}
	for _, q := range tr.Quiet {
		b.info("/"+q+" fault error rate in "+tr.Shared+", "+tr.Condition, "share", endpointEstimate(surge, q, func(e measure.EndpointStats) measure.Num { return e.FaultErrorRate }))
		b.info("/"+q+" fault p99 in "+tr.Shared+", "+tr.Condition, "ms", endpointEstimate(surge, q, func(e measure.EndpointStats) measure.Num { return e.FaultP99Ms }))
		b.info("/"+q+" fault p99 in "+tr.Shared+", "+tr.Control, "ms", endpointEstimate(ctrl, q, func(e measure.EndpointStats) measure.Num { return e.FaultP99Ms }))
	}
	b.info("/"+tr.Noisy+" fault error rate in "+tr.Shared+", "+tr.Condition, "share", endpointEstimate(surge, tr.Noisy, func(e measure.EndpointStats) measure.Num { return e.FaultErrorRate }))
	b.info("peak worker-pool use in "+tr.Shared+", "+tr.Condition, "share", measure.EstimateOf(surge.vals(measure.PeakPoolShare)))
	return b.decide()
}

func tenantsIsolatedText(s *Summary) string {
	tr := s.Expectations.TenantRoles()
	return fmt.Sprintf("%s: with a partition per tenant (or a fair share) in %s, the quiet tenants (%s) stay at their baseline while /%s's load rises far above its share, and /%s's excess is refused fast",
		tr.Condition, strings.Join(tr.Isolated, ", "), tenantEndpoints(tr.Quiet), tr.Noisy, tr.Noisy)
}

// tenantsIsolated is the remedy: in each mode with tenant partitions (or a
// fair share with a cap), under the condition, every quiet tenant's p99
// rises over its baseline by at most P2's limit beyond its rise under the
// control condition, its error rate stays within P2's tolerance of its
// baseline's, and the noisy tenant's failures are fast rejections
// (FAILFAST's rule: a share of at least P2MinFastRejectShare answered
// within P2FastRejectMaxT·T). A noisy tenant that never failed leaves that
// share undefined: the condition did not push it past its share, and the
// verdict is INCONCLUSIVE, not SUPPORTED.
func tenantsIsolated(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	tr := ex.TenantRoles()
	for _, m := range tr.Isolated {
		b.need([2]string{tr.Condition, m}, [2]string{tr.Control, m})
	}
	for i, m := range tr.Isolated {
		surge, ctrl := b.cells[2*i], b.cells[2*i+1]
		for _, q := range tr.Quiet {
			rise := func(r measure.RunSummary) measure.Num { return r.P99RiseT(q) }
			b.check(fmt.Sprintf("/%s p99 rise in %s, %s − %s", q, m, tr.Condition, tr.Control), "T",
				measure.Bootstrap([][]float64{surge.vals(rise), ctrl.vals(rise)}, func(v []float64) float64 { return v[0] - v[1] }), "<=", ex.P2MaxP99RiseT)
			b.check(fmt.Sprintf("/%s fault error rate in %s, %s", q, m, tr.Condition), "share",
				endpointEstimate(surge, q, func(e measure.EndpointStats) measure.Num { return e.FaultErrorRate }), "<=", measure.MaxErrorRate(surge.baselineErrorRate(q), ex))
		}
		b.check(fmt.Sprintf("/%s fast-reject share of failures in %s, %s", tr.Noisy, m, tr.Condition), "share",
			endpointEstimate(surge, tr.Noisy, func(e measure.EndpointStats) measure.Num { return e.FastRejectShare }), ">=", ex.P2MinFastRejectShare)
	}
	for i, m := range tr.Isolated {
		surge := b.cells[2*i]
		b.info(fmt.Sprintf("/%s rejected p99 in %s, %s", tr.Noisy, m, tr.Condition), "T", measure.EstimateOf(surge.vals(func(r measure.RunSummary) measure.Num {
			return measure.Num(measure.Ratio(float64(r.Endpoint(tr.Noisy).RejectedP99Ms), float64(r.TimeoutMs)))
		})))
		b.info(fmt.Sprintf("/%s fault error rate in %s, %s", tr.Noisy, m, tr.Condition), "share", endpointEstimate(surge, tr.Noisy, func(e measure.EndpointStats) measure.Num { return e.FaultErrorRate }))
		b.info(fmt.Sprintf("/%s refused at once over its tenant's share in %s, %s", tr.Noisy, m, tr.Condition), "per s",
			measure.EstimateOf(surge.vals(func(r measure.RunSummary) measure.Num { return measure.TenantOf(r, tr.Noisy).OverSharePerS })))
		b.info(fmt.Sprintf("/%s's tenant: its partition or cap in %s", tr.Noisy, m), "requests",
			measure.EstimateOf(surge.vals(func(r measure.RunSummary) measure.Num { return measure.TenantOf(r, tr.Noisy).Limit })))
		b.info(fmt.Sprintf("/%s's tenant: peak admitted at once in %s, %s", tr.Noisy, m, tr.Condition), "requests",
			measure.EstimateOf(surge.vals(func(r measure.RunSummary) measure.Num { return measure.TenantOf(r, tr.Noisy).PeakInUse })))
		b.info(fmt.Sprintf("peak worker-pool use in %s, %s", m, tr.Condition), "share", measure.EstimateOf(surge.vals(measure.PeakPoolShare)))
	}
	return b.decide()
}

// endpointEstimate is f of endpoint ep's stats over the cell's runs.
func endpointEstimate(c *Cell, ep string, f func(measure.EndpointStats) measure.Num) measure.Estimate {
	return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return f(r.Endpoint(ep)) }))
}
