package spec

import (
	"strings"
	"testing"
	"time"

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
		{"  - {name: odd, dependency: B, faults: [{type: latency, latency: 10ms, match: 'x'}]}\n",
			"conditions[4].faults[0].match: only a fault on a PostgreSQL dependency"},
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
