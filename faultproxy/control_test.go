package faultproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func controlDo(t *testing.T, e *testEnv, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+e.srv.ControlAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.ctl.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestControlAPI(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		method, path, body string
		wantStatus         int
		wantBody           string // substring
	}{
		{"GET", "/faults", "", 200, `{"faults":[]}`},
		{"PUT", "/faults", `{"faults":[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"}]}`,
			200, `{"faults":[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"}]}`},
		{"GET", "/faults", "", 200, `"latency":"225ms"`},
		{"PUT", "/faults", `{"faults":[{"type":"abort","percent":120}]}`, 400, `{"error":"faults[0].percent: must be within 0–100, got 120"}`},
		{"PUT", "/faults", `{"faults":[{"type":"abort","percent":5,"extra":1}]}`, 400, `{"error":"faults[0]: unknown field \"extra\""}`},
		{"PUT", "/faults", `{"faults":[{"type":"abort"},{"type":"abort","percent":120}]}`, 400, `{"error":"faults[1].percent: must be within 0–100, got 120"}`},
		{"PUT", "/faults", `{"faults":[{"type":"abort"},{"type":"abort","percent":"120"}]}`, 400, `{"error":"faults[1].percent: want number, got JSON string"}`},
		{"PUT", "/faults", `{"faults":[{"type":"latency","latency":"-5ms"}]}`, 400, `faults[0].latency: must not be negative`},
		{"PUT", "/faults", `{"faults":[{"type":"error","status":1000}]}`, 400, `faults[0].status`},
		{"PUT", "/faults", `{"faults":[{"type":"nope"}]}`, 400, `faults[0].type: unknown fault type`},
		{"PUT", "/faults", `{"faults":[{"type":"abort"},{"type":"capacity","capacity":0}]}`, 400, `{"error":"faults[1].capacity: must be between 1 and 1048576, got 0"}`},
		{"PUT", "/faults", `{"faults":[{"type":"abort"},{"type":"capacity","capacity":2,"queue":-3}]}`, 400, `{"error":"faults[1].queue: must be between 0 (up to 10000) and 10000, got -3"}`},
		{"PUT", "/faults", `{"faults":[{"type":"capacity","capacity":1},{"type":"capacity","capacity":2}]}`, 400, `{"error":"faults[1].type: at most one capacity fault`},
		{"PUT", "/faults", `{"faults":[{"type":"latency","queue":3}]}`, 400, `{"error":"faults[0].queue: only valid for type capacity"}`},
		{"PUT", "/faults", `{"faults":[{"type":"abort","body":"` + strings.Repeat("x", MaxControlBody) + `"}]}`, 413, `body: larger than`},
		{"GET", "/faults", "", 200, `"latency":"225ms"`}, // rejected PUTs changed nothing
		{"PUT", "/faults", `{"faults":[{"type":"error","percent":100}]}`, 200, `"status":503`},
		{"DELETE", "/faults", "", 200, `{"faults":[]}`},
		{"POST", "/faults", "{}", 405, ""},
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/metrics", "", 200, "faultproxy_faults_injected_total{type=\"hang\"} 0"},
		{"GET", "/metrics", "", 200, "faultproxy_injected_delay_seconds_bucket"},
		{"GET", "/metrics", "", 200, "faultproxy_upstream_errors_total 0"},
		{"GET", "/metrics", "", 200, "faultproxy_capacity_in_service 0"},
		{"GET", "/metrics", "", 200, "faultproxy_capacity_queue_length 0"},
		{"GET", "/metrics", "", 200, "faultproxy_capacity_limit 0"},
		{"GET", "/metrics", "", 200, "faultproxy_capacity_queue_wait_seconds_count 0"},
		{"PUT", "/faults", `{"faults":[{"type":"capacity","percent":50,"capacity":4,"latency":"20ms"}]}`, 200,
			`{"faults":[{"type":"capacity","percent":50,"latency":"20ms","distribution":"uniform","capacity":4,"queue":10000}]}`},
		{"GET", "/metrics", "", 200, "faultproxy_capacity_limit 4"},
		{"GET", "/metrics", "", 200, "faultproxy_capacity_queue_limit 10000"},
		{"GET", "/metrics", "", 200, "go_goroutines"},
	}
	for i, tt := range tests {
		status, body := controlDo(t, e, tt.method, tt.path, tt.body)
		if status != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
			t.Errorf("step %d: %s %s %.80s = %d %.200s, want %d containing %s",
				i, tt.method, tt.path, tt.body, status, body, tt.wantStatus, tt.wantBody)
		}
	}
}

