package service

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http/httpguts"
)

// TenantMode is how the service's capacity is divided among tenants.
type TenantMode string

const (
	// TenantShared: every tenant draws from the layout's pools as they
	// are; nothing stops one tenant from holding all of them. The tenant
	// stage only counts, so that a run can see whose requests failed.
	TenantShared TenantMode = "shared"
	// TenantPartitioned: each named tenant has a partition of its own of
	// TenantConfig.Partitions[name] permits, and every other tenant
	// draws from one partition of TenantConfig.Other permits. A request
	// over its partition is refused at once: a partition is a
	// reservation, idle when its tenant is quiet, and never lent out.
	TenantPartitioned TenantMode = "partitioned"
	// TenantFairShare: no tenant may hold more than TenantConfig.Cap
	// requests at once (holding or waiting for a permit); one over the cap
	// is refused at once. Nothing is reserved: a tenant under its cap
	// competes for the layout's pools with every other.
	TenantFairShare TenantMode = "fair-share"
)

// DefaultTenantHeader is the request header that names the tenant.
const DefaultTenantHeader = "X-Tenant"

// DefaultTenant is the tenant of a request without the header.
const DefaultTenant = "default"

// OtherTenants is the metric label (and, partitioned, the partition) of
// every tenant that is not named: labels stay bounded whatever tenants the
// clients send.
const OtherTenants = "other"

// maxTenantNames bounds the named tenants (each is a metric label value).
const maxTenantNames = 64

// TenantConfig configures the tenant stage: which tenant a request is of
// and how much of the service a tenant may hold. A tenant's stage is held
// for the whole request, in front of the endpoint's pool, and a request it
// refuses takes nothing of the pool.
type TenantConfig struct {
	// Mode is TenantShared, TenantPartitioned or TenantFairShare.
	Mode TenantMode
	// Header names the tenant ("" means DefaultTenantHeader); a request
	// without it is of DefaultTenant.
	Header string
	// Names are the tenants that get metric labels of their own (besides
	// those of Partitions); every other tenant is labelled OtherTenants.
	Names []string
	// Partitions, partitioned only, sizes each named tenant's partition.
	// With pools, the partitions and Other together must fit in every pool
	// (a reservation that a pool can overbook is none).
	Partitions map[string]int
	// Other, partitioned only, sizes the partition of every tenant not in
	// Partitions (DefaultTenant included unless named).
	Other int
	// Cap, fair-share only, is the most requests one tenant may have in
	// the service at once.
	Cap int
}

// header returns the header that names the tenant.
func (tc TenantConfig) header() string {
	if tc.Header == "" {
		return DefaultTenantHeader
	}
	return tc.Header
}

