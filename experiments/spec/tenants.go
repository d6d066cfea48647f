package spec

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/service"
)

// tenantsPart is a spec as its tenants family sees it: the tenants, their
// caps and expectations.tenants.
type tenantsPart struct{ *Spec }

// Tenants is a mode's tenant stage of the built-in service
// (service.TenantConfig): which tenant a request is of (a header) and how
// much of the service one tenant may hold. In YAML
//
//	tenants: {mode: shared}                                              # one pool for every tenant: counted, not limited
//	tenants: {mode: partitioned, partitions: {noisy: 8, quiet: 8}, other: 4}
//	tenants: {mode: fair-share, cap: 10}                                 # no tenant holds more than 10 at once
//
// A tenant is a load class: an endpoint whose requests carry the tenant's
// header (endpoints[i].headers), often one of several on the same path
// (endpoints[i].path).
type Tenants struct {
	// Mode is shared, partitioned or fair-share.
	Mode string `yaml:"mode"`
	// Header names the tenant (default X-Tenant); a request without it is
	// of tenant "default".
	Header string `yaml:"header,omitempty"`
	// Names are the tenants with metric labels of their own besides those
	// of Partitions (default: every tenant an endpoint's header names);
	// the others are labelled "other".
	Names []string `yaml:"names,omitempty"`
	// Partitions, partitioned only, are the named tenants' partitions in
	// permits; Other is the one partition of every other tenant. Together
	// they fit in every pool of the mode: a partition is a reservation.
	Partitions map[string]int `yaml:"partitions,omitempty"`
	Other      int            `yaml:"other,omitempty"`
	// Cap, fair-share only, is the most requests one tenant may have in the
	// service at once.
	Cap int `yaml:"cap,omitempty"`
}

// header is the header that names the tenant.
func (t *Tenants) header() string {
	if t.Header == "" {
		return service.DefaultTenantHeader
	}
	return t.Header
}

// servicePath is the path segment of e's requests to the built-in service:
// its path, or its name.
func (e Endpoint) servicePath() string {
	if e.Path != "" {
		return e.Path
	}
	return e.Name
}

