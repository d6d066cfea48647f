package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// fwdEnv is a proxy in front of an upstream handler of the test's own.
type fwdEnv struct {
	p   *Proxy
	srv *Server
	url string // the proxy's data plane
	hc  *http.Client
}

func newFwdEnv(t *testing.T, upstream http.Handler, upstreamPath string) *fwdEnv {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + upstreamPath)
	p, err := New(Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &fwdEnv{p: p, srv: srv, url: "http://" + srv.Addr(), hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// TestForwardHeaders: hop-by-hop headers (the standard ones and those named
// by Connection) are dropped both ways, as are client-sent forwarding
// headers; end-to-end headers pass unchanged, repeated ones included; the
// upstream sees its own host and the client's X-Request-Id.
func TestForwardHeaders(t *testing.T) {
	got := make(chan *http.Request, 1)
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		h := w.Header()
		h.Set("Connection", "X-Resp-Hop")
		h.Set("X-Resp-Hop", "drop me")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Authenticate", "Basic")
		h["X-Resp-End"] = []string{"one", "two"}
		h.Set("Content-Type", "application/x-test")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "body")
	}), "")
	req, _ := http.NewRequest(http.MethodGet, e.url+"/h", nil)
	req.Header.Set("Connection", "X-Req-Hop")
	req.Header.Set("X-Req-Hop", "drop me")
	req.Header.Set("Keep-Alive", "timeout=5")
	req.Header.Set("Proxy-Authorization", "Basic eA==")
	req.Header.Set("Proxy-Connection", "keep-alive")
	req.Header.Set("Te", "trailers, deflate")
	req.Header.Set("X-Forwarded-For", "192.0.2.1")
	req.Header.Set("Forwarded", "for=192.0.2.1")
	req.Header["X-End"] = []string{"a", "b"}
	req.Header.Set("X-Request-Id", "rid-42")
	req.Header.Set("User-Agent", "tester/1")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	in := <-got

	for _, k := range []string{"X-Req-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "X-Forwarded-For", "Forwarded"} {
		if v, ok := in.Header[k]; ok {
			t.Errorf("upstream got hop-by-hop or forwarding header %s: %q", k, v)
		}
	}
	if c := in.Header.Get("Connection"); strings.Contains(c, "X-Req-Hop") {
		t.Errorf("upstream got Connection %q", c)
	}
	if v := in.Header["X-End"]; len(v) != 2 || v[0] != "a" || v[1] != "b" {
		t.Errorf("upstream X-End = %q, want [a b]", v)
	}
	if in.Header.Get("X-Request-Id") != "rid-42" || in.Header.Get("User-Agent") != "tester/1" {
		t.Errorf("upstream X-Request-Id %q, User-Agent %q; want rid-42, tester/1", in.Header.Get("X-Request-Id"), in.Header.Get("User-Agent"))
	}
	if te := in.Header.Get("Te"); te != "trailers" {
		t.Errorf("upstream Te = %q, want trailers", te)
	}
	if upHost := strings.TrimPrefix(e.p.target.String(), "http://"); in.Host != upHost {
		t.Errorf("upstream Host = %q, want its own %q", in.Host, upHost)
	}

	if resp.StatusCode != http.StatusAccepted || string(body) != "body" {
		t.Errorf("answer %d %q, want 202 body", resp.StatusCode, body)
	}
	for _, k := range []string{"X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("client got hop-by-hop header %s: %q", k, v)
		}
	}
	if v := resp.Header["X-Resp-End"]; len(v) != 2 || v[0] != "one" || v[1] != "two" {
		t.Errorf("client X-Resp-End = %q, want [one two]", v)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-test" {
		t.Errorf("client Content-Type = %q", ct)
	}
}

// TestForwardNoUserAgent: a request without User-Agent reaches the
// upstream without one (not with Go's).
func TestForwardNoUserAgent(t *testing.T) {
	got := make(chan http.Header, 1)
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header }), "")
	req, _ := http.NewRequest(http.MethodGet, e.url, nil)
	req.Header.Set("User-Agent", "") // the test client sends none
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ua, ok := (<-got)["User-Agent"]; ok && ua[0] != "" {
		t.Errorf("upstream User-Agent = %q, want none", ua)
	}
}

// TestForwardURL: the upstream URL's path and query are joined with the
// request's, and unparsable query parameters are removed, as
// ReverseProxy's SetURL did.
func TestForwardURL(t *testing.T) {
	got := make(chan string, 1)
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.URL.RequestURI() }), "/base/?k=v")
	for path, want := range map[string]string{
		"/a/b?x=1":     "/base/a/b?k=v&x=1",
		"/":            "/base/?k=v",
		"/c%2Fd?y=2":   "/base/c%2Fd?k=v&y=2",
		"/e?x=1;y=2&z": "/base/e?k=v&z=",
	} {
		resp, err := e.hc.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if g := <-got; g != want {
			t.Errorf("GET %s reached the upstream as %s, want %s", path, g, want)
		}
	}
}