func TestClient(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	want := []Fault{
		{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 225 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: DistUniform}},
		{Type: TypeError, Percent: 50, Params: Reply{Status: 503, Body: "down", Headers: map[string]string{"X-K": "v"}}},
	}
	if err := e.ctl.Set(ctx, want); err != nil {
		t.Fatalf("Set: %v", err)
	}
	got, err := e.ctl.Get(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Get after Set = %+v, %v; want %+v", got, err, want)
	}
	if err := e.ctl.Set(ctx, []Fault{{Type: TypeAbort, Percent: 200}}); !errors.Is(err, ErrInvalidFault) ||
		!strings.Contains(err.Error(), "faults[0].percent") {
		t.Errorf("Set(percent 200) = %v, want ErrInvalidFault naming faults[0].percent", err)
	}
	if err := e.ctl.Clear(ctx); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	if got, err := e.ctl.Get(ctx); err != nil || len(got) != 0 {
		t.Errorf("Get after Clear = %+v, %v; want none", got, err)
	}
}

// TestClientServerMessage: a 400 from the server reaches the caller with
// its message.
func TestClientServerMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "faults[3].jitter: too wobbly"})
	}))
	defer srv.Close()
	c := NewClient(srv.URL+"/", srv.Client())
	err := c.Set(context.Background(), nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message != "faults[3].jitter: too wobbly" || !errors.Is(err, ErrInvalidFault) {
		t.Errorf("Set against a 400 server = %v, want APIError 400 with the server's message", err)
	}
	if _, err := c.Get(context.Background()); err == nil {
		t.Errorf("Get against a 400 server succeeded")
	}
}

// TestThousandHangs: with 1000 requests hanging, control calls answer in
// bounded time, and shutdown completes in bounded time, cutting the hangs.
func TestThousandHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 connections")
	}
	e := newEnv(t)
	e.set(t, Fault{Type: TypeHang, Percent: 100})
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, _, _, err := e.get(ctx, "/", "")
			errs <- err
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "1000 requests to hang", func() bool { return e.p.Inflight() == n })

	ctx := context.Background()
	var worst time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		if _, err := e.ctl.Get(ctx); err != nil {
			t.Fatalf("control GET under load: %v", err)
		}
		if err := e.ctl.Set(ctx, []Fault{{Type: TypeHang, Percent: 100}}); err != nil {
			t.Fatalf("control PUT under load: %v", err)
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("worst control GET+PUT with %d hanging requests: %v", n, worst)
	if worst > 2*time.Second {
		t.Errorf("control GET+PUT took up to %v with %d hanging requests, want < 2s", worst, n)
	}

	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.srv.Shutdown(sctx); err != nil {
		t.Errorf("Shutdown with %d hanging requests: %v", n, err)
	}
	t.Logf("shutdown with %d hanging requests took %v", n, time.Since(start))
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hanging request ended with %v, want a cut connection", err)
		}
	}
}

// TestControlRefusesOtherHosts: the control API answers only requests
// addressed to an IP address or localhost, from no page or such a page's
// origin: a page of a name made to resolve to the proxy (DNS rebinding)
// cannot change its faults.
func TestControlRefusesOtherHosts(t *testing.T) {
	e := newEnv(t)
	_, port, _ := net.SplitHostPort(e.srv.ControlAddr())
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:" + port, "", 200},
		{"localhost:" + port, "http://localhost:3000", 200},
		{"[::1]:" + port, "http://127.0.0.1", 200},
		{"evil.example:" + port, "", 403},
		{"127.0.0.1:" + port, "http://evil.example", 403},
		{"127.0.0.1:" + port, "null", 403},
	} {
		req, _ := http.NewRequest(http.MethodDelete, "http://"+e.srv.ControlAddr()+"/faults", nil)
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("DELETE /faults with Host %q, Origin %q: %d, want %d", tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