// labels returns the named tenants in order, OtherTenants last.
func (tc TenantConfig) labels() []string {
	out := slices.Clone(tc.Names)
	for n := range tc.Partitions {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return append(out, OtherTenants)
}

// validate reports the first invalid field as a *ConfigError (tenant_mode,
// tenant_header, tenants, tenant_partitions[.name], tenant_other,
// tenant_cap); pools are the layout's.
func (tc TenantConfig) validate(pools []PoolSpec) error {
	if _, err := ParseTenantMode(string(tc.Mode)); err != nil {
		return err
	}
	if tc.Header != "" && !httpguts.ValidHeaderFieldName(tc.Header) {
		return fieldErrorf("tenant_header", "%q is not a valid header name", tc.Header)
	}
	if len(tc.Names)+len(tc.Partitions) > maxTenantNames {
		return fieldErrorf("tenants", "at most %d named tenants (each is a metric label), got %d", maxTenantNames, len(tc.Names)+len(tc.Partitions))
	}
	seen := map[string]bool{}
	for _, n := range tc.Names {
		if err := validateTenantName(n); err != nil {
			return fieldErrorf("tenants", "%v", err)
		}
		if seen[n] {
			return fieldErrorf("tenants", "tenant %q is named twice", n)
		}
		seen[n] = true
	}
	partitioned := tc.Mode == TenantPartitioned
	switch {
	case !partitioned && len(tc.Partitions) > 0:
		return fieldErrorf("tenant_partitions", "only applies to tenant mode %s", TenantPartitioned)
	case !partitioned && tc.Other != 0:
		return fieldErrorf("tenant_other", "only applies to tenant mode %s", TenantPartitioned)
	case tc.Mode != TenantFairShare && tc.Cap != 0:
		return fieldErrorf("tenant_cap", "only applies to tenant mode %s", TenantFairShare)
	case tc.Mode == TenantFairShare && (tc.Cap < 1 || tc.Cap > maxPoolDimension):
		return fieldErrorf("tenant_cap", "must be between 1 and %d, got %d", maxPoolDimension, tc.Cap)
	case partitioned && len(tc.Partitions) == 0:
		return fieldErrorf("tenant_partitions", "at least one named tenant's partition is required")
	case partitioned && (tc.Other < 1 || tc.Other > maxPoolDimension):
		return fieldErrorf("tenant_other", "must be between 1 and %d (the partition of every tenant not named), got %d", maxPoolDimension, tc.Other)
	}
	if !partitioned {
		return nil
	}
	total := tc.Other
	for _, n := range sortedKeys(tc.Partitions) {
		size := tc.Partitions[n]
		if err := validateTenantName(n); err != nil {
			return fieldErrorf("tenant_partitions."+n, "%v", err)
		}
		if size < 1 || size > maxPoolDimension {
			return fieldErrorf("tenant_partitions."+n, "must be between 1 and %d, got %d", maxPoolDimension, size)
		}
		total += size
	}
	for _, ps := range pools {
		if total > ps.Config.Size {
			return fieldErrorf("tenant_partitions", "the partitions, the other tenants' included, hold %d permits in all, more than pool %s's %d: partitions that a pool can overbook reserve nothing", total, ps.Name, ps.Config.Size)
		}
	}
	return nil
}

// validateTenantName applies an endpoint name's rules to a tenant's (it is
// a metric label value); OtherTenants is the label of the unnamed ones.
func validateTenantName(n string) error {
	if n == OtherTenants {
		return fmt.Errorf("tenant name %q is reserved for the tenants not named", n)
	}
	return validateName("tenant", n)
}

// ParseTenantMode parses a TenantMode; the error is a *ConfigError on
// tenant_mode.
func ParseTenantMode(s string) (TenantMode, error) {
	switch m := TenantMode(s); m {
	case TenantShared, TenantPartitioned, TenantFairShare:
		return m, nil
	}
	return "", fieldErrorf("tenant_mode", "must be %q, %q or %q, got %q", TenantShared, TenantPartitioned, TenantFairShare, s)
}

// tenantStage is the built tenant stage. Safe for concurrent use.
type tenantStage struct {
	header string
	mode   TenantMode
	named  map[string]bool
	// parts, partitioned, are the partitions by label: the named tenants'
	// own and OtherTenants'. Each is a Pool without a queue.
	parts map[string]*Pool
	cap   int
	mu    sync.Mutex
	held  map[string]int // fair-share: requests in the service, by tenant
	m     tenantMetrics
}

type tenantMetrics struct {
	requests *prometheus.CounterVec
	inUse    *prometheus.GaugeVec
	limit    *prometheus.GaugeVec
}

func newTenantStage(tc TenantConfig, r prometheus.Registerer) *tenantStage {
	ts := &tenantStage{header: tc.header(), mode: tc.Mode, named: map[string]bool{}, cap: tc.Cap, held: map[string]int{}}
	labels := tc.labels()
	for _, l := range labels[:len(labels)-1] {
		ts.named[l] = true
	}
	tenant := []string{"tenant"}
	ts.m = tenantMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bulkheadlab_tenant_requests_total",
			Help: "Requests by tenant (the named ones; every other is \"other\") and outcome: ok, timeout, error, over_share (refused at once: over the tenant's partition or cap), rejected (by a pool or another stage), cancelled, other.",
		}, []string{"tenant", "outcome"}),
		inUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bulkheadlab_tenant_permits_in_use",
			Help: "Requests of the tenant admitted and not yet answered: the tenant's permits of its partition or cap, held while it waits for and holds the endpoint's pool.",
		}, tenant),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bulkheadlab_tenant_permits_limit",
			Help: "The most requests the tenant may have admitted at once: its partition's size, or the cap (each tenant labelled other has a cap of its own); 0 when tenants share the pools without a limit.",
		}, tenant),
	}
	r.MustRegister(ts.m.requests, ts.m.inUse, ts.m.limit)
	if tc.Mode == TenantPartitioned {
		ts.parts = map[string]*Pool{}
	}
	for _, l := range labels {
		ts.m.inUse.WithLabelValues(l)
		for _, o := range answerOutcomes {
			ts.m.requests.WithLabelValues(l, o)
		}
		limit := 0
		switch tc.Mode {
		case TenantFairShare:
			limit = tc.Cap
		case TenantPartitioned:
			size, own := tc.Partitions[l]
			if !own && l != OtherTenants {
				continue // a named tenant without a partition draws from other's
			}
			if !own {
				size = tc.Other
			}
			limit = size
			// Validate checked the size; a partition has no queue.
			ts.parts[l], _ = NewPool("tenant-"+l, PoolConfig{Size: size})
		}
		ts.m.limit.WithLabelValues(l).Set(float64(limit))
	}
	return ts
}

// label returns the metric label of tenant t.
func (ts *tenantStage) label(t string) string {
	if ts.named[t] {
		return t
	}
	return OtherTenants
}

// acquire admits one request of tenant t (labelled label) and returns the
// function that releases it, or false when the tenant is over its share.
func (ts *tenantStage) acquire(r *http.Request, t, label string) (func(), bool) {
	switch ts.mode {
	case TenantPartitioned:
		p := ts.parts[label]
		if p == nil {
			p = ts.parts[OtherTenants]
		}
		permit, err := p.Acquire(r.Context())
		if err != nil {
			return nil, false
		}
		return permit.Release, true
	case TenantFairShare:
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if ts.held[t] >= ts.cap {
			return nil, false
		}
		ts.held[t]++
		return func() {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			if ts.held[t]--; ts.held[t] == 0 {
				delete(ts.held, t) // the map holds only tenants with requests in the service
			}
		}, true
	}
	return func() {}, true
}

// wrap puts the stage in front of next.
func (ts *tenantStage) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := r.Header.Get(ts.header)
		if t == "" {
			t = DefaultTenant
		}
		label := ts.label(t)
		release, ok := ts.acquire(r, t, label)
		if !ok {
			ts.m.requests.WithLabelValues(label, answerOverShare).Inc()
			writeOverShare(w, RejectTenant, fmt.Sprintf("tenant %s is over its share (%s)", label, ts.mode))
			return
		}
		inUse := ts.m.inUse.WithLabelValues(label)
		inUse.Inc()
		outcome := answerCancelled // if next panics
		defer func() {
			inUse.Dec()
			release()
			ts.m.requests.WithLabelValues(label, outcome).Inc()
		}()
		outcome = serveObserved(next, w, r)
	})
}