// TestForwardBodies: request and response bodies of every size pass
// unchanged, with and without a length.
func TestForwardBodies(t *testing.T) {
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		sum := sha256.Sum256(b)
		w.Header().Set("X-Sha", fmt.Sprintf("%x", sum))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		}
		_, _ = w.Write(b)
	}), "")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 64, 32 << 10, 32<<10 + 1, 3<<20 + 17} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		for _, chunked := range []bool{false, true} {
			u := e.url + "/echo"
			var rd io.Reader = bytes.NewReader(body)
			if chunked {
				u += "?chunked=1"
				rd = io.MultiReader(rd) // no length known: sent chunked
			}
			resp, err := e.hc.Post(u, "application/octet-stream", rd)
			if err != nil {
				t.Fatalf("size %d chunked %v: %v", size, chunked, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			sum := sha256.Sum256(body)
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, body) || resp.Header.Get("X-Sha") != fmt.Sprintf("%x", sum) {
				t.Errorf("size %d chunked %v: %d, %d bytes back (err %v), upstream saw sha %s; want the same body both ways",
					size, chunked, resp.StatusCode, len(got), err, resp.Header.Get("X-Sha"))
			}
			if !chunked && resp.ContentLength != int64(size) {
				t.Errorf("size %d: Content-Length %d, want %d", size, resp.ContentLength, size)
			}
		}
	}
}

// TestForwardStreamsAndTrailers: a response of unknown length reaches the
// client piece by piece as the upstream writes it, and its trailers
// follow.
func TestForwardStreamsAndTrailers(t *testing.T) {
	clientGotFirst := make(chan struct{})
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-clientGotFirst:
		case <-time.After(5 * time.Second):
			_, _ = io.WriteString(w, "TIMEOUT: the first piece was held back\n")
			return
		}
		_, _ = io.WriteString(w, "second\n")
		w.Header().Set("X-Sum", "2 lines")
	}), "")
	resp, err := e.hc.Get(e.url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first piece = %q, %v", line, err)
	}
	close(clientGotFirst)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second\n" {
		t.Errorf("rest = %q, %v; want second", rest, err)
	}
	if got := resp.Trailer.Get("X-Sum"); got != "2 lines" {
		t.Errorf("trailer X-Sum = %q, want %q", got, "2 lines")
	}
}

// TestForwardCutUpstreamBody: if the upstream's body breaks off, the
// client's connection is cut too, so a truncated body is never taken for a
// whole one.
func TestForwardCutUpstreamBody(t *testing.T) {
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		_, _ = w.Write(make([]byte, 1000))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}), "")
	resp, err := e.hc.Get(e.url + "/cut")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Errorf("reading a cut body: %v, want unexpected EOF", err)
	}
}

// TestForwardClientGoneCancelsUpstream: a client that gives up cancels the
// upstream call; it counts as cancelled, not as an upstream error.
func TestForwardClientGoneCancelsUpstream(t *testing.T) {
	upCancelled := make(chan struct{}, 1)
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			upCancelled <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	}), "")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/slow", nil)
	if _, err := e.hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: %v, want the client's deadline", err)
	}
	select {
	case <-upCancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not cancelled when the client went away")
	}
	testkit.WaitFor(t, 10*time.Second, "the cancellation to be counted", func() bool { return val(e.p.m.cancelled) == 1 })
	if n := val(e.p.m.upstreamErrors); n != 0 {
		t.Errorf("faultproxy_upstream_errors_total = %v, want 0", n)
	}
}

// TestForwardUpgrade: a protocol upgrade (101 Switching Protocols) still
// works: both sides talk over the switched connection.
func TestForwardUpgrade(t *testing.T) {
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString("echo: " + line)
		_ = brw.Flush()
	}), "")
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer: %v, %v; want 101", resp, err)
	}
	_, _ = io.WriteString(conn, "hello\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo: hello\n" {
		t.Errorf("over the upgraded connection: %q, %v; want echo: hello", line, err)
	}
}

// TestForwardClientGoneBurst: many slow calls at once, on their own
// connections, in two waves (the second after the watch loop has had time
// to end): every call whose client gives up is cut upstream, and every
// other one is answered.
func TestForwardClientGoneBurst(t *testing.T) {
	// The upstream counts the calls of clients that give up (they say so in
	// a header) as they arrive and as they are cut. On a loaded machine a
	// client's 40 ms can run out before its request reaches the upstream;
	// such a call is never made, so it is not owed a cut.
	var arrived, cut, cutOthers atomic.Int64
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		givesUp := r.Header.Get("X-Gives-Up") != ""
		if givesUp {
			arrived.Add(1)
		}
		select {
		case <-r.Context().Done():
			if givesUp {
				cut.Add(1)
			} else {
				cutOthers.Add(1)
			}
		case <-time.After(150 * time.Millisecond):
			_, _ = io.WriteString(w, "done")
		}
	}), "")
	const n = 40 // per wave; half of them give up
	for wave := range 2 {
		if wave > 0 {
			time.Sleep(300 * time.Millisecond) // > 20 idle ticks: the loop ends
		}
		errs := make(chan error, n)
		for i := range n {
			go func() {
				tr := &http.Transport{} // a connection of its own
				defer tr.CloseIdleConnections()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if i%2 == 0 {
					ctx, cancel = context.WithTimeout(context.Background(), 40*time.Millisecond)
				}
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/slow", nil)
				if i%2 == 0 {
					req.Header.Set("X-Gives-Up", "1")
				}
				res, err := (&http.Client{Transport: tr}).Do(req)
				switch {
				case i%2 == 0 && !errors.Is(err, context.DeadlineExceeded):
					err = fmt.Errorf("client %d (gives up): %v, want its deadline", i, err)
				case i%2 == 0:
					err = nil
				case err == nil:
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if string(b) != "done" {
						err = fmt.Errorf("client %d: answer %q, want done", i, b)
					}
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("wave %d: every upstream call of a client that gave up cut", wave), func() bool {
			return arrived.Load() > 0 && cut.Load() == arrived.Load()
		})
		t.Logf("wave %d: %d calls of clients that gave up reached the upstream, all cut", wave, arrived.Load())
	}
	if c := cutOthers.Load(); c != 0 {
		t.Errorf("%d calls of clients that waited were cut", c)
	}
}
