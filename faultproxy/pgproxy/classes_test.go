package pgproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
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
	// A report query held by a latency fault is in flight in its class
	// (and in any), not in lookup's.
	e.put(t, `{"faults":[{"type":"latency","latency":"300ms","match":"report_"}]}`)
	held := make(chan error, 1)
	go func() { _, err := ext.Exec(ctx, "SELECT 4 AS report_n"); held <- err }()
	testkit.WaitFor(t, 5*time.Second, "the held report query in flight", func() bool {
		return gather(t, e.p, MetricClassInflight, "class", "report") == 1
	})
	if n, any := gather(t, e.p, MetricClassInflight, "class", "lookup"), gather(t, e.p, MetricClassInflight, "class", "any"); n != 0 || any != 1 {
		t.Errorf("lookup %v, any %v in flight while one report query is held; want 0, 1", n, any)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	report, lookup := gather(t, e.p, MetricClassQueries, "class", "report"), gather(t, e.p, MetricClassQueries, "class", "lookup")
	all, queries := gather(t, e.p, MetricClassQueries, "class", "any"), gather(t, e.p, "faultproxy_requests_total", "", "")
	if report < 7 || lookup < 2 || report+lookup != all || all != queries {
		t.Errorf("report %v, lookup %v, any %v of %v queries; want report ≥ 7, lookup ≥ 2, report+lookup = any = every query", report, lookup, all, queries)
	}
	// Every query answered: none in flight, a duration each.
	for _, cls := range []string{"report", "lookup", "any"} {
		testkit.WaitFor(t, 5*time.Second, cls+"'s queries ended", func() bool {
			return gather(t, e.p, MetricClassInflight, "class", cls) == 0 &&
				gather(t, e.p, MetricClassDuration, "class", cls) == gather(t, e.p, MetricClassQueries, "class", cls)
		})
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
