package spec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

const auditSpec = `name: shop-audit
seed: 3
service: {timeout: 250ms, pool_size: 30, queue: 0}
endpoints:
  - {name: checkout, dependency: PAY}
  - {name: cart, dependency: INV}
  - {name: search, dependency: SEARCH}
load: {rates: {checkout: 40, cart: 40, search: 40}}
phases: {warmup: 1s, baseline: 2s, fault: 3s, recovery: 1s}
audit:
  critical: [search]
  abort:
    - {endpoint: checkout, error_rate: 0.5, for: 500ms}
`

// TestAuditGeneratesTheMatrix: an audit block spells out a control run
// and each dependency slow and failing, in the order of the endpoints,
// one bulkhead mode, no predictions checked, and the columns that name
// each condition's dependency and fault; the resolved spec parses back
// to the same matrix.
func TestAuditGeneratesTheMatrix(t *testing.T) {
	s, err := Parse("a.yaml", []byte(auditSpec))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Conditions {
		names = append(names, c.Name+"/"+c.Dependency)
	}
	want := "healthy/PAY slow-pay/PAY failing-pay/PAY slow-inv/INV failing-inv/INV slow-search/SEARCH failing-search/SEARCH"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("conditions %s, want %s", got, want)
	}
	if f := s.Conditions[1].Faults[0]; f.Type != "latency" || f.duration("latency").D != 225*time.Millisecond {
		t.Errorf("slow-pay's fault %+v, want a latency of 0.9T = 225ms", f)
	}
	if len(s.Audit.Columns) != 6 || !reflect.DeepEqual(s.Audit.Columns[3], rundata.AuditColumn{Condition: "failing-inv", Dependency: "INV", Fault: "failing"}) {
		t.Errorf("columns %+v", s.Audit.Columns)
	}
	if len(s.Modes) != 1 || s.Modes[0].Name != ModeBulkhead || len(s.Expectations.Check) != 0 {
		t.Errorf("modes %+v check %v, want one bulkhead mode and nothing checked", s.Modes, s.Expectations.Check)
	}
	if r := s.Audit.Abort[0]; r.For != 500*time.Millisecond || r.Endpoint != "checkout" || s.Audit.OnAbort != rundata.OnAbortContinue {
		t.Errorf("abort %+v on_abort %q", r, s.Audit.OnAbort)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		if got := len(r.Abort); got != map[bool]int{true: 0, false: 1}[r.Condition == CondHealthy] {
			t.Errorf("%s: %d stop conditions", r.ID, got)
		}
	}
	if p.OnAbort != rundata.OnAbortContinue {
		t.Errorf("plan's on_abort %q", p.OnAbort)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("resolved.yaml", b)
	if err != nil {
		t.Fatalf("the resolved spec does not parse: %v\n%s", err, b)
	}
	if len(back.Conditions) != len(s.Conditions) || len(back.Audit.Columns) != 6 || back.Audit.Abort[0].For != 500*time.Millisecond {
		t.Errorf("round trip: %d conditions, audit %+v", len(back.Conditions), back.Audit)
	}
	if !strings.Contains(string(b), "for: 500ms") {
		t.Errorf("resolved spec writes the abort rule's duration as %q, want 500ms", b)
	}
}

