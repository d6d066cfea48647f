package service

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// testClient returns a client with its own transport, closed at cleanup.
func testClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxConnsPerHost: 256, MaxIdleConnsPerHost: 256}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func startDep(t *testing.T, cfg DepConfig) string {
	t.Helper()
	d, err := NewDep(cfg)
	if err != nil {
		t.Fatalf("NewDep(%+v): %v", cfg, err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func startService(t *testing.T, cfg Config) (*Service, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, srv.URL
}

type reply struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

func get(t *testing.T, c *http.Client, url string, hdr map[string]string) reply {
	t.Helper()
	return send(t, c, http.MethodGet, url, hdr)
}

// send makes a request without a body and returns its reply.
func send(t *testing.T, c *http.Client, method, url string, hdr map[string]string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b), time.Since(start)}
}

func TestServiceResponses(t *testing.T) {
	const timeout = 300 * time.Millisecond
	okDep := startDep(t, DepConfig{Name: "ok", Size: 5})
	slowDep := startDep(t, DepConfig{Name: "slow", Latency: 10 * timeout})
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name, depA string
		status     int
		header     [2]string // header name, value
		body       string    // substring
	}{
		{"ok", okDep, 200, [2]string{"Content-Type", "text/plain; charset=utf-8"}, "xxxxx"},
		{"timeout", slowDep, 504, [2]string{rundata.HeaderDependencyError, "timeout"}, `"reason":"timeout"`},
		{"dependency 503", failing.URL, 502, [2]string{rundata.HeaderDependencyError, "error"}, `"reason":"error"`},
		{"refused", refused, 502, [2]string{rundata.HeaderDependencyError, "error"}, `"reason":"error"`},
	}
	c := testClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := startService(t, Config{
				Layout:  LayoutConfig{Mode: ModeBulkhead, PoolSize: 2},
				Timeout: timeout, Endpoints: TwoEndpoints(tt.depA, okDep),
			})
			r := get(t, c, url+"/a", nil)
			if r.status != tt.status || r.header.Get(tt.header[0]) != tt.header[1] || !strings.Contains(r.body, tt.body) {
				t.Errorf("dep %s: got %d %v %q; want %d %s=%s body containing %q",
					tt.name, r.status, r.header, r.body, tt.status, tt.header[0], tt.header[1], tt.body)
			}
		})
	}
}

func TestServiceRequestID(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(rundata.HeaderRequestID))
		mu.Unlock()
	}))
	defer dep.Close()
	_, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 1}, Timeout: time.Second, Endpoints: TwoEndpoints(dep.URL, dep.URL)})
	c := testClient(t)
	given := get(t, c, url+"/a", map[string]string{rundata.HeaderRequestID: "req-42"})
	generated := get(t, c, url+"/b", nil)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "req-42" || seen[1] == "" || seen[1] != generated.header.Get(rundata.HeaderRequestID) {
		t.Fatalf("dependency saw ids %q; responses carried %q and %q", seen,
			given.header.Get(rundata.HeaderRequestID), generated.header.Get(rundata.HeaderRequestID))
	}
}

func TestServiceRejectionAndMetrics(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer dep.Close()
	svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 2}, Timeout: 10 * time.Second, Endpoints: TwoEndpoints(dep.URL, dep.URL)})
	c := testClient(t)
	done := make(chan reply, 1)
	go func() { done <- get(t, c, url+"/a", nil) }()
	<-entered // /a holds pool a's only permit
	r := get(t, c, url+"/a", nil)
	var body errorBody
	_ = json.Unmarshal([]byte(r.body), &body)
	if r.status != 503 || r.header.Get(rundata.HeaderBulkheadReject) != "full" || body.Pool != "a" || body.Reason != "full" {
		t.Errorf("second /a: got %d %v %q, want 503 full from pool a", r.status, r.header, r.body)
	}
	close(release)
	if first := <-done; first.status != 200 {
		t.Errorf("first /a: got %d, want 200", first.status)
	}
	if s := svc.Layout().Pool("a").Snapshot(); s.Rejected.Full != 1 || s.Acquired != 1 || s.InUse != 0 {
		t.Errorf("pool a snapshot %+v", s)
	}
	m := get(t, c, url+"/metrics", nil).body
	for _, want := range []string{
		`bulkhead_pool_limit{pool="a"} 1`, `bulkhead_pool_rejected_total{pool="a",reason="full"} 1`,
		`bulkhead_pool_acquired_total{pool="a"} 1`, `bulkhead_pool_wait_seconds_bucket{pool="b",le="+Inf"} 0`,
		`bulkhead_pool_queue_limit{pool="b"} 0`, `bulkhead_pool_in_use{pool="a"} 0`, `bulkhead_pool_waiting{pool="a"} 0`,
		`bulkheadlab_dependency_requests_total{dependency="a",outcome="ok"} 1`,
		`bulkheadlab_dependency_duration_seconds_count{dependency="a"} 1`,
		`bulkheadlab_http_inflight_requests{endpoint="b"} 0`, "go_goroutines", "process_",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if h := get(t, c, url+"/healthz", nil); h.status != 200 || h.body != "ok" {
		t.Errorf("/healthz = %d %q", h.status, h.body)
	}
}