// servicePaths are the built-in service's endpoints: the endpoints' paths,
// each once, in order.
func (s tenantsPart) servicePaths() []string {
	var out []string
	for _, e := range s.Endpoints {
		if p := e.servicePath(); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// loadClasses are the endpoints whose requests go to the built-in service's
// endpoint path, in order.
func (s tenantsPart) loadClasses(path string) []string {
	var out []string
	for _, e := range s.Endpoints {
		if e.servicePath() == path {
			out = append(out, e.Name)
		}
	}
	return out
}

// endpointAt is the first endpoint whose requests go to path.
func (s tenantsPart) endpointAt(path string) (Endpoint, bool) {
	for _, e := range s.Endpoints {
		if e.servicePath() == path {
			return e, true
		}
	}
	return Endpoint{}, false
}

// tenantOf is the tenant endpoint e's requests are of under stage t: the
// value of its tenant header ("" when it sends none).
func (e Endpoint) tenantOf(t *Tenants) string {
	want := http.CanonicalHeaderKey(t.header())
	for k, v := range e.Headers {
		if http.CanonicalHeaderKey(k) == want {
			return v
		}
	}
	return ""
}

// tenantConfig is the built-in service's tenant stage in mode m; nil for
// none. Its names default to the tenants the endpoints' headers name that
// can be metric labels (any other is counted as "other").
func (s tenantsPart) tenantConfig(m *Mode) *service.TenantConfig {
	t := m.Tenants
	if t == nil || s.External != nil {
		return nil
	}
	tc := &service.TenantConfig{Mode: service.TenantMode(t.Mode), Header: t.Header, Other: t.Other, Cap: t.Cap}
	if len(t.Partitions) > 0 {
		tc.Partitions = map[string]int{}
		for k, v := range t.Partitions {
			tc.Partitions[k] = v
		}
	}
	tc.Names = slices.Clone(t.Names)
	if t.Names == nil {
		for _, e := range s.Endpoints {
			n := e.tenantOf(t)
			if _, own := t.Partitions[n]; n == "" || own || slices.Contains(tc.Names, n) || n == service.OtherTenants || service.ValidateEndpointName(n) != nil {
				continue
			}
			tc.Names = append(tc.Names, n)
		}
	}
	return tc
}

// tenantLabel is the label of endpoint e's tenant in the metrics of mode
// m's tenant stage; "" without one.
func (s tenantsPart) tenantLabel(m *Mode, e Endpoint) string {
	tc := s.tenantConfig(m)
	if tc == nil {
		return ""
	}
	n := e.tenantOf(m.Tenants)
	if n == "" {
		n = service.DefaultTenant
	}
	if _, own := tc.Partitions[n]; own || slices.Contains(tc.Names, n) {
		return n
	}
	return service.OtherTenants
}

// tenantCaps are the most permits each endpoint may hold in mode m under
// its tenant's partition or cap, for Little's-law previews: a tenant's limit
// (its partition, the partition of the tenants not named, or the fair
// share's cap) times n instances, split among the endpoints of one tenant
// in proportion to their rates. Nil without a stage that limits.
func (s tenantsPart) tenantCaps(m *Mode, rates Rates, n int) map[string]float64 {
	tc := s.tenantConfig(m)
	if tc == nil || (tc.Mode != service.TenantPartitioned && tc.Mode != service.TenantFairShare) {
		return nil
	}
	limit := map[string]int{}     // a partition or a tenant → its limit
	of := map[string]string{}     // endpoint → its partition or tenant
	total := map[string]float64{} // a partition or a tenant → the rate of its endpoints
	for _, e := range s.Endpoints {
		t := e.tenantOf(m.Tenants)
		if t == "" {
			t = service.DefaultTenant
		}
		key, lim := t, tc.Cap
		if tc.Mode == service.TenantPartitioned {
			var own bool
			if lim, own = tc.Partitions[t]; !own {
				key, lim = "\x00"+service.OtherTenants, tc.Other // never a tenant's name
			}
		}
		of[e.Name], limit[key] = key, lim
		total[key] += rates[e.Name]
	}
	out := map[string]float64{}
	for _, e := range s.Endpoints {
		key := of[e.Name]
		share := 1.0
		if total[key] > 0 {
			share = rates[e.Name] / total[key]
		}
		out[e.Name] = float64(limit[key]*n) * share
	}
	return out
}

// tenantFieldPath maps a service.ConfigError field of the tenant stage of
// mode i to the spec's field path.
func tenantFieldPath(mode int, field string) (string, bool) {
	name, sub, _ := strings.Cut(field, ".")
	key, ok := map[string]string{"tenant_mode": "mode", "tenant_header": "header", "tenants": "names",
		"tenant_partitions": "partitions", "tenant_other": "other", "tenant_cap": "cap"}[name]
	if !ok {
		return "", false
	}
	path := fmt.Sprintf("modes[%d].tenants.%s", mode, key)
	if sub != "" {
		path += "." + sub
	}
	return path, true
}

// validateTenants checks the endpoints' paths and the modes' tenant
// stages beyond the service's own rules (validateService applies those),
// and expectations.tenants.
func (s tenantsPart) validateTenants(p *problems) {
	first := map[string]int{} // path → its first endpoint
	for i, e := range s.Endpoints {
		path := fmt.Sprintf("endpoints[%d].path", i)
		if s.External != nil {
			if e.Path != "" {
				p.add(path, "is the built-in service's path; your own service's endpoint is its URL under external.targets (endpoints that differ only by their headers may share a target)")
			}
			continue
		}
		if e.Path != "" {
			if err := service.ValidateEndpointName(e.Path); err != nil {
				p.add(path, "%s", strings.Replace(err.Error(), "endpoint name", "path", 1))
				continue
			}
		} else {
			path = fmt.Sprintf("endpoints[%d].name", i)
		}
		sp := e.servicePath()
		j, ok := first[sp]
		if !ok {
			first[sp] = i
			continue
		}
		switch o := s.Endpoints[j]; {
		case o.Dependency != e.Dependency:
			p.add(path, "/%s is also endpoints[%d] (%s)'s, which calls %s: endpoints that share a path are one endpoint of the service and call one dependency, got %s",
				sp, j, o.Name, o.Dependency, e.Dependency)
		case o.Query != e.Query:
			p.add(path, "/%s is also endpoints[%d] (%s)'s, whose query differs: endpoints that share a path are one endpoint of the service and run one query", sp, j, o.Name)
		}
	}
	for i, m := range s.Modes {
		if m.Tenants == nil {
			continue
		}
		path := fmt.Sprintf("modes[%d].tenants", i)
		if s.External != nil {
			p.add(path, "is the built-in service's tenant stage; your own service divides itself among tenants as it does "+
				"(send each tenant's header from an endpoint of its own: endpoints[i].headers)")
		}
		// The stage's own fields are the service's rules (validateService).
	}
	s.validateTenantRoles(p)
}

// tenantWarnings says, for a mode with a tenant stage, when no endpoint
// names a tenant (every request is then of tenant "default") or when a
// partition's tenant is none of the endpoints'.
func (s tenantsPart) tenantWarnings() []string {
	var out []string
	for i := range s.Modes {
		t := s.Modes[i].Tenants
		if t == nil || s.External != nil {
			continue
		}
		sent := map[string]bool{}
		for _, e := range s.Endpoints {
			if n := e.tenantOf(t); n != "" {
				sent[n] = true
			}
		}
		if len(sent) == 0 {
			out = append(out, fmt.Sprintf("modes[%d] (%s): no endpoint sends the tenant header %s: every request is of tenant %q "+
				"(give each tenant's endpoint headers: {%s: NAME})", i, s.Modes[i].Name, t.header(), service.DefaultTenant, t.header()))
			continue
		}
		for _, n := range sortedKeys(t.Partitions) {
			if !sent[n] {
				out = append(out, fmt.Sprintf("modes[%d] (%s): tenant %s has a partition, and no endpoint sends its header: "+
					"its %d permits stay idle", i, s.Modes[i].Name, n, t.Partitions[n]))
			}
		}
	}
	return out
}

// validateTenantRoles checks expectations.tenants: its conditions and
// modes are in the matrix, its tenants are endpoints.
func (s tenantsPart) validateTenantRoles(p *problems) {
	if s.Expectations.Tenants == nil {
		return
	}
	const path = "expectations.tenants."
	r := s.Expectations.TenantRoles()
	s.checkConditionAndControl(p, path, r.Condition, r.Control, "the condition in which the noisy tenant's load rises")
	s.checkRoleModes(p, path, "isolated", r.Shared, r.Isolated, "the modes with a partition per tenant (or a fair share)")
	if !s.hasEndpoint(r.Noisy) {
		p.add(path+"noisy", "no endpoint %q (default: expectations.culprit; endpoints: %s)", r.Noisy, strings.Join(s.EndpointNames(), ", "))
	}
	for i, q := range r.Quiet {
		switch {
		case !s.hasEndpoint(q):
			p.add(fmt.Sprintf("%squiet[%d]", path, i), "no endpoint %q (default: expectations.victim; endpoints: %s)", q, strings.Join(s.EndpointNames(), ", "))
		case q == r.Noisy:
			p.add(fmt.Sprintf("%squiet[%d]", path, i), "%q is the noisy tenant", q)
		case slices.Index(r.Quiet, q) < i:
			p.add(fmt.Sprintf("%squiet[%d]", path, i), "%q is named already", q)
		}
	}
}

// checkRoleModes checks a claim's roles of modes under path: the shared
// mode (none: not named) and the list field (what: what it names), each a
// mode of the matrix, named once, the shared one not among the list.
func (s *Spec) checkRoleModes(p *problems, path, field, shared string, modes []string, what string) {
	hasMode := func(n string) bool { return s.mode(n) != nil }
	if shared != "" && !hasMode(shared) {
		p.add(path+"shared", "no mode %q in the matrix", shared)
	}
	if len(modes) == 0 {
		p.add(path+field, "required: %s", what)
	}
	for i, m := range modes {
		at := fmt.Sprintf("%s%s[%d]", path, field, i)
		switch j := slices.Index(modes, m); {
		case !hasMode(m):
			p.add(at, "no mode %q in the matrix", m)
		case j < i:
			p.add(at, "%q is named already (%s[%d])", m, field, j)
		case m == shared:
			p.add(at, "%q is the shared mode too", m)
		}
	}
}
