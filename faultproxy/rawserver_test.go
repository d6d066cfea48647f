package faultproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawDial opens a plain TCP connection to the proxy's data plane.
func rawDial(t *testing.T, e *fwdEnv) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn, bufio.NewReader(conn)
}

func echoPath() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Trailer-Seen", r.Trailer.Get("X-T"))
		_, _ = io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+string(b))
	})
}

func TestRawDataPlaneIsUsed(t *testing.T) {
	e := newFwdEnv(t, echoPath(), "")
	if _, ok := e.srv.data.(*rawServer); !ok && rawSupported {
		t.Fatalf("data plane served by %T, want the raw server for an http upstream", e.srv.data)
	}
}

// TestRawPipelined: requests sent back to back on one connection are
// answered in order.
func TestRawPipelined(t *testing.T) {
	e := newFwdEnv(t, echoPath(), "")
	conn, br := rawDial(t, e)
	_, _ = io.WriteString(conn, "GET /one HTTP/1.1\r\nHost: x\r\n\r\nPOST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /three HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"GET /one ", "POST /two abc", "GET /three "} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to %q: %v", want, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("answer %q, want %q", b, want)
		}
	}
}

// TestRawHTTP10: an HTTP/1.0 client gets its answer without chunking and
// the connection closes after it.
func TestRawHTTP10(t *testing.T) {
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "part1 ")
		w.(http.Flusher).Flush() // chunked to the proxy
		_, _ = io.WriteString(w, "part2")
	}), "")
	conn, br := rawDial(t, e)
	_, _ = io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n")
	all, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	s := string(all)
	if !strings.HasPrefix(s, "HTTP/1.1 200 ") || !strings.Contains(s, "Connection: close\r\n") ||
		strings.Contains(strings.ToLower(s), "transfer-encoding") || !strings.HasSuffix(s, "\r\n\r\npart1 part2") {
		t.Errorf("HTTP/1.0 exchange:\n%s\nwant 200, Connection: close, the body unchunked, then EOF", s)
	}
}

// TestRawBadRequests: requests that cannot be read are answered with the
// status net/http gives them, and the connection closes; each is counted
// once in faultproxy_client_errors_total under its reason.
func TestRawBadRequests(t *testing.T) {
	e := newFwdEnv(t, echoPath(), "")
	for _, tc := range []struct {
		req    string
		want   int
		reason string
	}{
		{"GET / HTTP/1.1\r\n\r\n", 400, reasonMalformed}, // no Host
		{"GET / HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n", 400, reasonMalformed},
		{"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, reasonMalformed},
		{"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, reasonMalformed},
		{"GET http://x/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, reasonMalformed}, // a target that cannot be forwarded
		{"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, reasonUnsupported},
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, reasonUnsupported},
		{"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431, reasonHeadTooLarge},
	} {
		before := clientErrors(e.p)
		conn, br := rawDial(t, e)
		go func() { _, _ = io.WriteString(conn, tc.req) }()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%.60q: %v", tc.req, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || !resp.Close {
			t.Errorf("%.60q: %d (close %v), want %d and close", tc.req, resp.StatusCode, resp.Close, tc.want)
		}
		if msg := refusedOnce(e.p, before, tc.reason); msg != "" {
			t.Errorf("%.60q: %s", tc.req, msg)
		}
	}
	if n := val(e.p.m.upstreamErrors); n != 0 {
		t.Errorf("faultproxy_upstream_errors_total = %v after bad requests, want 0", n)
	}
}

// TestRawLongHeader: a header line longer than the read buffer passes.
func TestRawLongHeader(t *testing.T) {
	got := make(chan string, 1)
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("X-Long") }), "")
	long := strings.Repeat("v", 20<<10)
	req, _ := http.NewRequest(http.MethodGet, e.url, nil)
	req.Header.Set("X-Long", long)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if g := <-got; g != long {
		t.Errorf("upstream got a %d-byte X-Long, want %d bytes", len(g), len(long))
	}
}

// TestRawChunkedRequestTrailers: a chunked request body and its trailers
// reach the upstream.
func TestRawChunkedRequestTrailers(t *testing.T) {
	e := newFwdEnv(t, echoPath(), "")
	conn, br := rawDial(t, e)
	_, _ = io.WriteString(conn, "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n"+
		"3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-T: tv\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "POST /c abcdefg" || resp.Header.Get("X-Trailer-Seen") != "tv" {
		t.Errorf("answer %q, trailer seen %q; want the whole body and trailer tv", b, resp.Header.Get("X-Trailer-Seen"))
	}
}

// TestRawExpectContinue: a client that waits for 100 Continue gets it,
// then its answer.
func TestRawExpectContinue(t *testing.T) {
	e := newFwdEnv(t, echoPath(), "")
	conn, br := rawDial(t, e)
	_, _ = io.WriteString(conn, "PUT /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("first line %q, %v; want 100 Continue", line, err)
	}
	_, _ = br.ReadString('\n') // the empty line
	_, _ = io.WriteString(conn, "hi")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "PUT /e hi" {
		t.Errorf("answer %q, want %q", b, "PUT /e hi")
	}
}

