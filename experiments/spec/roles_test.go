package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// ownTwo is an external spec of a service of the user's own with two
// endpoints of its own names; %s is added at its end.
const ownTwo = `name: own
external:
  targets:   {orders: "http://127.0.0.1:8080/orders", catalog: "http://127.0.0.1:8080/catalog"}
  upstreams: {PAY: "http://127.0.0.1:9001", DB: "http://127.0.0.1:9002"}
  proxies:   {PAY: "127.0.0.1:7001", DB: "127.0.0.1:7002"}
  canary: "http://127.0.0.1:8080/healthz"
  rules: [{status: "503", class: rejected}]
  metrics: {url: "http://127.0.0.1:8080/metrics", in_use: pool_in_use}
modes: [shared]
endpoints:
  - {name: orders, dependency: PAY}
  - {name: catalog, dependency: DB}
%s`

// TestRolesInferred: the victim and the culprit are inferred where the
// spec leaves one choice — two endpoints calling two dependencies with the
// conditions faulting one, or one role written and the other endpoint left
// — shown by RolesLine with where they come from; otherwise the error
// says what to write and why.
func TestRolesInferred(t *testing.T) {
	for _, tt := range []struct {
		name, yaml              string
		victim, culprit, source string
		err                     string
	}{
		{"defaults", minimal, "b", "a", "the defaults", ""},
		{"written", "name: t\nexpectations: {victim: a, culprit: b}\n", "a", "b", "written", ""},
		{"victim written", "name: t\nexpectations: {victim: a}\n", "a", "b", "culprit inferred: the other endpoint", ""},
		{"culprit written", strings.Replace(ownTwo, "%s", "expectations: {culprit: catalog}\n", 1), "orders", "catalog", "victim inferred: the other endpoint", ""},
		{"conditions fault one dependency", strings.Replace(ownTwo, "%s", "conditions:\n  - healthy\n  - {name: slow-db, dependency: DB, faults: [{type: latency, latency: 0.9T}]}\n", 1),
			"orders", "catalog", "inferred: the conditions fault DB, which /catalog calls", ""},
		{"built-in conditions only", strings.Replace(ownTwo, "%s", "", 1), "", "", "",
			"expectations: name the victim (the endpoint whose dependency stays healthy) and the culprit (the one whose dependency gets the fault) among orders, catalog, e.g. expectations: {victim: catalog, culprit: orders}"},
		{"conditions fault both", strings.Replace(ownTwo, "%s", "conditions:\n  - {name: x, dependency: DB, faults: [{type: abort}]}\n  - {name: y, dependency: PAY, faults: [{type: abort}]}\n", 1), "", "", "",
			"the defaults b and a name no endpoint here"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want it to say %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Expectations.Victim != tt.victim || s.Expectations.Culprit != tt.culprit {
				t.Errorf("victim %q culprit %q, want %q %q", s.Expectations.Victim, s.Expectations.Culprit, tt.victim, tt.culprit)
			}
			if line := s.RolesLine(); !strings.HasPrefix(line, "victim /"+tt.victim) || !strings.HasSuffix(line, "— "+tt.source) {
				t.Errorf("roles line %q, want victim /%s … — %s", line, tt.victim, tt.source)
			}
			for _, c := range s.Conditions {
				if c.Name != CondHealthy && len(c.Faults) > 0 && c.Dependency == "" {
					t.Errorf("condition %s has no dependency", c.Name)
				}
			}
		})
	}
}

// auditOwn is an external audit whose endpoints declare no dependency: the
// audit measures what each calls through the proxies of the upstreams.
const auditOwn = `name: shop
external:
  upstreams: {PRICING: "http://127.0.0.1:9001", RECS: "http://127.0.0.1:9002", STOCK: "http://127.0.0.1:9003"}
  proxies:   {PRICING: "127.0.0.1:7001", RECS: "127.0.0.1:7002", STOCK: "127.0.0.1:7003"}
  targets: {price: "http://127.0.0.1:8080/price", recommend: "http://127.0.0.1:8080/recommend", cart: "http://127.0.0.1:8080/cart"}
  canary: "http://127.0.0.1:8080/healthz"
  rules: [{status: "503", header: X-Reject, value: pool, class: rejected}]
endpoints:
  - {name: price}
  - {name: recommend, dependency: RECS}
  - {name: cart}
%s`

