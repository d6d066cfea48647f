package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
)

// threeEndpoints is a spec with a third endpoint: a plan change, not a code
// change.
const threeEndpoints = `name: three
endpoints:
  - {name: a, dependency: A}
  - {name: b, dependency: B}
  - {name: search, dependency: Catalog}
dependencies:
  Catalog: {latency: 5ms, jitter: 1ms}
service: {pool_size: 9, queue: 3}
load:
  rates: {search: 50}
conditions: [slow]
modes:
  - shared
  - name: bulkhead
    pool_sizes: {a: 3, b: 3, search: 3}
expectations: {victim: search}
`

func TestPlanThreeEndpoints(t *testing.T) {
	s, err := Parse("three.yaml", []byte(threeEndpoints))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || p.Experiment != "three" || !strings.Contains(string(p.Spec), "search") {
		t.Fatalf("plan: %d runs of %q", len(p.Runs), p.Experiment)
	}
	r := p.Runs[1] // slow-bulkhead-r1
	var names []string
	for _, c := range r.Components {
		names = append(names, c.Name)
	}
	want := []string{"dep-A", "dep-B", "dep-Catalog", "proxy-A", "proxy-B", "proxy-Catalog", "service"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("components %v, want %v", names, want)
	}
	svc := r.Components[len(r.Components)-1].Service
	if got := svc.Config.EndpointNames(); !reflect.DeepEqual(got, []string{"a", "b", "search"}) {
		t.Errorf("service endpoints %v", got)
	}
	if u := svc.Upstreams["search"]; u != plan.Of("proxy-Catalog", "") {
		t.Errorf("search calls %+v, want proxy-Catalog", u)
	}
	resolved, err := r.Components[len(r.Components)-1].Resolve(map[string]string{
		"proxy-A": "http://127.0.0.1:1", "proxy-B": "http://127.0.0.1:2", "proxy-Catalog": "http://127.0.0.1:3"})
	if err != nil || resolved.Service.Config.Endpoints[2].URL != "http://127.0.0.1:3" || svc.Config.Endpoints[2].URL != "" {
		t.Errorf("resolve: %v, %+v (original %+v)", err, resolved.Service.Config.Endpoints, svc.Config.Endpoints)
	}
	if err := resolved.Service.Config.Validate(); err != nil {
		t.Errorf("resolved service config: %v", err)
	}
	if len(r.Meta.Pools) != 3 || r.Meta.Pools[2].Name != "search" || r.Meta.Pools[2].Limit != 3 {
		t.Errorf("bulkhead pools %+v", r.Meta.Pools)
	}
	if len(r.Faults) != 1 || r.Faults[0].Component != "proxy-A" {
		t.Errorf("faults %+v, want on proxy-A (the culprit a's dependency)", r.Faults)
	}
	rates := map[string]float64{}
	for _, e := range r.Load.Endpoints {
		rates[e.Name] = e.Rate
	}
	if !reflect.DeepEqual(rates, map[string]float64{"a": 200, "b": 200, "search": 50}) {
		t.Errorf("rates %v", rates)
	}
	if sh := p.Runs[0].Meta.Pools; len(sh) != 1 || sh[0].Limit != 9 || len(sh[0].Endpoints) != 3 {
		t.Errorf("shared pools %+v", sh)
	}
}

