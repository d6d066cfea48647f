//go:build e2e

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// ownService is a service of a user's own, as a test stands one up on
// loopback: each endpoint calls its dependencies (through their proxies)
// one after another with a client that gives up after 250 ms (504), and
// the calls to the dependencies in shared take one of limit sockets, none
// of them queued — a full agent answers 503 X-Reject: pool at once, as a
// Node service's one outgoing agent does. It exports no metrics.
func ownService(t *testing.T, proxies map[string]string, routes map[string][]string, shared []string, limit int) string {
	t.Helper()
	client := &http.Client{Timeout: 250 * time.Millisecond, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}}
	sockets := make(chan struct{}, max(limit, 1))
	call := func(dep string) (int, string) {
		if slices.Contains(shared, dep) {
			select {
			case sockets <- struct{}{}:
				defer func() { <-sockets }()
			default:
				return http.StatusServiceUnavailable, "pool"
			}
		}
		resp, err := client.Get("http://" + proxies[dep] + "/")
		if err != nil {
			return http.StatusGatewayTimeout, ""
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return http.StatusBadGateway, ""
		}
		return http.StatusOK, ""
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	for ep, deps := range routes {
		mux.HandleFunc("/"+ep, func(w http.ResponseWriter, _ *http.Request) {
			for _, d := range deps {
				if code, reject := call(d); code != http.StatusOK {
					if reject != "" {
						w.Header().Set("X-Reject", reject)
					}
					w.WriteHeader(code)
					return
				}
			}
			io.WriteString(w, "ok")
		})
	}
	t.Cleanup(client.CloseIdleConnections)
	return serveOn(t, func(ctx context.Context, ln net.Listener) error {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { <-ctx.Done(); srv.Close() }()
		return srv.Serve(ln)
	})
}

// ownAudit stands up dependencies deps (stubs of 10 ms ± 2 ms), their
// proxies' fixed addresses and ownService, and returns an external audit
// spec of it (T = 250 ms, the slow fault, short phases, no dependency
// declared: the audit measures them) with the given endpoints' rates and
// critical endpoints.
func ownAudit(t *testing.T, name string, deps []string, routes map[string][]string, shared []string, limit int, rates map[string]int, critical string) string {
	t.Helper()
	upstreams, proxies := map[string]string{}, map[string]string{}
	for i, d := range deps {
		dep, err := service.NewDep(service.DepConfig{Name: d, Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: uint64(i + 1), Size: 16})
		if err != nil {
			t.Fatal(err)
		}
		upstreams[d], proxies[d] = "http://"+serveOn(t, dep.Serve), testkit.FreeAddr(t)
	}
	addr := ownService(t, proxies, routes, shared, limit)
	var ups, prs, targets, eps, rs []string
	for _, d := range deps {
		ups = append(ups, fmt.Sprintf("%s: %q", d, upstreams[d]))
		prs = append(prs, fmt.Sprintf("%s: %q", d, proxies[d]))
	}
	for _, ep := range slices.Sorted(maps.Keys(routes)) {
		targets = append(targets, fmt.Sprintf("%s: %q", ep, "http://"+addr+"/"+ep))
		eps = append(eps, "  - {name: "+ep+"}")
		rs = append(rs, fmt.Sprintf("%s: %d", ep, rates[ep]))
	}
	return fmt.Sprintf(`name: %s
seed: 5
external:
  upstreams: {%s}
  proxies:   {%s}
  targets:   {%s}
  canary: "http://%s/healthz"
  rules:
    - {status: 503, header: X-Reject, value: pool, class: rejected}
    - {status: 504, class: dep_timeout}
    - {status: 502, class: dep_error}
endpoints:
%s
service: {timeout: 250ms}
load: {rates: {%s}}
phases: {warmup: 500ms, baseline: 1s, fault: 4s, recovery: 500ms}
audit:
  faults: [slow]
  critical: [%s]
  calibration: {requests: 10, rate: 40}
`, name, strings.Join(ups, ", "), strings.Join(prs, ", "), strings.Join(targets, ", "), addr, strings.Join(eps, "\n"), strings.Join(rs, ", "), critical)
}