func TestServeShutsDownOnCancel(t *testing.T) {
	d, _ := NewDep(DepConfig{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Serve(ctx, ln) }()
	c := testClient(t)
	if r := get(t, c, "http://"+ln.Addr().String()+"/healthz", nil); r.status != 200 {
		t.Fatalf("healthz = %d", r.status)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Serve returned %v after cancel, want nil", err)
		}
	case <-time.After(2 * ShutdownTimeout):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	good := Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Queue: 4, MaxWait: time.Second},
		Timeout: time.Second, Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2")}
	tests := []struct {
		field string
		edit  func(*Config)
	}{
		{"timeout", func(c *Config) { c.Timeout = 0 }},
		{"conns", func(c *Config) { c.Conns = -1 }},
		{"endpoints.a", func(c *Config) { c.Endpoints = TwoEndpoints("127.0.0.1:80", "http://x") }},
		{"endpoints.b", func(c *Config) { c.Endpoints = TwoEndpoints("http://x", "http://") }},
		{"endpoints.b", func(c *Config) { c.Endpoints = TwoEndpoints("http://x", "ftp://x") }},
		{"endpoints", func(c *Config) { c.Endpoints = nil }},
		{"endpoints", func(c *Config) { c.Endpoints = []Endpoint{{Name: "A/b", URL: "http://x"}} }},
		{"endpoints.a", func(c *Config) {
			c.Endpoints = TwoEndpoints("http://x", "http://y")[:1]
			c.Endpoints = append(c.Endpoints, c.Endpoints[0])
		}},
		{"endpoints", func(c *Config) {
			c.Endpoints = []Endpoint{{Name: "metrics", URL: "http://x"}, {Name: "b", URL: "http://x"}}
		}},
		{"mode", func(c *Config) { c.Layout.Mode = "pooled" }},
		{"pool_size", func(c *Config) { c.Layout.PoolSize = 1 }},
		{"pool_size", func(c *Config) { c.Layout.Mode, c.Layout.PoolSize = ModeShared, 0 }},
		{"pool_sizes", func(c *Config) { c.Layout.Mode, c.Layout.PoolSizes = ModeShared, map[string]int{"a": 1, "b": 1} }},
		{"pool_sizes", func(c *Config) { c.Layout.PoolSizes = map[string]int{"a": 1, "c": 1} }},
		{"pool_sizes.b", func(c *Config) { c.Layout.PoolSizes = map[string]int{"a": 1} }},
		{"pool_sizes.a", func(c *Config) { c.Layout.PoolSizes = map[string]int{"a": 0, "b": 1} }},
		{"queue", func(c *Config) { c.Layout.Queue = -2 }},
		{"queues.b", func(c *Config) { c.Layout.Queues = map[string]int{"a": 1, "b": -1} }},
		{"max_wait", func(c *Config) { c.Layout.MaxWait = 0 }},
		{"defects", func(c *Config) { c.Defects = []Defect{"leak"} }},
		{"defects", func(c *Config) { c.Defects = []Defect{DefectLeakOnError, DefectLeakOnError} }},
		{"policies.a.bulkhead", func(c *Config) {
			c.Defects = []Defect{DefectLeakOnTimeout}
			c.Policies = map[string]PolicyConfig{"a": {Bulkhead: BulkheadFailsafe}}
		}},
		{"", func(c *Config) { c.Defects = AllDefects }},
		{"", func(c *Config) {}},
		{"", func(c *Config) { c.Layout.Queue, c.Layout.MaxWait = 0, 0 }},
	}
	for _, tt := range tests {
		cfg := good
		tt.edit(&cfg)
		s, err := New(cfg)
		var ce *ConfigError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("New(%+v) = %v, want nil", cfg, err)
		case tt.field != "" && (s != nil || !asConfigError(err, &ce) || ce.Field != tt.field):
			t.Errorf("New(%+v) = %v, want a ConfigError on %q", cfg, err, tt.field)
		}
	}
}

func asConfigError(err error, ce **ConfigError) bool {
	e, ok := err.(*ConfigError)
	*ce = e
	return ok
}

// TestServerClosesIdleConnections: a keep-alive connection left idle is
// closed by the server (no connection stays open for ever), while the
// service still answers on a new one.
func TestServerClosesIdleConnections(t *testing.T) {
	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 200 * time.Millisecond
	dep := startDep(t, DepConfig{Name: "A"})
	svc, err := New(Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 2}, Timeout: time.Second,
		Endpoints: TwoEndpoints(dep, dep)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := br.ReadByte(); err == nil || time.Since(start) > 4*time.Second {
		t.Errorf("idle keep-alive connection: read %v after %s; want it closed by the server within ~%s", err, time.Since(start), idleTimeout)
	}
}
