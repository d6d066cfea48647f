package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func TestPassThrough(t *testing.T) {
	e := newEnv(t)
	status, body, h, err := e.get(context.Background(), "/a/b?x=1", "req-1")
	if err != nil || status != 200 || body != "upstream /a/b?x=1" || h.Get("X-Upstream-Request-Id") != "req-1" {
		t.Fatalf("GET /a/b?x=1 = %d %q id %q %v, want 200 from upstream with the request id",
			status, body, h.Get("X-Upstream-Request-Id"), err)
	}
	if got := val(e.p.m.requests); got != 1 {
		t.Errorf("faultproxy_requests_total = %v, want 1", got)
	}
}

func TestLatencyFault(t *testing.T) {
	e := newEnv(t)
	const delay = 80 * time.Millisecond
	e.set(t, Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: delay, Jitter: 5 * time.Millisecond}})
	start := time.Now()
	status, body, _, err := e.get(context.Background(), "/", "")
	elapsed := time.Since(start)
	if err != nil || status != 200 || !strings.HasPrefix(body, "upstream") {
		t.Fatalf("delayed GET = %d %q %v, want 200 from upstream", status, body, err)
	}
	if elapsed < delay-5*time.Millisecond {
		t.Errorf("delayed GET took %v, want ≥ %v", elapsed, delay-5*time.Millisecond)
	}
	if n := int(val(e.p.m.delay)); n != 1 || e.upCalls.Load() != 1 {
		t.Errorf("delay histogram series %d, upstream calls %d; want 1, 1", n, e.upCalls.Load())
	}
	if got := val(e.p.m.injected[TypeLatency]); got != 1 {
		t.Errorf("faults_injected_total{type=latency} = %v, want 1", got)
	}
}

func TestErrorFault(t *testing.T) {
	tests := []struct {
		fault      Fault
		wantStatus int
		wantBody   string
	}{
		{Fault{Type: TypeError, Percent: 100}, 503, ""},
		{Fault{Type: TypeError, Percent: 100, Params: Reply{Status: 429, Body: "slow down", Headers: map[string]string{"Retry-After": "2", "Content-Type": "text/x"}}}, 429, "slow down"},
	}
	for _, tt := range tests {
		e := newEnv(t)
		e.set(t, tt.fault)
		status, body, h, err := e.get(context.Background(), "/", "")
		if err != nil || status != tt.wantStatus || body != tt.wantBody {
			t.Errorf("fault %+v: got %d %q %v, want %d %q", tt.fault, status, body, err, tt.wantStatus, tt.wantBody)
		}
		for k, v := range params[Reply](&tt.fault).Headers {
			if h.Get(k) != v {
				t.Errorf("fault %+v: header %s = %q, want %q", tt.fault, k, h.Get(k), v)
			}
		}
		if n := e.upCalls.Load(); n != 0 {
			t.Errorf("fault %+v: upstream called %d times, want 0", tt.fault, n)
		}
	}
}

func TestAbortFault(t *testing.T) {
	e := newEnv(t)
	e.set(t, Fault{Type: TypeAbort, Percent: 100})
	_, _, _, err := e.get(context.Background(), "/", "")
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset")) {
		t.Errorf("aborted GET error = %v, want EOF or reset", err)
	}
	if n := e.upCalls.Load(); n != 0 {
		t.Errorf("upstream called %d times, want 0", n)
	}
	if got := val(e.p.m.injected[TypeAbort]); got != 1 {
		t.Errorf("faults_injected_total{type=abort} = %v, want 1", got)
	}
}

func TestHangFault(t *testing.T) {
	e := newEnv(t)
	e.set(t, Fault{Type: TypeHang, Percent: 100})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, _, err := e.get(ctx, "/", "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hanging GET error = %v, want the caller's deadline", err)
	}
	testkit.WaitFor(t, 10*time.Second, "the hanging handler to end", func() bool { return e.p.Inflight() == 0 })
	if n := e.upCalls.Load(); n != 0 {
		t.Errorf("upstream called %d times, want 0", n)
	}
}

// TestCancelledDelayReleases: callers that give up during a long delay end
// the delay; the upstream is not called and no goroutine is left (goleak).
func TestCancelledDelayReleases(t *testing.T) {
	e := newEnv(t)
	e.set(t, Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 10 * time.Second}})
	const n = 50
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, _, _, err := e.get(ctx, "/", "")
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("request %d: %v, want deadline exceeded", i, err)
		}
	}
	// A request given up before the proxy read it never reaches the handler;
	// every one that did must have been cancelled during its delay.
	testkit.WaitFor(t, 10*time.Second, "delayed handlers to end", func() bool {
		return e.p.Inflight() == 0 && val(e.p.m.cancelled) == val(e.p.m.requests)
	})
	if c := e.upCalls.Load(); c != 0 {
		t.Errorf("upstream called %d times after cancelled delays, want 0", c)
	}
	if val(e.p.m.requests) == 0 {
		t.Errorf("no delayed request reached the proxy")
	}
}