// TestRawReusesConnections: keep-alive both ways: one client connection and
// one upstream connection carry many requests.
func TestRawReusesConnections(t *testing.T) {
	var upConns atomic.Int64
	up := httptest.NewUnstartedServer(echoPath())
	up.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			upConns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "")
	e.p.target.Host = strings.TrimPrefix(up.URL, "http://") // point the proxy at the counting upstream
	e.p.h1 = newH1Client(e.p.target)
	conn, br := rawDial(t, e)
	for i := 0; i < 50; i++ {
		_, _ = io.WriteString(conn, "GET /k HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := upConns.Load(); n != 1 {
		t.Errorf("50 sequential requests opened %d upstream connections, want 1", n)
	}
	e.p.closeIdleConnections()
}

// TestRawStaleUpstreamConnection: an upstream that closes idle connections
// silently (no Connection: close) costs no request: one without a body is
// retried, one with a body gets a connection that is still open.
func TestRawStaleUpstreamConnection(t *testing.T) {
	up := httptest.NewUnstartedServer(echoPath())
	up.Config.IdleTimeout = 5 * time.Millisecond
	up.Start()
	defer up.Close()
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "")
	e.p.target.Host = strings.TrimPrefix(up.URL, "http://")
	e.p.h1 = newH1Client(e.p.target)
	defer e.p.closeIdleConnections()
	for i := 0; i < 6; i++ {
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = e.hc.Get(e.url + "/g")
		} else {
			resp, err = e.hc.Post(e.url+"/p", "text/plain", strings.NewReader("body"))
		}
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d after the upstream closed its idle connection: %d %s", i, resp.StatusCode, b)
		}
		time.Sleep(30 * time.Millisecond) // the upstream closes the idle connection meanwhile
	}
	if n := val(e.p.m.upstreamErrors); n != 0 {
		t.Errorf("faultproxy_upstream_errors_total = %v, want 0", n)
	}
}

// TestRawShutdownLetsRequestsFinish: Shutdown waits for a forwarded request
// in progress, which gets its whole answer, and closes idle connections.
func TestRawShutdownLetsRequestsFinish(t *testing.T) {
	started := make(chan struct{})
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(200 * time.Millisecond)
		_, _ = io.WriteString(w, "finished")
	}), "")
	idle, _ := rawDial(t, e)
	res := make(chan string, 1)
	go func() {
		resp, err := e.hc.Get(e.url + "/slow")
		if err != nil {
			res <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- string(b)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if got := <-res; got != "finished" {
		t.Errorf("request in progress during Shutdown got %q, want its answer", got)
	}
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Errorf("an idle connection was still open after Shutdown")
	}
}

// TestNetHTTPDataPlane: with a Transport of the caller's, net/http serves
// the data plane and ServeHTTP forwards; faults work the same.
func TestNetHTTPDataPlane(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Transport = NewTransport() })
	if _, ok := e.srv.data.(*http.Server); !ok {
		t.Fatalf("data plane served by %T, want net/http's server", e.srv.data)
	}
	status, body, h, err := e.get(context.Background(), "/a?x=1", "id-7")
	if err != nil || status != 200 || body != "upstream /a?x=1" || h.Get("X-Upstream-Request-Id") != "id-7" {
		t.Errorf("pass-through = %d %q %v", status, body, err)
	}
	e.set(t, Fault{Type: TypeError, Percent: 100, Params: Reply{Status: 418}})
	if status, _, _, err := e.get(context.Background(), "/", ""); err != nil || status != 418 {
		t.Errorf("error fault = %d %v, want 418", status, err)
	}
}

// TestServeHTTPWithOwnClient: the Proxy as an http.Handler of the caller's
// server forwards through the proxy's own client (the path that net/http
// serving uses).
func TestServeHTTPWithOwnClient(t *testing.T) {
	up := httptest.NewServer(echoPath())
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p, err := New(Config{Upstream: u, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.h1 == nil {
		t.Fatal("no own client for an http upstream")
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer p.closeIdleConnections()
	for i := 0; i < 3; i++ {
		resp, err := srv.Client().Post(srv.URL+"/h?i=1", "text/plain", strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "POST /h?i=1 payload" {
			t.Errorf("through ServeHTTP: %d %q", resp.StatusCode, b)
		}
	}
	srv.Client().CloseIdleConnections()
}

// TestRawShutdownUnderLoad: Shutdown during a burst of keep-alive clients
// (connections turning idle and busy without a lock, see setIdle) returns
// once every connection has ended, well before its deadline. Once
// Shutdown starts, the clients send nothing more but keep their
// connections open: one that Shutdown missed while it turned idle would
// hold Shutdown up to its deadline.
func TestRawShutdownUnderLoad(t *testing.T) {
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), "")
	const clients, perClient = 64, 2000
	var served atomic.Int64
	var stopping atomic.Bool
	done := make(chan struct{})
	for range clients {
		go func() {
			defer func() { done <- struct{}{} }()
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
			if err != nil {
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(conn)
			for range perClient {
				if stopping.Load() {
					_, _ = br.Peek(1) // until the proxy closes the connection
					return
				}
				if _, err := io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					return
				}
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				served.Add(1)
			}
		}()
	}
	for served.Load() < clients*10 {
		time.Sleep(time.Millisecond)
	}
	stopping.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown under load: %v after %v (%d requests served)", err, time.Since(start), served.Load())
	}
	for range clients {
		<-done
	}
}
