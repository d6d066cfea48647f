package spec

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestPlanTenants: the noisy-tenant preset's three load classes share one
// endpoint of the service, /work, each with its tenant's header; each
// mode's tenant stage reaches the service's configuration and its serve
// flags; the run metadata names each endpoint's pool and tenant; the
// resolved spec keeps paths and stages.
func TestPlanTenants(t *testing.T) {
	s, err := Preset("noisy-tenant")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*service.TenantConfig{
		"shared":      {Mode: service.TenantShared, Names: []string{"noisy", "quiet", "guest"}},
		"partitioned": {Mode: service.TenantPartitioned, Names: []string{"guest"}, Partitions: map[string]int{"noisy": 8, "quiet": 8}, Other: 4},
		"fair-share":  {Mode: service.TenantFairShare, Names: []string{"noisy", "quiet", "guest"}, Cap: 8},
	}
	for _, r := range p.Runs {
		var svc *plan.Component
		for i, c := range r.Components {
			if c.Service != nil {
				svc = &r.Components[i]
			}
		}
		if svc == nil {
			t.Fatalf("run %s has no service", r.ID)
		}
		cfg := svc.Service.Config
		if len(cfg.Endpoints) != 1 || cfg.Endpoints[0].Name != "work" || len(svc.Service.Upstreams) != 1 || svc.Service.Upstreams["work"].Component != "proxy-A" {
			t.Errorf("run %s: service endpoints %+v, upstreams %+v; want /work calling proxy-A", r.ID, cfg.Endpoints, svc.Service.Upstreams)
		}
		if !reflect.DeepEqual(cfg.Tenants, want[r.Mode]) {
			t.Errorf("run %s: tenant stage %+v, want %+v", r.ID, cfg.Tenants, want[r.Mode])
		}
		if got := serveFlagsOf(t, *svc).Tenants; !reflect.DeepEqual(got, want[r.Mode]) {
			t.Errorf("run %s: serve flags %v give tenant stage %+v, want %+v", r.ID, svc.Args(), got, want[r.Mode])
		}
		for _, e := range r.Load.Endpoints {
			if e.Target.Path != "/work" || e.Header.Get("X-Tenant") != e.Name {
				t.Errorf("run %s, %s: target %+v, X-Tenant %q; want /work with its own tenant", r.ID, e.Name, e.Target, e.Header.Get("X-Tenant"))
			}
		}
		tenants := map[string]string{}
		for _, e := range r.Meta.Endpoints {
			tenants[e.Name] = e.Tenant
			if e.Pool != "shared" || e.Path != "work" {
				t.Errorf("run %s, %s: pool %q, path %q; want shared, work", r.ID, e.Name, e.Pool, e.Path)
			}
		}
		if want := map[string]string{"noisy": "noisy", "quiet": "quiet", "guest": "guest"}; !reflect.DeepEqual(tenants, want) {
			t.Errorf("run %s: tenants %v, want %v", r.ID, tenants, want)
		}
		if pl := r.Meta.Pools; len(pl) != 1 || !slices.Equal(pl[0].Endpoints, []string{"noisy", "quiet", "guest"}) {
			t.Errorf("run %s: pools %+v, want one holding the three tenants", r.ID, pl)
		}
	}
	y, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("resolved.yaml", y)
	if err != nil {
		t.Fatalf("resolved spec does not parse: %v\n%s", err, y)
	}
	if !reflect.DeepEqual(again.Modes[1].Tenants, s.Modes[1].Tenants) || again.Endpoints[2].Path != "work" {
		t.Errorf("resolved spec: tenants %+v, path %q; want %+v, work", again.Modes[1].Tenants, again.Endpoints[2].Path, s.Modes[1].Tenants)
	}
}

// TestTenantsPreview: Little's law holds each tenant to its partition or
// cap: the noisy tenant's 40 permits of demand are 8 behind a partition or
// a cap of 8, and the pool of 20 is not exceeded; with one pool for all it
// is, within 27 ms.
func TestTenantsPreview(t *testing.T) {
	s, err := Preset("noisy-tenant")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode      string
		fault     float64
		exhausted bool
	}{{"shared", 47, true}, {"partitioned", 15, false}, {"fair-share", 15, false}} {
		pools := s.Preview(s.condition("batch"), s.mode(tc.mode))
		if len(pools) != 1 {
			t.Fatalf("%s: pools %+v", tc.mode, pools)
		}
		pl := pools[0]
		if d := pl.PredictedDemand[rundata.PhaseFault]; d < tc.fault-0.01 || d > tc.fault+0.01 || (pl.PredictedExhaustion > 0) != tc.exhausted {
			t.Errorf("%s: fault demand %.2f, exhausted after %v; want %.0f, exhausted %v", tc.mode, d, pl.PredictedExhaustion, tc.fault, tc.exhausted)
		}
	}
}