func TestEndpointKeysValidated(t *testing.T) {
	cases := []struct{ edit, want string }{
		{"load:\n  rates: {c: 5}\n", "load.rates.c: no endpoint"},
		{"dependencies:\n  C: {latency: 1ms}\n", "dependencies.C: no endpoint calls C"},
		{"modes:\n  - name: bulkhead\n    pool_sizes: {a: 2, c: 2}\n", "modes[0].pool_sizes: unknown pool(s) c"},
		{"modes:\n  - name: bulkhead\n    pool_sizes: {a: 2}\n", "modes[0].pool_sizes.b: missing"},
		{"endpoints:\n  - {name: a, dependency: A}\n  - {name: a, dependency: B}\n", `endpoints[1].name: duplicate endpoint "a"`},
		{"endpoints:\n  - {name: 'A/x', dependency: A}\n", "endpoints[0].name:"},
		{"endpoints:\n  - {name: a, dependency: 'x y'}\n", "endpoints[0].dependency:"},
		{"expectations: {victim: c}\n", "expectations: name the victim (the endpoint whose dependency stays healthy) and the culprit"},
		{"conditions:\n  - {name: x, dependency: C, rates: {a: 1}}\n", `conditions[0].dependency: must be one of A, B, got "C"`},
	}
	for _, c := range cases {
		_, err := Parse("t.yaml", []byte("name: t\n"+c.edit))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec with\n%s: error %v, want %q", c.edit, err, c.want)
		}
	}
}

