package spec

import (
	"strings"
	"testing"
)

const externalSpec = `name: ext
external:
  targets:   {a: "http://127.0.0.1:8080/a", b: "http://127.0.0.1:8080/b"}
  upstreams: {A: "http://127.0.0.1:9001", B: "http://127.0.0.1:9002"}
  proxies:   {A: "127.0.0.1:7001", B: "127.0.0.1:7002"}
  rules:
    - {status: "503", header: Retry-After, class: rejected}
    - {status: "2xx", class: %s}
modes: [shared]
`

// TestExternalRulesValidated checks that classification rules are decoded
// and validated when the spec loads, with the file and line.
func TestExternalRulesValidated(t *testing.T) {
	if _, err := Parse("ext.yaml", []byte(strings.Replace(externalSpec, "%s", "ok", 1))); err != nil {
		t.Fatalf("valid external spec: %v", err)
	}
	_, err := Parse("ext.yaml", []byte(strings.Replace(externalSpec, "%s", "nope", 1)))
	if err == nil || !strings.Contains(err.Error(), "ext.yaml:8: external.rules[1]:") || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("bad class: got %v, want ext.yaml:8: external.rules[1]: ... \"nope\"", err)
	}
}

// TestExternalConnMetrics: a user's connection-pool gauges are mapped into
// the plan; in_use and limit are required, and connections alone are
// enough metrics.
func TestExternalConnMetrics(t *testing.T) {
	base := strings.Replace(externalSpec, "%s", "ok", 1) + "  # metrics\n"
	with := func(m string) string {
		return strings.Replace(base, "modes: [shared]\n", "  metrics: "+m+"\nmodes: [shared]\n", 1)
	}
	for _, tt := range []struct{ metrics, want string }{
		{`{url: "http://127.0.0.1:8080/metrics", conns: {in_use: hikaricp_connections_active, limit: hikaricp_connections_max, waiting: hikaricp_connections_pending}}`, ""},
		{`{url: "http://127.0.0.1:8080/metrics", conns: {limit: hikaricp_connections_max}}`, "ext.yaml:9: external.metrics.conns.in_use: required"},
		{`{url: "http://127.0.0.1:8080/metrics", conns: {in_use: x}}`, "external.metrics.conns.limit: required"},
		{`{url: "http://127.0.0.1:8080/metrics"}`, "name in_use (permits in use) or available (free permits, with limit), or conns"},
	} {
		s, err := Parse("ext.yaml", []byte(with(tt.metrics)))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.metrics, err)
			continue
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.metrics, err, tt.want)
			continue
		case tt.want != "":
			continue
		}
		p, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		m := p.Runs[0].ServiceMetrics.Map
		if m.ConnInUse != "hikaricp_connections_active" || m.ConnLimit != "hikaricp_connections_max" || m.ConnWaiting != "hikaricp_connections_pending" || m.ConnPoolLabel != "pool" {
			t.Errorf("plan's metric map %+v", m)
		}
	}
}

// TestExternalKubernetes: external.kubernetes lays the experiment out on a
// cluster: replicas per dependency and shards within bounds, naming the
// field and line; with it the proxies' addresses may be left out (a
// Service each), and the plan still has a proxy per dependency.
func TestExternalKubernetes(t *testing.T) {
	base := `name: ext
external:
  targets:   {a: "http://checkout.shop.svc/a", b: "http://checkout.shop.svc/b"}
  upstreams: {A: "http://pay.shop.svc:8080", B: "http://stock.shop.svc:8080"}
  kubernetes: %s
modes: [shared]
`
	for _, tt := range []struct{ k, want string }{
		{`{replicas: {A: 2}, shards: 8}`, ""},
		{`{}`, ""},
		{`{replicas: {C: 2}}`, `ext.yaml:5: external.kubernetes.replicas.C: no dependency "C"`},
		{`{replicas: {A: 0}}`, "external.kubernetes.replicas.A: 0 is not in [1, 100]"},
		{`{shards: -1}`, "external.kubernetes.shards: -1 is not in [0, 1000]"},
		{`{nodes: 3}`, "nodes"},
	} {
		s, err := Parse("ext.yaml", []byte(strings.Replace(base, "%s", tt.k, 1)))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.k, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.k, err, tt.want)
		case tt.want == "":
			p, err := s.Plan()
			if err != nil {
				t.Fatal(err)
			}
			proxies := 0
			for _, c := range p.Runs[0].Components {
				if c.Proxy != nil {
					proxies++
				}
			}
			if proxies != 2 {
				t.Errorf("%s: %d proxies in the plan, want 2", tt.k, proxies)
			}
		}
	}
	// Without the kubernetes block the proxies' addresses are required.
	noK := strings.Replace(base, "  kubernetes: %s\n", "", 1)
	if _, err := Parse("ext.yaml", []byte(noK)); err == nil || !strings.Contains(err.Error(), "external.proxies.A") {
		t.Errorf("no proxies, no kubernetes: %v", err)
	}
}