// TestPathsInBulkheadMode: endpoints that share a path are one endpoint of
// the service with one bulkhead, named by the path, which pool_sizes sizes;
// an endpoint without a path keeps its own.
func TestPathsInBulkheadMode(t *testing.T) {
	s, err := Parse("t.yaml", []byte(`name: t
endpoints:
  - {name: gold, dependency: A, path: orders, headers: {X-Tenant: gold}}
  - {name: free, dependency: A, path: orders, headers: {X-Tenant: free}}
  - {name: b, dependency: B}
expectations: {victim: b, culprit: gold}
conditions: [slow]
modes:
  - {name: bulkhead, pool_sizes: {orders: 12, b: 8}}
`))
	if err != nil {
		t.Fatal(err)
	}
	pools := s.Pools(s.mode("bulkhead"))
	want := []PoolLayout{{Name: "orders", Limit: 12, Queue: 10, Endpoints: []string{"gold", "free"}}, {Name: "b", Limit: 8, Queue: 10, Endpoints: []string{"b"}}}
	if !reflect.DeepEqual(pools, want) {
		t.Errorf("pools %+v, want %+v", pools, want)
	}
	if got := s.serviceConfig(s.mode("bulkhead")).EndpointNames(); !slices.Equal(got, []string{"orders", "b"}) {
		t.Errorf("service endpoints %v, want [orders b]", got)
	}
}

