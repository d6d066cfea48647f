package pgproxy

import (
	"context"
	"strings"
	"testing"
)

// TestClassesCounted: the proxy counts each query once per statement class
// it matches, by the simple and the extended protocol alike (a prepared
// statement by the text of its Parse, each Bind and Execute of it again),
// whether or not a fault is set. A query is what faultproxy_requests_total
// counts (pgx's preparation of a statement is one of its own).
func TestClassesCounted(t *testing.T) {
	_, e := pgEnv(t, Config{Classes: []Class{{Name: "report", Match: `(?i)\breport_`}, {Name: "lookup", Match: `lookup`}, {Name: "any", Match: `SELECT`}}})
	ctx := context.Background()
	ext := connect(t, e.srv.Addr())
	sim := connect(t, e.srv.Addr(), simple)
	for i := range 3 {
		if _, err := ext.Exec(ctx, "SELECT $1::int AS report_n", i); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Exec(ctx, "SELECT 1 AS report_n"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ext.Exec(ctx, "SELECT 2 AS lookup"); err != nil {
		t.Fatal(err)
	}
	e.put(t, `{"faults":[{"type":"latency","latency":"1ms","match":"lookup"}]}`)
	if _, err := sim.Exec(ctx, "SELECT 2 AS lookup"); err != nil {
		t.Fatal(err)
	}
	report, lookup := gather(t, e.p, MetricClassQueries, "class", "report"), gather(t, e.p, MetricClassQueries, "class", "lookup")
	all, queries := gather(t, e.p, MetricClassQueries, "class", "any"), gather(t, e.p, "faultproxy_requests_total", "", "")
	if report < 6 || lookup < 2 || report+lookup != all || all != queries {
		t.Errorf("report %v, lookup %v, any %v of %v queries; want report ≥ 6, lookup ≥ 2, report+lookup = any = every query", report, lookup, all, queries)
	}
}

// TestClassesInvalid: New refuses a bad class, naming it.
func TestClassesInvalid(t *testing.T) {
	for _, tc := range []struct {
		cs   []Class
		want string
	}{
		{[]Class{{Name: "a b", Match: "x"}}, `"a b"`},
		{[]Class{{Name: "a", Match: "("}}, "statement class a: error parsing regexp"},
		{[]Class{{Name: "a", Match: ""}}, "match is empty"},
		{[]Class{{Name: "a", Match: "x"}, {Name: "a", Match: "y"}}, "given twice"},
	} {
		_, err := New(Config{Upstream: "127.0.0.1:5432", Classes: tc.cs})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.cs, err, tc.want)
		}
	}
}