// TestDependencyOptionalInAudit: an external audit's endpoints may leave
// their dependency out — every upstream gets a proxy and a column, and the
// runs' metadata say no endpoint's dependency where none was declared —
// while elsewhere a missing dependency is an error that says what is
// missing and why (not a naming error).
func TestDependencyOptionalInAudit(t *testing.T) {
	s, err := Parse("t.yaml", []byte(strings.Replace(auditOwn, "%s", "audit: {faults: [slow], critical: [cart]}\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.DependencyNames(); !slices.Equal(got, []string{"RECS", "PRICING", "STOCK"}) {
		t.Errorf("dependencies %v, want RECS (declared), then PRICING and STOCK (upstreams)", got)
	}
	var cols []string
	for _, c := range s.Audit.Columns {
		cols = append(cols, c.Dependency+" "+c.Fault)
	}
	if want := []string{"RECS slow", "PRICING slow", "STOCK slow"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	var proxies []string
	for _, c := range p.Runs[0].Components {
		if c.Proxy != nil {
			proxies = append(proxies, c.Proxy.Name+"@"+c.Listen)
		}
	}
	if want := []string{"RECS@127.0.0.1:7002", "PRICING@127.0.0.1:7001", "STOCK@127.0.0.1:7003"}; !slices.Equal(proxies, want) {
		t.Errorf("proxies %v, want %v", proxies, want)
	}
	want := []rundata.EndpointInfo{{Name: "price"}, {Name: "recommend", Dependency: "RECS"}, {Name: "cart"}}
	for i, e := range p.Runs[0].Meta.Endpoints {
		if e.Name != want[i].Name || e.Dependency != want[i].Dependency {
			t.Errorf("meta endpoint %d: %s → %q, want %s → %q", i, e.Name, e.Dependency, want[i].Name, want[i].Dependency)
		}
	}
	for _, r := range p.Runs {
		for _, f := range r.Faults {
			if f.Dependency == "" {
				t.Errorf("run %s faults no dependency", r.ID)
			}
		}
	}

	for _, tt := range []struct{ name, yaml, want string }{
		{"external experiment", strings.Replace(strings.Replace(auditOwn, "%s", "modes: [shared]\nexpectations: {victim: cart, culprit: recommend}\n", 1), "{name: price}", "{name: price, dependency: PRICING}", 1),
			"t.yaml:11: endpoints[2].dependency: required: which of external.upstreams (PRICING, RECS, STOCK) /cart calls — a run faults the culprit's dependency and judges the victim by its own; only an audit (an audit: block) measures what each endpoint calls"},
		{"built-in service", "name: t\nendpoints: [{name: a, dependency: A}, {name: b}]\n",
			"endpoints[1].dependency: required: the dependency /b calls — the built-in service calls one per endpoint"},
		{"built-in audit", "name: t\nendpoints: [{name: a, dependency: A}, {name: b}]\naudit: {faults: [slow]}\n",
			"endpoints[1].dependency: required: the dependency /b calls"},
		{"audit condition of the culprit", strings.Replace(auditOwn, "%s", "audit: {faults: [slow]}\nexpectations: {culprit: price, victim: cart}\nconditions:\n  - healthy\n  - slow\n", 1),
			"conditions[1].dependency: required: the dependency this condition acts on (one of RECS, PRICING, STOCK); by default it is the culprit's, and /price declares none"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "use 1–32 of") {
				t.Errorf("a missing dependency reads as a naming error: %v", err)
			}
		})
	}
}