// TestAuditLadder: the ladder fault is one condition per delay.
func TestAuditLadder(t *testing.T) {
	s, err := Parse("a.yaml", []byte(strings.Replace(auditSpec, "  critical: [search]", "  faults: [ladder]\n  ladder: [0.25, 0.5]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Conditions) != 7 || s.Conditions[2].Name != "slow-0.5t-pay" || s.Conditions[2].Faults[0].duration("latency").D != 125*time.Millisecond {
		t.Errorf("conditions %+v", s.Conditions)
	}
}

// TestAuditErrors: every problem of an audit block names its field and line.
func TestAuditErrors(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"  critical: [search]", "  critical: [nope]", `a.yaml:11: audit.critical[0]: must be one of`},
		{"  critical: [search]", "  faults: [slow, broken]", `a.yaml:11: audit.faults[1]: must be slow, failing or ladder, got "broken"`},
		{"  critical: [search]", "  faults: [ladder]", `a.yaml:10: audit.ladder: required`},
		{"  critical: [search]", "  slow_t: 1.5", `a.yaml:11: audit.slow_t: must be in (0, 1)`},
		{"  critical: [search]", "  calls: {checkout: [NOPE]}", `a.yaml:11: audit.calls.checkout[0]: must be one of PAY, INV, SEARCH, got "NOPE"`},
		{"  critical: [search]", "  on_abort: later", `a.yaml:11: audit.on_abort: must be continue or stop, got "later"`},
		{"error_rate: 0.5, for: 500ms", "error_rate: 0.5, p99: 1s, for: 500ms", `a.yaml:13: audit.abort[0]: needs exactly one of error_rate, p99 and probe, got 2`},
		{"error_rate: 0.5, for: 500ms", "error_rate: 0.5, for: 10s", `a.yaml:13: audit.abort[0].for: must be positive and at most the fault phase (3s), got 10s`},
		{"error_rate: 0.5, for: 500ms", "error_rate: 0.5, for: soon", `a.yaml:13: audit.abort[0].for: want a duration such as 500ms or 2s, got "soon"`},
		{"{endpoint: checkout, error_rate: 0.5, for: 500ms}", "{probe: 'ftp://x', for: 500ms}", `a.yaml:13: audit.abort[0].probe: want an http(s) URL, got "ftp://x"`},
		{"{endpoint: checkout,", "{endpoint: nope,", `a.yaml:13: audit.abort[0].endpoint: must be * or one of`},
	} {
		_, err := Parse("a.yaml", []byte(strings.Replace(auditSpec, tc.old, tc.new, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %v\nwant %s", tc.new, err, tc.want)
		}
	}
}

// TestEndpointRequests: an endpoint's method, headers and body reach its
// load, and bad ones name their field and line.
func TestEndpointRequests(t *testing.T) {
	text := strings.Replace(auditSpec, "  - {name: cart, dependency: INV}",
		"  - {name: cart, dependency: INV, method: POST, headers: {Content-Type: application/json}, body: '{\"sku\": 7}'}", 1)
	s, err := Parse("a.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	e := p.Runs[0].Load.Endpoints[1]
	if e.Name != "cart" || e.Method != "POST" || e.Header.Get("Content-Type") != "application/json" || string(e.Body) != `{"sku": 7}` {
		t.Errorf("cart's load endpoint %+v", e)
	}
	for _, tc := range []struct{ new, want string }{
		{"method: FETCH", `a.yaml:6: endpoints[1].method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, got "FETCH"`},
		{"body: x", `a.yaml:6: endpoints[1].body: needs a method that carries one`},
		{"headers: {'a b': x}", `a.yaml:6: endpoints[1].headers: "a b" is not a header name`},
	} {
		_, err := Parse("a.yaml", []byte(strings.Replace(auditSpec, "  - {name: cart, dependency: INV}", "  - {name: cart, dependency: INV, "+tc.new+"}", 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %v\nwant %s", tc.new, err, tc.want)
		}
	}
}

// TestAuditOwnConditions: conditions the spec writes itself are the
// columns, each with the dependency its condition gets (the culprit's by
// default); an audit without a fault beside the control is an error.
func TestAuditOwnConditions(t *testing.T) {
	s, err := Parse("a.yaml", []byte(strings.Replace(auditSpec, "audit:", "conditions: [healthy, slow, {name: flaky, dependency: INV, faults: [{type: error, percent: 30}]}]\naudit:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	want := []rundata.AuditColumn{{Condition: "slow", Dependency: "PAY", Fault: "slow"}, {Condition: "flaky", Dependency: "INV", Fault: "flaky"}}
	if fmt.Sprint(s.Audit.Columns) != fmt.Sprint(want) {
		t.Errorf("columns %+v, want %+v", s.Audit.Columns, want)
	}
	_, err = Parse("a.yaml", []byte(strings.Replace(auditSpec, "audit:", "conditions: [healthy]\naudit:", 1)))
	if err == nil || !strings.Contains(err.Error(), "an audit needs at least one fault beside the control run") {
		t.Errorf("an audit of the control alone: %v", err)
	}
}

// TestAuditLoadColumn: a condition of the spec's own that raises some
// endpoints' rates is a column whose cause is their load: with nothing
// faulted it has no dependency; with a fault too it keeps its dependency.
func TestAuditLoadColumn(t *testing.T) {
	text := `name: tenants-audit
service: {timeout: 250ms, pool_size: 8, queue: 0}
endpoints:
  - {name: quiet, dependency: SEARCH, path: search, headers: {X-Tenant: quiet}}
  - {name: noisy, dependency: SEARCH, path: search, headers: {X-Tenant: noisy}}
load: {rates: {quiet: 40, noisy: 40}}
conditions:
  - {name: healthy}
  - {name: surge, rates: {noisy: 400}}
  - {name: surge-slow, rates: {noisy: 200}, faults: [{type: latency, percent: 100, latency: 50ms}]}
audit: {critical: [quiet]}
`
	s, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []rundata.AuditColumn{{Condition: "surge", Fault: "surge", Load: []string{"noisy"}},
		{Condition: "surge-slow", Dependency: "SEARCH", Fault: "surge-slow", Load: []string{"noisy"}}}
	if !reflect.DeepEqual(s.Audit.Columns, want) {
		t.Errorf("columns %+v, want %+v", s.Audit.Columns, want)
	}
	if got := s.Audit.Columns[0].Target(); got != "load of /noisy" {
		t.Errorf("target %q", got)
	}
}
