package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
)

const pgSpec = `name: ext-pg
external:
  targets:   {a: "http://127.0.0.1:8080/a", b: "http://127.0.0.1:8080/b"}
  upstreams: {A: "postgres://127.0.0.1:5432", B: "http://127.0.0.1:9002"}
  proxies:   {A: "127.0.0.1:7001", B: "127.0.0.1:7002"}
modes: [shared]
conditions:
  - {name: slow, dependency: A, faults: [{type: latency, latency: 200ms, jitter: 10ms, match: "analytics|pg_sleep"}]}
  - {name: failing, dependency: A, faults: [{type: error, percent: 50, code: "53300"}]}
  - {name: stuck, dependency: A, faults: [{type: hang}]}
  - {name: b-slow, dependency: B, faults: [{type: latency, latency: 200ms}]}
%s`

// TestPostgresUpstreamPlan: a postgres:// upstream gets the PostgreSQL
// plane's proxy, and its conditions' faults act per query: latency with
// its match, error with its SQLSTATE (or the default), hang; an HTTP
// dependency beside it keeps its HTTP faults.
func TestPostgresUpstreamPlan(t *testing.T) {
	s, err := Parse("pg.yaml", []byte(strings.Replace(pgSpec, "%s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]pgproxy.Fault{
		"slow":    {{Type: pgproxy.TypeLatency, Percent: 100, Latency: 200 * time.Millisecond, Jitter: 10 * time.Millisecond, Match: "analytics|pg_sleep"}},
		"failing": {{Type: pgproxy.TypeError, Percent: 50, Code: "53300", Message: "injected by the fault proxy (error)"}},
		"stuck":   {{Type: pgproxy.TypeHang, Percent: 100}},
		"b-slow":  nil,
	}
	seen := 0
	for _, r := range p.Runs {
		w, ok := want[r.Condition]
		if !ok || len(r.Faults) != 1 {
			continue
		}
		seen++
		got := r.Faults[0].Postgres
		if len(got) != len(w) || (len(w) > 0 && got[0] != w[0]) {
			t.Errorf("condition %s: PostgreSQL faults %+v, want %+v", r.Condition, got, w)
		}
		if err := pgproxy.ValidateFaults(got); err != nil {
			t.Errorf("condition %s: %v", r.Condition, err)
		}
		if r.Faults[0].TCP != nil {
			t.Errorf("condition %s: TCP faults %+v too", r.Condition, r.Faults[0].TCP)
		}
		for _, c := range r.Components {
			if c.Proxy != nil && c.Proxy.Name == "A" && c.Proxy.Upstream.URL != "postgres://127.0.0.1:5432" {
				t.Errorf("proxy A's upstream %q", c.Proxy.Upstream.URL)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d conditions planned with faults", seen, len(want))
	}
}

// TestPostgresUpstreamErrors: what the PostgreSQL plane cannot do, and
// match or code where they mean nothing, are refused with the file, line
// and field.
func TestPostgresUpstreamErrors(t *testing.T) {
	for _, tt := range []struct{ edit, want string }{
		{"  - {name: busy-a, dependency: A, faults: [{type: capacity, capacity: 2}]}\n",
			"pg.yaml:12: conditions[4].faults[0].type: dependency A is a PostgreSQL server"},
		{"  - {name: odd, dependency: A, faults: [{type: error, code: '5701'}]}\n",
			"pg.yaml:12: conditions[4].faults[0].code: want an SQLSTATE"},
		{"  - {name: odd, dependency: A, faults: [{type: latency, latency: 10ms, code: '57014'}]}\n",
			"conditions[4].faults[0].code: an SQLSTATE answers an error fault"},
		{"  - {name: odd, dependency: A, faults: [{type: latency, latency: 10ms, match: '('}]}\n",
			"conditions[4].faults[0].match: error parsing regexp"},
		{"  - {name: odd, dependency: B, faults: [{type: latency, latency: 10ms, match: 'select 1 from report_'}]}\n",
			"conditions[4].faults[0].match: dependency B is an HTTP one, whose faults match a route: \"select\" before the space"},
		{"  - {name: odd, dependency: B, faults: [{type: error, code: '57014'}]}\n",
			"conditions[4].faults[0].code: only a fault on a PostgreSQL dependency"},
	} {
		_, err := Parse("pg.yaml", []byte(strings.Replace(pgSpec, "%s", tt.edit, 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(tt.edit), err, tt.want)
		}
	}
	for _, tt := range []struct{ from, to, want string }{
		{`A: "postgres://127.0.0.1:5432"`, `A: "postgres://u:pw@127.0.0.1:5432/db"`, "external.upstreams.A: want postgres://host:port"},
		{`A: "postgres://127.0.0.1:5432"`, `A: "postgres://127.0.0.1:0"`, "external.upstreams.A: want postgres://host:port"},
	} {
		_, err := Parse("pg.yaml", []byte(strings.Replace(strings.Replace(pgSpec, "%s", "", 1), tt.from, tt.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.to, err, tt.want)
		}
	}
}

const pgBuiltinSpec = `name: db
dependencies:
  DB: {protocol: postgres, setup: "CREATE TABLE t (id int)"}
  B: {latency: 10ms}
endpoints:
  - {name: a, dependency: DB, query: "SELECT count(*) AS analytics FROM t"}
  - {name: b, dependency: B}
conditions:
  - {name: slow, dependency: DB, faults: [{type: latency, latency: 0.9T, match: analytics}]}
modes: [shared]
%s`

// TestPostgresBuiltinPlan: a PostgreSQL dependency of the built-in service
// is a server the run starts with the dependency's setup SQL, behind a
// proxy in PostgreSQL mode; the endpoint that calls it runs its query
// there, as the server's user, without TLS; the other endpoint's HTTP
// stub is as before.
func TestPostgresBuiltinPlan(t *testing.T) {
	s, err := Parse("db.yaml", []byte(strings.Replace(pgBuiltinSpec, "%s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	r := p.Runs[0]
	kinds := map[string]plan.Kind{}
	for _, c := range r.Components {
		kinds[c.Name] = c.Kind
		switch {
		case c.Postgres != nil:
			if c.Postgres.Setup != "CREATE TABLE t (id int)" || c.Postgres.MaxConnections < 100 {
				t.Errorf("%s: %+v, want the dependency's setup", c.Name, c.Postgres)
			}
		case c.Proxy != nil && c.Proxy.Name == "DB":
			if up := c.Proxy.Upstream; up.Component != "dep-DB" || up.Scheme != "postgres" {
				t.Errorf("proxy DB's upstream %+v, want the started server, postgres://", up)
			}
		case c.Service != nil:
			a := c.Service.Upstreams["a"]
			u, err := a.Resolve(map[string]string{"proxy-DB": "http://127.0.0.1:7001"})
			if err != nil || u != "postgres://127.0.0.1:7001/postgres?user=bulkheadlab&sslmode=disable&connect_timeout=10" {
				t.Errorf("endpoint a's DSN %q, %v", u, err)
			}
			if q := c.Service.Config.Endpoints[0].Query; q != "SELECT count(*) AS analytics FROM t" {
				t.Errorf("endpoint a's query %q", q)
			}
			if err := c.Service.Config.Validate(); err == nil {
				t.Errorf("the service's config validates without its URLs")
			}
		}
	}
	if kinds["dep-DB"] != plan.KindPostgres || kinds["dep-B"] != plan.KindDep {
		t.Errorf("components %v, want dep-DB a PostgreSQL server and dep-B a stub", kinds)
	}
	if got := r.Faults[0].Postgres; len(got) != 1 || got[0].Match != "analytics" || got[0].Latency != 225*time.Millisecond {
		t.Errorf("faults %+v, want the latency per matching query", got)
	}
	args := strings.Join(r.Components[0].Args(), " ")
	if !strings.HasPrefix(args, "postgres --listen 127.0.0.1:0 --setup CREATE TABLE t (id int)") {
		t.Errorf("the server's command line %q", args)
	}
}

// TestPostgresBuiltinErrors: an endpoint of a PostgreSQL dependency
// without a query, a query or setup where they mean nothing, are refused
// with the file, line and field.
func TestPostgresBuiltinErrors(t *testing.T) {
	for _, tt := range []struct{ from, to, want string }{
		{`query: "SELECT count(*) AS analytics FROM t"`, `query: ""`, "endpoints[0].query: required"},
		{`{name: b, dependency: B}`, `{name: b, dependency: B, query: "SELECT 1"}`, "endpoints[1].query: only an endpoint whose dependency is a PostgreSQL server"},
		{`B: {latency: 10ms}`, `B: {latency: 10ms, setup: "SELECT 1"}`, "dependencies.B.setup: only a PostgreSQL server the run starts"},
	} {
		_, err := Parse("db.yaml", []byte(strings.Replace(strings.Replace(pgBuiltinSpec, "%s", "", 1), tt.from, tt.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.to, err, tt.want)
		}
	}
}

// TestLittlesPreviewMatch: the Little's-law preview counts a fault with a
// match only for the endpoints whose query it matches.
func TestLittlesPreviewMatch(t *testing.T) {
	text := strings.Replace(strings.Replace(pgBuiltinSpec, "%s", "", 1), "{name: b, dependency: B}", `{name: b, dependency: DB, query: "SELECT 1"}`, 1)
	text = strings.Replace(text, "  B: {latency: 10ms}\n", "", 1)
	s, err := Parse("db.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	c := &s.Conditions[0]
	if a, b := s.holdingTime("DB", c, "a"), s.holdingTime("DB", c, "b"); a <= b || b != s.holdingTime("DB", nil, "b") {
		t.Errorf("holding time under the matching fault: a %v, b %v (without the fault %v); want a's longer, b's unchanged", a, b, s.holdingTime("DB", nil, "b"))
	}
}