// TestAuditFindsSharedLimit audits a service of a user's own whose /price
// calls PRICING, /recommend RECS and /cart STOCK, the calls to PRICING and
// RECS taking one of 8 sockets without a queue (a limit shared by two of
// three dependencies; no metrics; no dependency declared). With the
// default arrivals (Poisson), a slow PRICING takes /recommend down: a
// finding named with the limit inferred over PRICING+RECS from the proxies
// (the demand counted from the measured call graph) and with its failures
// as the service's answers told (rejected by a pool); /cart stays
// ISOLATED, and no limit is inferred on STOCK, which has none.
func TestAuditFindsSharedLimit(t *testing.T) {
	text := ownAudit(t, "shop-audit", []string{"PRICING", "RECS", "STOCK"},
		map[string][]string{"price": {"PRICING"}, "recommend": {"RECS"}, "cart": {"STOCK"}}, []string{"PRICING", "RECS"}, 8,
		map[string]int{"price": 60, "recommend": 100, "cart": 40}, "recommend, cart")
	code, out, dir := runAudit(t, "shop-audit", text)
	if code != ExitFailed || !strings.Contains(out, "/recommend × PRICING slow: DEGRADED") {
		t.Fatalf("audit --check: exit %d, want %d naming /recommend × PRICING slow; output:\n%s", code, ExitFailed, out)
	}
	sum := readSummary(t, dir)
	m := sum.Audits[0]
	if got, want := fmt.Sprint(m.CallGraph.Edges), "map[cart:[STOCK] price:[PRICING] recommend:[RECS]]"; got != want {
		t.Errorf("measured call graph %s, want %s", got, want)
	}
	if m.Declared != nil || len(m.GraphDiffs) != 0 || m.Arrivals != "poisson" {
		t.Errorf("declared %v, differences %v, arrivals %q: want nothing declared, no difference, poisson by default", m.Declared, m.GraphDiffs, m.Arrivals)
	}
	var f *verdict.AuditFinding
	for i := range m.Findings {
		if m.Findings[i].Endpoint == "recommend" && m.Findings[i].Dependency == "PRICING" {
			f = &m.Findings[i]
		}
	}
	if f == nil || f.Resource != "pool (inferred) PRICING+RECS" || !strings.Contains(f.Summary, "rejected by a pool (503 X-Reject: pool)") {
		t.Fatalf("finding of /recommend × PRICING slow %+v, want it named pool (inferred) PRICING+RECS, rejected by a pool; findings %+v", f, m.Findings)
	}
	cart := slices.Index(m.Endpoints, "cart")
	for j, col := range m.Columns {
		if col.Dependency != "STOCK" && m.Cells[cart][j].Class != verdict.CellIsolated {
			t.Errorf("/cart × %s slow: %s, want ISOLATED", col.Dependency, m.Cells[cart][j].Class)
		}
	}
	for _, r := range sum.Runs {
		for _, l := range r.Inferred {
			if slices.Contains(l.Dependencies, "STOCK") {
				t.Errorf("%s: %s inferred, though STOCK has no limit", r.ID, l)
			}
			if len(l.Dependencies) > 1 && (!slices.Equal(l.Dependencies, []string{"PRICING", "RECS"}) || l.Limit < 7 || l.Limit > 9) {
				t.Errorf("%s: %s inferred, want PRICING+RECS capped at about 8", r.ID, l)
			}
		}
		if r.Condition == "slow-pricing" {
			t.Logf("%s: inferred %s; /recommend: %s", r.ID, measure.DescribeInferred(r.Inferred), m.Cells[slices.Index(m.Endpoints, "recommend")][0].Failures)
		}
	}
	if md := readReport(t, dir); strings.Contains(md, "Victim") || strings.Contains(md, "SKIPPED") {
		t.Errorf("the report beside the audit judges predictions:\n%s", md[:min(len(md), 800)])
	}
}

// TestAuditNoLimitSaysNothing audits a service of another shape with no
// limit at all: /orders calls its one dependency DB, /ping calls none; no
// metrics, no dependency declared. A slow DB slows /orders (EXPECTED), and
// the harness says nothing more: /ping ISOLATED (--check passes), no
// finding, no limit inferred in any run — calls to DB sat at their demand.
func TestAuditNoLimitSaysNothing(t *testing.T) {
	text := ownAudit(t, "ledger-audit", []string{"DB"}, map[string][]string{"orders": {"DB"}, "ping": nil}, nil, 0,
		map[string]int{"orders": 60, "ping": 60}, "ping")
	code, out, dir := runAudit(t, "ledger-audit", text)
	if code != ExitOK {
		t.Fatalf("audit --check: exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	sum := readSummary(t, dir)
	m := sum.Audits[0]
	if got, want := fmt.Sprint(m.CallGraph.Edges), "map[orders:[DB]]"; got != want {
		t.Errorf("measured call graph %s, want %s", got, want)
	}
	if len(m.Findings) != 0 {
		t.Errorf("findings %+v, want none", m.Findings)
	}
	for _, r := range sum.Runs {
		if len(r.Inferred) > 0 {
			t.Errorf("%s: %s inferred from a service without a limit", r.ID, measure.DescribeInferred(r.Inferred))
		}
	}
	if c := m.Cells[slices.Index(m.Endpoints, "ping")][0]; c.Class != verdict.CellIsolated {
		t.Errorf("/ping × DB slow: %+v, want ISOLATED", c)
	}
}