// TestPlanArrivals: endpoints are offset by default, each run with its own
// seed; lockstep and poisson are carried to the load; nonsense is refused.
func TestPlanArrivals(t *testing.T) {
	arrivals := func(yaml string) []plan.Run {
		t.Helper()
		s, err := Parse("arr.yaml", []byte("name: arr\nconditions: [slow]\n"+yaml))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		return p.Runs
	}
	def := arrivals("")
	if a := def[0].Load.Arrivals; a.Process != "constant" || !a.Offset || a.Seed == 0 || a.Seed == def[1].Load.Arrivals.Seed {
		t.Errorf("default arrivals %+v and %+v: want constant, offset, a seed per run", a, def[1].Load.Arrivals)
	}
	if a := arrivals("load: {lockstep: true}\n")[0].Load.Arrivals; a.Offset {
		t.Errorf("lockstep: %+v, want no offset", a)
	}
	if a := arrivals("load: {arrivals: poisson}\n")[0].Load.Arrivals; a.Process != "poisson" {
		t.Errorf("poisson: %+v", a)
	}
	for in, want := range map[string]string{
		"load:\n  arrivals: uniform\n":                   "arr.yaml:4: load.arrivals: want constant or poisson",
		"load:\n  arrivals: poisson\n  lockstep: true\n": "load.lockstep: applies to constant arrivals only",
	} {
		_, err := Parse("arr.yaml", []byte("name: arr\nconditions: [slow]\n"+in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
}

// TestProxyArgsAllowRemote: a proxy whose upstream is remote (allowed for
// the run by --allow-remote) is started with --allow-remote; a loopback one
// without.
func TestProxyArgsAllowRemote(t *testing.T) {
	c := plan.Component{Name: "proxy-A", Kind: plan.KindProxy, Listen: "127.0.0.1:7001",
		Proxy: &plan.Proxy{Name: "A", Upstream: plan.At("http://127.0.0.1:9001"), Control: "127.0.0.1:0"}}
	if args := strings.Join(c.Args(), " "); strings.Contains(args, "--allow-remote") {
		t.Errorf("loopback proxy: %s", args)
	}
	c.Proxy.Upstream = plan.At("http://10.1.2.3:80")
	if args := strings.Join(c.Args(), " "); !strings.Contains(args, "--allow-remote") {
		t.Errorf("remote upstream: %s, want --allow-remote", args)
	}
}

// poolGroups is the blast-radius audit's layout: checkout and cart share a
// pool "core", search and stock each have their own.
const poolGroups = `name: groups
endpoints:
  - {name: checkout, dependency: PAY}
  - {name: cart, dependency: INV}
  - {name: search, dependency: SEARCH}
  - {name: stock, dependency: INV}
service: {pool_size: 9, queue: 3}
load:
  rates: {checkout: 100, cart: 100, search: 100, stock: 100}
conditions: [slow]
expectations: {victim: search, culprit: checkout}
modes:
  - shared
  - name: core
    pools: bulkhead
    pool_groups:
      core: [checkout, cart]
`

// TestPlanPoolGroups: a mode's pool_groups reach the service's config (and
// its command line), the run's metadata pools and endpoints, and the
// Little's-law preview, which agree with the service's own layout.
func TestPlanPoolGroups(t *testing.T) {
	s, err := Parse("groups.yaml", []byte(poolGroups))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || p.Runs[1].Mode != "core" {
		t.Fatalf("plan: %d runs", len(p.Runs))
	}
	r := p.Runs[1] // slow-core-r1
	svc := r.Components[len(r.Components)-1]
	if svc.Service == nil {
		t.Fatalf("last component %+v is not the service", svc)
	}
	cfg := svc.Service.Config
	if want := map[string][]string{"core": {"checkout", "cart"}}; !reflect.DeepEqual(cfg.Layout.Groups, want) {
		t.Errorf("service layout groups %v, want %v", cfg.Layout.Groups, want)
	}
	if args := strings.Join(svc.Args(), " "); !strings.Contains(args, "--pool-group core=checkout,cart") {
		t.Errorf("service command line %s lacks --pool-group core=checkout,cart", args)
	}
	// The service's own layout.
	specs, err := cfg.Layout.Pools(cfg.EndpointNames())
	if err != nil {
		t.Fatal(err)
	}
	type pool struct {
		name      string
		limit     int
		queue     int
		endpoints []string
	}
	want := []pool{{"core", 3, 1, []string{"checkout", "cart"}}, {"search", 3, 1, []string{"search"}}, {"stock", 3, 1, []string{"stock"}}}
	var fromService, fromMeta []pool
	for _, ps := range specs {
		fromService = append(fromService, pool{ps.Name, ps.Config.Size, ps.Config.Queue, ps.Endpoints})
	}
	for _, pi := range r.Meta.Pools {
		fromMeta = append(fromMeta, pool{pi.Name, pi.Limit, pi.Queue, pi.Endpoints})
	}
	if !reflect.DeepEqual(fromService, want) || !reflect.DeepEqual(fromMeta, want) {
		t.Errorf("pools: service %+v, metadata %+v; want %+v", fromService, fromMeta, want)
	}
	pools := map[string]string{}
	for _, e := range r.Meta.Endpoints {
		pools[e.Name] = e.Pool
	}
	if want := map[string]string{"checkout": "core", "cart": "core", "search": "search", "stock": "stock"}; !reflect.DeepEqual(pools, want) {
		t.Errorf("endpoints' pools %v, want %v", pools, want)
	}
	// A slow PAY raises the demand on core (checkout's calls hold its
	// permits longer), not on search's or stock's pools; core's baseline
	// demand is checkout's and cart's together.
	for _, pi := range r.Meta.Pools {
		base, fault := pi.PredictedDemand["baseline"], pi.PredictedDemand["fault"]
		switch pi.Name {
		case "core":
			if one := r.Meta.Pools[1].PredictedDemand["baseline"]; base < 1.5*one || fault <= 2*base || pi.PredictedExhaustion == 0 {
				t.Errorf("core: demand %g → %g, exhaustion %s; want two endpoints' baseline (search's alone is %g), a slow PAY's rise and exhaustion",
					base, fault, pi.PredictedExhaustion, one)
			}
		default:
			if fault != base || pi.PredictedExhaustion != 0 {
				t.Errorf("%s: demand %g → %g, exhaustion %s; want unchanged by a slow PAY", pi.Name, base, fault, pi.PredictedExhaustion)
			}
		}
	}
	resolved, err := svc.Resolve(map[string]string{"proxy-PAY": "http://127.0.0.1:1", "proxy-INV": "http://127.0.0.1:2", "proxy-SEARCH": "http://127.0.0.1:3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := resolved.Service.Config.Validate(); err != nil {
		t.Errorf("resolved service config: %v", err)
	}
	// The resolved spec written with the results (--resume) keeps them.
	if again, err := Parse("resolved.yaml", p.Spec); err != nil {
		t.Errorf("resolved spec parsed again: %v", err)
	} else if !reflect.DeepEqual(again.Modes[1].PoolGroups, s.Modes[1].PoolGroups) {
		t.Errorf("resolved spec parsed again: groups %v, want %v", again.Modes[1].PoolGroups, s.Modes[1].PoolGroups)
	}
	if sh := p.Runs[0].Meta.Pools; len(sh) != 1 || sh[0].Name != "shared" || p.Runs[0].Components[len(r.Components)-1].Service.Config.Layout.Groups != nil {
		t.Errorf("shared mode: pools %+v, want the one shared pool and no groups", sh)
	}
}

// TestPoolGroupErrors: an invalid pool_groups names the field and its line.
func TestPoolGroupErrors(t *testing.T) {
	base := strings.Split(poolGroups, "modes:\n")[0]
	for _, tc := range []struct{ modes, want string }{
		{"  - name: shared\n    pool_groups: {core: [checkout, cart]}\n",
			"groups.yaml:14: modes[0].pool_groups: only applies to bulkhead mode"},
		{"  - name: bulkhead\n    pool_groups:\n      core: [checkout, basket]\n",
			`groups.yaml:15: modes[0].pool_groups.core[1]: no endpoint "basket" (endpoints: checkout, cart, search, stock)`},
		{"  - name: bulkhead\n    pool_groups:\n      core: [checkout, cart]\n      more:\n        - stock\n        - cart\n",
			`groups.yaml:18: modes[0].pool_groups.more[1]: endpoint "cart" is in pool group "core" already`},
		{"  - name: bulkhead\n    pool_groups:\n      core: [checkout, checkout]\n",
			`groups.yaml:15: modes[0].pool_groups.core[1]: endpoint "checkout" is listed twice`},
		{"  - name: bulkhead\n    pool_groups:\n      search: [checkout, cart]\n",
			`groups.yaml:15: modes[0].pool_groups.search: pool name "search" is also the name of endpoint "search", which is not in the group`},
		{"  - name: bulkhead\n    pool_groups:\n      Core: [checkout, cart]\n",
			`groups.yaml:15: modes[0].pool_groups.Core: pool group name "Core": use 1–32 of`},
		{"  - name: bulkhead\n    pool_groups:\n      core: []\n",
			"groups.yaml:15: modes[0].pool_groups.core: at least one endpoint is required"},
		{"  - name: bulkhead\n    pool_groups:\n      core: checkout\n",
			"groups.yaml:15: modes[0].pool_groups.core: want a list"},
		{"  - name: bulkhead\n    pool_groups: {core: [checkout, cart]}\n    pool_sizes: {checkout: 2, cart: 2, search: 2, stock: 2}\n",
			"groups.yaml:15: modes[0].pool_sizes: unknown pool(s) cart,checkout; the pools are core, search, stock"},
		{"  - name: bulkhead\n    pool_groups: {core: [checkout, cart]}\n    pool_sizes: {core: 0, search: 2, stock: 2}\n",
			"groups.yaml:15: modes[0].pool_sizes.core: must be between 1 and"},
	} {
		_, err := Parse("groups.yaml", []byte(base+"modes:\n"+tc.modes))
		if err == nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("modes:\n%s: error %v, want %q", tc.modes, err, tc.want)
		}
	}
	// An external spec's service pools itself.
	x := "name: t\nmodes:\n  - name: shared\n    pool_groups: {g: [a, b]}\n    external:\n      targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n" +
		"external:\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n"
	if _, err := Parse("t.yaml", []byte(x)); err == nil || !strings.Contains(err.Error(), "t.yaml:4: modes[0].pool_groups: groups the built-in service's pools") {
		t.Errorf("pool_groups in an external spec: %v", err)
	}
}
