//go:build e2e

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// routeDep is one HTTP dependency with several routes, as a test stands
// one up on loopback: each route answers after its own latency; any other
// path is a 404.
func routeDep(t *testing.T, routes map[string]time.Duration) string {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, d := range routes {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			time.Sleep(d)
			io.WriteString(w, `{"ok":true}`)
		})
	}
	return serveOn(t, func(ctx context.Context, ln net.Listener) error {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { <-ctx.Done(); srv.Close() }()
		return srv.Serve(ln)
	})
}

// routeCall is what one endpoint of routeService does: one call to the
// dependency (method and path), taking a permit of the pool named pool.
type routeCall struct {
	method, path, pool string
}

// routeService is a service of a user's own that calls routes of one HTTP
// dependency through its proxy: each endpoint makes its call with a client
// that gives up after 250 ms (504), holding a permit of its pool for the
// call; a pool has size permits and no queue — a full pool answers 503
// X-Reject: pool at once. Endpoints that name the same pool share it. An
// endpoint with no call answers at once. It exports no metrics.
func routeService(t *testing.T, proxy string, eps map[string]*routeCall, size int) string {
	t.Helper()
	client := &http.Client{Timeout: 250 * time.Millisecond, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}}
	t.Cleanup(client.CloseIdleConnections)
	pools := map[string]chan struct{}{}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	for ep, c := range eps {
		if c != nil && pools[c.pool] == nil {
			pools[c.pool] = make(chan struct{}, size)
		}
		mux.HandleFunc("/"+ep, func(w http.ResponseWriter, _ *http.Request) {
			if c == nil {
				io.WriteString(w, "ok")
				return
			}
			select {
			case pools[c.pool] <- struct{}{}:
				defer func() { <-pools[c.pool] }()
			default:
				w.Header().Set("X-Reject", "pool")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			var body io.Reader
			if c.method == http.MethodPost {
				body = strings.NewReader(`{"sku":42}`)
			}
			req, _ := http.NewRequest(c.method, "http://"+proxy+c.path, body)
			resp, err := client.Do(req)
			if err != nil {
				w.WriteHeader(http.StatusGatewayTimeout)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			io.WriteString(w, "ok")
		})
	}
	return serveOn(t, func(ctx context.Context, ln net.Listener) error {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { <-ctx.Done(); srv.Close() }()
		return srv.Serve(ln)
	})
}

// routesRules are routeService's answers, as a spec's rules.
const routesRules = `  rules:
    - {status: 503, header: X-Reject, value: pool, class: rejected}
    - {status: 504, class: dep_timeout}
    - {status: 502, class: dep_error}`

// TestAuditRouteClasses audits a service of a user's own (Go, in the test,
// on loopback) whose /report calls the report route of one HTTP
// dependency API (GET /reports/daily?from=…) and /interactive its items
// route (GET /items/42), both through one fault proxy: dependency API with
// the route classes report and interactive. The calibration measures
// which route each endpoint calls; the audit slows each route in turn
// (0.9 T on its requests only). With one pool of 8 permits for both
// endpoints' calls (mode shared), a slow report route takes /interactive
// down: a finding "/interactive × API/report slow"; with a pool each (mode
// bulkhead) there is no finding. Little's law, given the slow fault's
// match, charges it to /report's requests only: /interactive's pool in
// mode bulkhead is not predicted above its measured demand.
func TestAuditRouteClasses(t *testing.T) {
	binary(t)
	dep := routeDep(t, map[string]time.Duration{"GET /reports/": 10 * time.Millisecond, "GET /items/": 5 * time.Millisecond})
	proxy := testkit.FreeAddr(t)
	calls := func(shared bool) map[string]*routeCall {
		report, interactive := "api-report", "api-interactive"
		if shared {
			report, interactive = "api", "api"
		}
		return map[string]*routeCall{
			"report":      {http.MethodGet, "/reports/daily?from=2026-01-01", report},
			"interactive": {http.MethodGet, "/items/42", interactive},
		}
	}
	addrS, addrB := routeService(t, proxy, calls(true), 8), routeService(t, proxy, calls(false), 8)
	text := fmt.Sprintf(`name: routes-audit
seed: 11
external:
  upstreams: {API: "http://%[1]s"}
  proxies:   {API: "%[2]s"}
%[3]s
dependencies:
  API: {classes: {report: "^/reports/", interactive: "GET ^/items/"}}
modes:
  - name: shared
    external:
      targets: {report: "http://%[4]s/report", interactive: "http://%[4]s/interactive"}
      canary: "http://%[4]s/healthz"
      pools: [{name: api, size: 8, endpoints: [report, interactive]}]
  - name: bulkhead
    external:
      targets: {report: "http://%[5]s/report", interactive: "http://%[5]s/interactive"}
      canary: "http://%[5]s/healthz"
      pools: [{name: api-report, size: 8, endpoints: [report]}, {name: api-interactive, size: 8, endpoints: [interactive]}]
endpoints:
  - {name: report, dependency: API}
  - {name: interactive, dependency: API}
service: {timeout: 250ms}
load: {rates: {report: 50, interactive: 40}}
phases: {warmup: 1s, baseline: 1s, fault: 1500ms, recovery: 500ms}
audit:
  faults: [slow]
  calibration: {requests: 10, rate: 40}
`, dep, proxy, routesRules, addrS, addrB)
	sum := runClassAudit(t, "routes-audit", text)
	checkClassAudit(t, sum, "API", "requests")
	// Little's law with the fault's match: /interactive's own pool, with
	// the report route slow. Charged to every request of API, the fault
	// would add 40/s × 225 ms = 9 permits; with its match it adds none to
	// /interactive.
	if pred, got, ok := poolDemand(t, sum, "slow-api-report-bulkhead-r1", "api-interactive"); !ok || pred > 1.5*got && pred-got > 1 || pred > 4 {
		t.Errorf("pool api-interactive: predicted %.2f, measured %.2f (%v): want no more than 1.5 × the measured demand (or one permit more)", pred, got, ok)
	}
}

// TestAuditRouteClassesIsolated audits a correct service of another
// shape: dependency CATALOG with routes named the user's way and told
// apart by method — browse "GET ^/v2/catalog/" and order "POST
// ^/v2/orders$" — called by /find (GET /v2/catalog/search?q=…) and /buy
// (POST /v2/orders) each through a pool of its own, and /status calling
// nothing. Each route slowed in turn slows only the endpoint that calls
// it (EXPECTED); the others stay ISOLATED; no finding, and --check passes.
func TestAuditRouteClassesIsolated(t *testing.T) {
	binary(t)
	dep := routeDep(t, map[string]time.Duration{"GET /v2/catalog/": 5 * time.Millisecond, "POST /v2/orders": 8 * time.Millisecond})
	proxy := testkit.FreeAddr(t)
	addr := routeService(t, proxy, map[string]*routeCall{
		"find":   {http.MethodGet, "/v2/catalog/search?q=lamp", "browse"},
		"buy":    {http.MethodPost, "/v2/orders", "order"},
		"status": nil,
	}, 8)
	text := fmt.Sprintf(`name: catalog-audit
seed: 3
external:
  upstreams: {CATALOG: "http://%[1]s"}
  proxies:   {CATALOG: "%[2]s"}
  targets:   {find: "http://%[3]s/find", buy: "http://%[3]s/buy", status: "http://%[3]s/status"}
  canary: "http://%[3]s/healthz"
%[4]s
dependencies:
  CATALOG: {classes: {browse: "GET ^/v2/catalog/", order: "POST ^/v2/orders$"}}
endpoints:
  - {name: find}
  - {name: buy}
  - {name: status}
service: {timeout: 250ms}
load: {rates: {find: 40, buy: 30, status: 40}}
phases: {warmup: 500ms, baseline: 1s, fault: 1500ms, recovery: 500ms}
audit:
  faults: [slow]
  critical: [buy, status]
  calibration: {requests: 10, rate: 40}
`, dep, proxy, addr, routesRules)
	code, out, dir := runAudit(t, "catalog-audit", text)
	if code != ExitOK {
		t.Fatalf("audit --check: exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	m := readSummary(t, dir).Audits[0]
	for ep, want := range map[string]string{"find": "browse", "buy": "order"} {
		for _, cls := range []string{"browse", "order"} {
			n, ok := m.CallGraph.ClassCalls(ep, "CATALOG", cls)
			if calls := n >= 0.5; !ok || calls != (cls == want) {
				t.Errorf("/%s: %v requests of route %s per request (measured %v), want %v", ep, n, cls, ok, cls == want)
			}
		}
	}
	if len(m.Findings) > 0 {
		t.Errorf("findings %+v, want none", m.Findings)
	}
	var cols []string
	for j, col := range m.Columns {
		cols = append(cols, col.Target())
		for i, ep := range m.Endpoints {
			c := m.Cells[i][j]
			want := verdict.CellIsolated
			if c.Calls {
				want = verdict.CellExpected
			}
			if c.Class != want {
				t.Errorf("/%s × %s slow: %s (calls %v), want %s", ep, col.Target(), c.Class, c.Calls, want)
			}
		}
	}
	if got := strings.Join(cols, " "); got != "CATALOG/browse CATALOG/order" {
		t.Errorf("columns %s, want one per route", got)
	}
}
