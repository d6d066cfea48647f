package rundata

// TenantsRoles name the runs of the tenant claims (seed-004: "without
// tenant partitioning, one tenant's load is a denial of service against
// every other tenant, and it need not be malicious to be effective"). The
// tenants are load classes: endpoints whose requests carry a tenant's
// header (a noisy one and quiet ones, typically on one path of the
// service). Under Condition the noisy tenant's load rises far above its
// share; Control is the run without it.
//
//   - TENANTS-DOS: in Shared (one pool for every tenant, no partition) the
//     quiet tenants lose their baseline to the noisy one's load.
//   - TENANTS-ISOLATED: in each of Isolated (a partition per tenant, or a
//     fair share with a cap) every quiet tenant stays at its baseline (its
//     p99 rise over the control's, its error rate, P2's thresholds) and the
//     noisy tenant's failures are fast rejections (P2's fast-reject rule).
type TenantsRoles struct {
	Condition string `yaml:"condition" json:"condition"`
	// Control is the condition compared against (default: the
	// expectations' healthy).
	Control string `yaml:"control,omitempty" json:"control,omitempty"`
	// Shared is the mode without partitions (TENANTS-DOS; none: not
	// judged); Isolated the modes with them.
	Shared   string   `yaml:"shared,omitempty" json:"shared,omitempty"`
	Isolated []string `yaml:"isolated" json:"isolated"`
	// Noisy is the noisy tenant's endpoint (default: the culprit); Quiet
	// the quiet tenants' (default: the victim).
	Noisy string   `yaml:"noisy,omitempty" json:"noisy,omitempty"`
	Quiet []string `yaml:"quiet,omitempty" json:"quiet,omitempty"`
}

// WithDefaults returns r with every unset field at its default, from the
// expectations' healthy condition, victim and culprit.
func (r TenantsRoles) WithDefaults(healthy, victim, culprit string) TenantsRoles {
	if r.Control == "" {
		r.Control = healthy
	}
	if r.Noisy == "" {
		r.Noisy = culprit
	}
	if len(r.Quiet) == 0 {
		r.Quiet = []string{victim}
	}
	return r
}

// TenantRoles returns the tenant claims' roles with their defaults; nil
// when the expectations name none.
func (e Expectations) TenantRoles() *TenantsRoles {
	if e.Tenants == nil {
		return nil
	}
	r := e.Tenants.WithDefaults(e.Healthy, e.Victim, e.Culprit)
	return &r
}

// Metric names of the built-in service's tenant stage (service/tenants.go),
// labelled tenant (the named tenants, every other "other"): requests by
// outcome (outcome="over_share": refused at once, over the tenant's
// partition or cap), the requests a tenant has admitted, and its limit
// (a partition's size or the cap; 0 when tenants share the pools).
const (
	MetricTenantRequests = "bulkheadlab_tenant_requests_total"
	MetricTenantInUse    = "bulkheadlab_tenant_permits_in_use"
	MetricTenantLimit    = "bulkheadlab_tenant_permits_limit"
	// TenantOverShare is the outcome of a request the tenant stage refused.
	TenantOverShare = "over_share"
)