func TestUpstreamError(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(dead.URL)
	dead.Close()
	e := newEnv(t, func(c *Config) { c.Upstream = u })
	status, _, h, err := e.get(context.Background(), "/", "")
	if err != nil || status != 502 || h.Get("X-Faultproxy-Error") != "upstream" {
		t.Fatalf("GET with a dead upstream = %d %v, want 502 with X-Faultproxy-Error", status, err)
	}
	if got := val(e.p.m.upstreamErrors); got != 1 {
		t.Errorf("faultproxy_upstream_errors_total = %v, want 1", got)
	}
}

func TestNewBadUpstream(t *testing.T) {
	for _, raw := range []string{"", "ftp://x", "http://", "/just/a/path"} {
		u, _ := url.Parse(raw)
		if _, err := New(Config{Upstream: u}); !errors.Is(err, ErrBadUpstream) {
			t.Errorf("New(upstream %q) = %v, want ErrBadUpstream", raw, err)
		}
	}
	if _, err := New(Config{}); !errors.Is(err, ErrBadUpstream) {
		t.Errorf("New(no upstream) = %v, want ErrBadUpstream", err)
	}
}

// roundTripFunc is an in-memory upstream.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPercentInProcess drives 10 000 requests through the handler (no
// sockets) with a 30% error fault; a second error fault at 100% answers
// the other 70% (first terminal fault wins) so that no request needs the
// upstream and the test stays fast.
func TestPercentInProcess(t *testing.T) {
	up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Header: http.Header{}, Request: r}, nil
	})
	u, _ := url.Parse("http://upstream.invalid")
	p, err := New(Config{Upstream: u, Seed: 9, Transport: up})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetFaults([]Fault{{Type: TypeError, Percent: 30}, {Type: TypeError, Percent: 100, Params: Reply{Status: 204}}}); err != nil {
		t.Fatal(err)
	}
	const n = 10000
	errs := 0
	for i := 0; i < n; i++ {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code == 503 {
			errs++
		}
	}
	if ok, bound := binomialOK(errs, n, 0.3); !ok {
		t.Errorf("%d of %d errors at 30%%, want 3000 ± %.0f", errs, n, bound)
	}
	if got := val(p.m.injected[TypeError]); got != n {
		t.Errorf("faults_injected_total{type=error} = %v, want %d", got, n)
	}
}

// TestPercentHTTP is the smaller check over real sockets.
func TestPercentHTTP(t *testing.T) {
	e := newEnv(t)
	e.set(t, Fault{Type: TypeError, Percent: 30, Params: Reply{Status: 500}})
	const n = 1000
	count := map[int]int{}
	for i := 0; i < n; i++ {
		status, _, _, err := e.get(context.Background(), "/", "")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		count[status]++
	}
	if ok, bound := binomialOK(count[500], n, 0.3); !ok || count[200]+count[500] != n {
		t.Errorf("statuses %v over %d requests at 30%%, want 300 ± %.0f errors, rest 200", count, n, bound)
	}
	if got := e.upCalls.Load(); got != int64(count[200]) {
		t.Errorf("upstream calls %d, want %d (the passed requests)", got, count[200])
	}
}

func TestLedger(t *testing.T) {
	var buf strings.Builder
	l := NewLedger(&buf, 0)
	e := newEnv(t, func(c *Config) { c.Ledger = l })
	e.set(t, Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 5 * time.Millisecond}}, Fault{Type: TypeError, Percent: 100})
	for i := 0; i < 3; i++ {
		if _, _, _, err := e.get(context.Background(), "/", fmt.Sprintf("id-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	e.srv.Shutdown(context.Background())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("ledger has %d lines, want 3:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{`"request_id":"id-0"`, `"decision":"latency+error"`, `"requested_delay_ms":5`, `"outcome":"error"`, `"status":503`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("ledger line 0 = %s, want %s (check %d)", lines[0], want, i)
		}
	}
}

// blockingWriter blocks every Write until released.
type blockingWriter struct{ release chan struct{} }

func (b blockingWriter) Write(p []byte) (int, error) { <-b.release; return len(p), nil }

func TestLedgerDropsInsteadOfBlocking(t *testing.T) {
	w := blockingWriter{release: make(chan struct{})}
	l := NewLedger(w, 4)
	ok := 0
	for i := 0; i < 10000; i++ { // would deadlock if Record blocked
		if l.Record(LedgerEntry{Seq: uint64(i)}) {
			ok++
		}
	}
	if l.Dropped() == 0 || ok+int(l.Dropped()) != 10000 {
		t.Errorf("recorded %d, dropped %d of 10000; want drops and no loss of count", ok, l.Dropped())
	}
	close(w.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.Record(LedgerEntry{}) {
		t.Errorf("Record after Close succeeded")
	}
}
