package service

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	dto "github.com/prometheus/client_model/go"
)

// callPath is one way an endpoint's dependency call can end, and the
// dependency (and service settings) that make it end so.
type callPath struct {
	name    string
	outcome string // dependency.call's outcome
	status  int    // the endpoint's answer; 0: the client went away first
	leak    Defect // the defect that keeps the permit on this path; "" for none
	timeout time.Duration
	maxBody int64
	// dep starts the dependency; entered, if not nil, gets a value when a
	// call has reached it (the client then goes away).
	dep func(t *testing.T) (url string, entered <-chan struct{})
}

// held answers nothing until the caller goes away (bounded), after telling
// entered, if set, that a call has arrived.
func held(t *testing.T, entered chan<- struct{}) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if entered != nil {
			entered <- struct{}{}
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func handlerDep(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func callPaths() []callPath {
	const long = 10 * time.Second
	url := func(f func(t *testing.T) string) func(t *testing.T) (string, <-chan struct{}) {
		return func(t *testing.T) (string, <-chan struct{}) { return f(t), nil }
	}
	return []callPath{
		{name: "ok", outcome: outcomeOK, status: 200, timeout: long,
			dep: url(func(t *testing.T) string { return startDep(t, DepConfig{Name: "A", Size: 8}) })},
		{name: "error status", outcome: outcomeError, status: 502, leak: DefectLeakOnError, timeout: long,
			dep: url(func(t *testing.T) string {
				return handlerDep(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 500) })
			})},
		{name: "refused", outcome: outcomeError, status: 502, leak: DefectLeakOnError, timeout: long,
			dep: url(func(t *testing.T) string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				ln.Close()
				return "http://" + ln.Addr().String()
			})},
		{name: "reset", outcome: outcomeError, status: 502, leak: DefectLeakOnError, timeout: long,
			dep: url(func(t *testing.T) string {
				return handlerDep(t, func(w http.ResponseWriter, r *http.Request) {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						return
					}
					if tc, ok := conn.(*net.TCPConn); ok {
						_ = tc.SetLinger(0) // a reset, not an orderly close
					}
					conn.Close()
				})
			})},
		{name: "oversized body", outcome: outcomeError, status: 502, leak: DefectLeakOnError, timeout: long, maxBody: 16,
			dep: url(func(t *testing.T) string { return startDep(t, DepConfig{Name: "A", Size: 64}) })},
		{name: "bad JSON body", outcome: outcomeError, status: 502, leak: DefectLeakOnError, timeout: long,
			dep: url(func(t *testing.T) string {
				return handlerDep(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"not": json`)
				})
			})},
		{name: "timeout", outcome: outcomeTimeout, status: 504, leak: DefectLeakOnTimeout, timeout: 50 * time.Millisecond,
			dep: url(func(t *testing.T) string { return held(t, nil) })},
		{name: "client gone", outcome: outcomeCancelled, status: 0, leak: DefectLeakOnCancel, timeout: long,
			dep: func(t *testing.T) (string, <-chan struct{}) {
				entered := make(chan struct{}, 16)
				return held(t, entered), entered
			}},
	}
}

// callOnce calls url; on a path whose client goes away, it cancels the
// request once the call has reached the dependency. It returns the status,
// or 0 when the client went away.
func callOnce(t *testing.T, c *http.Client, url string, entered <-chan struct{}) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	done := make(chan int, 1)
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			done <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case status := <-done:
		return status
	case <-entered: // nil unless the client is to go away
		cancel()
		return <-done
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Errorf("GET %s: no answer in 20 s", url)
		return -1
	}
}

// metricValue reads a gauge or counter of the service's own metrics.
func metricValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// waitIdle waits until no request of endpoint is being served: its
// handlers have returned, so their permits are released or leaked for
// good.
func waitIdle(t *testing.T, s *Service, endpoint string) {
	t.Helper()
	g := s.metrics.inflight.WithLabelValues(endpoint)
	for deadline := time.Now().Add(20 * time.Second); metricValue(t, g) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("endpoint %s: %v requests still in progress after 20 s", endpoint, metricValue(t, g))
		}
	}
}

// TestDefectLeaks: after K calls down a path, a leak defect of that path
// leaves K permits in use; every other path, and every path without a
// defect, leaves none. The plain handler and a policy stack's bulkhead
// stage alike.
func TestDefectLeaks(t *testing.T) {
	const k, size = 3, 4
	defects := append([]Defect{""}, AllDefects...)
	for _, stacked := range []bool{false, true} {
		for _, path := range callPaths() {
			for _, d := range defects {
				t.Run(fmt.Sprintf("stack=%v/%s/defect=%s", stacked, path.name, d), func(t *testing.T) {
					checkLeak(t, path, d, stacked, k, size)
				})
			}
		}
	}
}

// TestDefectLeakExhausts: once a leak has taken every permit, the pool
// rejects everything, the healthy endpoint sharing it too: the incident
// looks like the dependency being down.
func TestDefectLeakExhausts(t *testing.T) {
	const size = 4
	for _, path := range callPaths() {
		if path.leak == "" {
			continue
		}
		t.Run(path.name, func(t *testing.T) {
			url, c := checkLeak(t, path, path.leak, false, size+2, size)
			if r := get(t, c, url+"/b", nil); r.status != http.StatusServiceUnavailable || r.header.Get(rundata.HeaderBulkheadReject) != "full" {
				t.Errorf("%s leaked every permit: /b answered %d %v, want 503 full", path.name, r.status, r.header)
			}
		})
	}
}

// checkLeak makes k calls down path against a shared pool of size with
// defect d (none if ""), and checks the answers (503 once a leak has
// exhausted the pool), the outcomes (the path is the one named) and the
// permits left in use: min(k, size) if d leaks on path, else 0. It returns
// the service's URL and the client.
func checkLeak(t *testing.T, path callPath, d Defect, stacked bool, k, size int) (string, *http.Client) {
	t.Helper()
	depURL, entered := path.dep(t)
	cfg := Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: size}, Timeout: path.timeout,
		MaxBodyBytes: path.maxBody, Endpoints: TwoEndpoints(depURL, startDep(t, DepConfig{Name: "B"}))}
	if d != "" {
		cfg.Defects = []Defect{d}
	}
	if stacked {
		cfg.Policies = map[string]PolicyConfig{EndpointA: {}}
	}
	leaks := d != "" && d == path.leak
	reached, want := k, 0 // calls that reach the dependency, permits left
	if leaks {
		reached = min(k, size)
		want = reached
	}
	svc, url := startService(t, cfg)
	c := testClient(t)
	for i := range k {
		wantStatus := path.status
		if i >= reached {
			wantStatus = http.StatusServiceUnavailable
		}
		if got := callOnce(t, c, url+"/a", entered); got != wantStatus {
			t.Errorf("%s, defect %q: call %d answered %d, want %d", path.name, d, i+1, got, wantStatus)
		}
	}
	waitIdle(t, svc, EndpointA)
	if n := metricValue(t, svc.metrics.requests.WithLabelValues(EndpointA, path.outcome)); int(n) != reached {
		t.Errorf("%s: %v calls of outcome %s, want %d (the path is not the one named)", path.name, n, path.outcome, reached)
	}
	if got := svc.Layout().Pool(EndpointA).Snapshot().InUse; got != want {
		t.Errorf("%s, defect %q, stack %v: %d permits in use after %d calls, want %d", path.name, d, stacked, got, k, want)
	}
	return url, c
}