// TestTenantsErrors: every problem of a path, a tenant stage or the tenant
// claims' roles is reported with file, line and field.
func TestTenantsErrors(t *testing.T) {
	const eps = "endpoints:\n  - {name: noisy, dependency: A, path: work, headers: {X-Tenant: noisy}}\n  - {name: quiet, dependency: A, path: work, headers: {X-Tenant: quiet}}\n"
	const roles = "expectations: {victim: quiet, culprit: noisy}\n"
	const conds = "conditions: [healthy, {name: batch, rates: {noisy: 100}}]\n"
	ext := "external:\n  upstreams: {A: \"http://127.0.0.1:9001\"}\n  proxies: {A: \"127.0.0.1:7001\"}\n  targets: {noisy: \"http://127.0.0.1:8080/work\", quiet: \"http://127.0.0.1:8080/work\"}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants: {mode: fair}\n",
			`t.yaml:9: modes[0].tenants.mode: must be "shared", "partitioned" or "fair-share", got "fair"`},
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants:\n      mode: fair-share\n",
			"t.yaml:9: modes[0].tenants.cap: must be between 1 and"},
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants:\n      mode: fair-share\n      cap: 4\n      other: 2\n",
			"t.yaml:12: modes[0].tenants.other: only applies to tenant mode partitioned"},
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants:\n      mode: partitioned\n      partitions: {noisy: 18, quiet: 8}\n      other: 4\n",
			"t.yaml:11: modes[0].tenants.partitions: the partitions, the other tenants' included, hold 30 permits in all, more than pool shared's 20"},
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants: {mode: partitioned, partitions: {noisy: 8}}\n",
			"t.yaml:9: modes[0].tenants.other: must be between 1 and"},
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants: {mode: partitioned, partitions: {other: 8}, other: 2}\n",
			`modes[0].tenants.partitions.other: tenant name "other" is reserved`},
		{"name: t\n" + eps + roles + "modes:\n  - name: p\n    pools: shared\n    tenants: {mode: shared, header: \"X Tenant\"}\n",
			`t.yaml:9: modes[0].tenants.header: "X Tenant" is not a valid header name`},
		{"name: t\nendpoints:\n  - {name: noisy, dependency: A, path: work}\n  - {name: quiet, dependency: B, path: work}\n" + roles,
			"t.yaml:4: endpoints[1].path: /work is also endpoints[0] (noisy)'s, which calls A: endpoints that share a path are one endpoint of the service and call one dependency, got B"},
		{"name: t\nendpoints:\n  - {name: work, dependency: A}\n  - {name: quiet, dependency: B, path: work}\n" + "expectations: {victim: quiet, culprit: work}\n",
			"t.yaml:4: endpoints[1].path: /work is also endpoints[0] (work)'s, which calls A"},
		{"name: t\nendpoints:\n  - {name: noisy, dependency: A, path: Work}\n  - {name: quiet, dependency: A}\n" + roles,
			`t.yaml:3: endpoints[0].path: path "Work": use 1–32 of a-z`},
		{"name: t\nendpoints:\n  - {name: noisy, dependency: A, path: healthz}\n  - {name: quiet, dependency: A}\n" + roles,
			`endpoints[0].path: path "healthz" is reserved`},
		{"name: t\n" + eps + roles + ext + "modes:\n  - name: p\n    pools: shared\n    tenants: {mode: shared}\n",
			"endpoints[0].path: is the built-in service's path; your own service's endpoint is its URL under external.targets"},
		{"name: t\nendpoints:\n  - {name: noisy, dependency: A, headers: {X-Tenant: noisy}}\n  - {name: quiet, dependency: A, headers: {X-Tenant: quiet}}\n" + roles + ext +
			"modes:\n  - name: p\n    pools: shared\n    tenants: {mode: shared}\n",
			"modes[0].tenants: is the built-in service's tenant stage; your own service divides itself among tenants as it does"},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: surge, isolated: [shared]}\n",
			`expectations.tenants.condition: no condition "surge" in the matrix`},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch, control: batch, isolated: [shared]}\n",
			`expectations.tenants.control: must differ from the condition "batch"`},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch}\n",
			"expectations.tenants.isolated: required: the modes with a partition per tenant (or a fair share)"},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch, shared: shared, isolated: [shared, p]}\n",
			`expectations.tenants.isolated[0]: "shared" is the shared mode too`},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch, isolated: [p]}\n",
			`t.yaml:10: expectations.tenants.isolated[0]: no mode "p" in the matrix`},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch, isolated: [shared], noisy: loud, quiet: [quiet, quiet]}\n",
			`expectations.tenants.noisy: no endpoint "loud" (default: expectations.culprit; endpoints: noisy, quiet)`},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch, isolated: [shared], quiet: [quiet, quiet]}\n",
			`expectations.tenants.quiet[1]: "quiet" is named already`},
		{"name: t\n" + eps + conds + "modes: [shared]\nexpectations:\n  victim: quiet\n  culprit: noisy\n  tenants: {condition: batch, isolated: [shared]}\n  check: [TENANTS-DOS]\n",
			"expectations.check[0]: TENANTS-DOS is judged only when expectations.tenants.shared names the mode without partitions"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestTenantsWarnings: a tenant stage that no endpoint names a tenant to,
// and a partition no endpoint's tenant uses, are warned about.
func TestTenantsWarnings(t *testing.T) {
	s, err := Parse("t.yaml", []byte(`name: t
endpoints:
  - {name: noisy, dependency: A, path: work}
  - {name: quiet, dependency: A, path: work, headers: {x-tenant: quiet}}
expectations: {victim: quiet, culprit: noisy}
modes:
  - {name: counted, pools: shared, tenants: {mode: shared, header: X-Customer}}
  - {name: parts, pools: shared, tenants: {mode: partitioned, partitions: {quiet: 8, gold: 4}, other: 8}}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(s.Warnings(), "\n")
	for _, want := range []string{
		`modes[0] (counted): no endpoint sends the tenant header X-Customer: every request is of tenant "default"`,
		"modes[1] (parts): tenant gold has a partition, and no endpoint sends its header: its 4 permits stay idle",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
	if strings.Contains(w, "tenant quiet") {
		t.Errorf("warnings %q name quiet, whose header is sent (in lower case)", w)
	}
	// The endpoint without a header is of tenant default, drawing from other.
	if got := (tenantsPart{s}).tenantLabel(s.mode("parts"), s.Endpoints[0]); got != service.OtherTenants {
		t.Errorf("tenant of an endpoint without the header: %q, want %q", got, service.OtherTenants)
	}
}

// TestExternalLoadClassesByHeader: a service of your own treats a tenant
// as a load class too: two endpoints with one target that differ only by
// their header are two streams of load, each with its header, judged each
// on its own.
func TestExternalLoadClassesByHeader(t *testing.T) {
	s, err := Parse("t.yaml", []byte(`name: t
endpoints:
  - {name: noisy, dependency: A, headers: {X-Tenant: noisy}}
  - {name: quiet, dependency: A, headers: {X-Tenant: quiet}}
external:
  upstreams: {A: "http://127.0.0.1:9001"}
  proxies: {A: "127.0.0.1:7001"}
  rules: [{status: "503", class: rejected}]
modes:
  - name: shared
    external:
      targets: {noisy: "http://127.0.0.1:8080/work", quiet: "http://127.0.0.1:8080/work"}
      canary: "http://127.0.0.1:8080/healthz"
  - name: partitioned
    pools: shared
    external:
      targets: {noisy: "http://127.0.0.1:8081/work", quiet: "http://127.0.0.1:8081/work"}
      canary: "http://127.0.0.1:8081/healthz"
conditions: [healthy, {name: batch, rates: {noisy: 400}}]
expectations:
  victim: quiet
  culprit: noisy
  tenants: {condition: batch, shared: shared, isolated: [partitioned]}
  check: [TENANTS-DOS, TENANTS-ISOLATED]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		if len(r.Load.Endpoints) != 2 {
			t.Fatalf("run %s: %d endpoints, want 2", r.ID, len(r.Load.Endpoints))
		}
		for _, e := range r.Load.Endpoints {
			if !strings.HasSuffix(e.Target.URL, "/work") || e.Header.Get("X-Tenant") != e.Name {
				t.Errorf("run %s, %s: target %q, X-Tenant %q; want the shared target with its own tenant", r.ID, e.Name, e.Target.URL, e.Header.Get("X-Tenant"))
			}
		}
		for _, e := range r.Meta.Endpoints {
			if e.Tenant != "" || e.Path != "" {
				t.Errorf("run %s, %s: tenant %q, path %q; want neither for a service the harness does not run", r.ID, e.Name, e.Tenant, e.Path)
			}
		}
	}
}

// TestAuditTenantsAsLoadClasses: an audit treats tenants as load classes
// too: the tenants of one path are rows of its map, and a condition that
// raises one tenant's load is a column beside the dependencies' faults.
func TestAuditTenantsAsLoadClasses(t *testing.T) {
	s, err := Parse("t.yaml", []byte(`name: tenant-audit
endpoints:
  - {name: noisy, dependency: A, path: work, headers: {X-Tenant: noisy}}
  - {name: quiet, dependency: A, path: work, headers: {X-Tenant: quiet}}
  - {name: other, dependency: B}
load: {rates: {noisy: 30, quiet: 50, other: 50}}
audit: {}
conditions:
  - healthy
  - {name: batch, dependency: A, rates: {noisy: 400}}
  - {name: slow-a, dependency: A, faults: [{type: latency, latency: 0.9T}]}
modes:
  - {name: shared, tenants: {mode: shared}}
  - {name: partitioned, pools: shared, tenants: {mode: partitioned, partitions: {noisy: 8, quiet: 8}, other: 4}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range s.Audit.Columns {
		cols = append(cols, c.Condition)
	}
	if !slices.Equal(cols, []string{"batch", "slow-a"}) {
		t.Errorf("audit columns %v, want [batch slow-a]", cols)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		var paths []string
		for _, e := range r.Load.Endpoints {
			paths = append(paths, e.Name+"→"+e.Target.Path)
		}
		if want := []string{"noisy→/work", "quiet→/work", "other→/other"}; !slices.Equal(paths, want) {
			t.Errorf("run %s: load %v, want %v", r.ID, paths, want)
		}
	}
}

// TestProblemsOnce: every problem of a spec is reported once — the
// priority, no-pool and tenant checks once ran twice and doubled theirs.
func TestProblemsOnce(t *testing.T) {
	const eps = "endpoints:\n  - {name: noisy, dependency: A, path: work, headers: {X-Tenant: noisy}}\n  - {name: quiet, dependency: A, path: work, headers: {X-Tenant: quiet}}\n"
	for _, y := range []string{
		"name: t\n" + eps + "expectations: {victim: quiet, culprit: noisy}\nmodes:\n  - name: p\n    pools: shared\n    tenants: {mode: fair}\n",
		"name: t\nendpoints:\n  - {name: noisy, dependency: A, path: Work}\n  - {name: quiet, dependency: A}\nexpectations: {victim: quiet, culprit: noisy}\n",
	} {
		_, err := Parse("t.yaml", []byte(y))
		var se *SpecError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%q) = %v, want a SpecError", y, err)
		}
		seen := map[string]bool{}
		for _, fe := range se.Errs {
			if seen[fe.Error()] {
				t.Errorf("Parse(%q) reports %q twice", y, fe.Error())
			}
			seen[fe.Error()] = true
		}
	}
}
