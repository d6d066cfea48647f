package faultproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawUpstream is an upstream of raw sockets on a :0 listener: serve is
// called for each connection it accepts, in its own goroutine.
func rawUpstream(t *testing.T, serve func(conn net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().String()
}

// newRawEnv is a proxy (raw data plane) in front of the raw upstream at
// addr.
func newRawEnv(t *testing.T, addr string) *fwdEnv {
	t.Helper()
	e := newFwdEnv(t, http.NotFoundHandler(), "")
	e.p.target.Host = addr
	e.p.h1 = newH1Client(e.p.target)
	t.Cleanup(e.p.closeIdleConnections)
	return e
}

// okFor answers a request with "for <target>".
func okFor(w io.Writer, r *http.Request) {
	body := "for " + r.URL.RequestURI()
	_, _ = io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: "+itoa(len(body))+"\r\n\r\n"+body)
}

// TestRawIdleUpstreamBytesNotAnAnswer: bytes that the upstream sends on a
// connection while it is idle in the pool (a late body after a 204 or a
// HEAD answer, an unasked answer) are never a client's answer: every
// request gets its own, and so do the ones after it.
func TestRawIdleUpstreamBytesNotAnAnswer(t *testing.T) {
	for _, tc := range []struct{ method, path, head string }{
		{"GET", "/204", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"GET", "/204cl", "HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\n"},
		{"HEAD", "/head", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"},
		{"GET", "/200", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			late, lateSent := make(chan struct{}), make(chan struct{})
			addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if r.URL.Path != tc.path {
						okFor(conn, r)
						continue
					}
					_, _ = io.WriteString(conn, tc.head)
					<-late
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL")
					close(lateSent)
				}
			})
			e := newRawEnv(t, addr)
			conn, br := rawDial(t, e)
			_, _ = io.WriteString(conn, tc.method+" "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(br, &http.Request{Method: tc.method})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			close(late)
			<-lateSent
			for _, p := range []string{"/a", "/b", "/c"} {
				_, _ = io.WriteString(conn, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("%s after %s %s: %v", p, tc.method, tc.head, err)
				}
				b, _ := io.ReadAll(resp.Body)
				if string(b) != "for "+p {
					t.Errorf("%s after %s %q and unasked bytes: got %q, want %q", p, tc.method, tc.head, b, "for "+p)
				}
			}
		})
	}
}

// upstreamSeen is a raw upstream that records the requests it could parse
// (net/http's reader) and answers each with "for <target>"; a request
// whose body it cannot read is recorded with the error, and ends the
// connection.
type upstreamSeen struct {
	mu   sync.Mutex
	reqs []string
}

func (u *upstreamSeen) serve(conn net.Conn, br *bufio.Reader) {
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, err := io.ReadAll(r.Body)
		seen := r.Method + " " + r.URL.RequestURI() + " " + string(b)
		if err != nil {
			seen += " (failed: " + err.Error() + ")"
		}
		u.mu.Lock()
		u.reqs = append(u.reqs, seen)
		u.mu.Unlock()
		if err != nil {
			return
		}
		okFor(conn, r)
	}
}

func (u *upstreamSeen) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.reqs...)
}

// exchange sends raw on a new connection to the proxy and returns the
// first answer (nil if none came) and what came after it until EOF.
func exchange(t *testing.T, e *fwdEnv, raw string) (*http.Response, string, string) {
	t.Helper()
	conn, br := rawDial(t, e)
	go func() { _, _ = io.WriteString(conn, raw) }()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, "", ""
	}
	b, _ := io.ReadAll(resp.Body)
	rest, _ := io.ReadAll(br)
	return resp, string(b), string(rest)
}

// TestRawMalformedChunkedRequest: a chunked request body that breaks
// RFC 9112's syntax is answered 400 at once, the connection closes, and it
// counts as a malformed client error, once, and as no upstream error (the
// upstream is not at fault); before its
// syntax error, the upstream got an unfinished request it never answers.
func TestRawMalformedChunkedRequest(t *testing.T) {
	var up upstreamSeen
	e := newRawEnv(t, rawUpstream(t, up.serve))
	head := "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	long := strings.Repeat("a", 5000)
	for name, body := range map[string]string{
		"bare LF size line":        "3\nabc\r\n0\r\n\r\n",
		"CR inside size line":      "3\r;x\r\nabc\r\n0\r\n\r\n",
		"junk after size":          "3 junk\r\nabc\r\n0\r\n\r\n",
		"not hex":                  "3g\r\nabc\r\n0\r\n\r\n",
		"no digits":                ";x\r\nabc\r\n0\r\n\r\n",
		"sign":                     "+3\r\nabc\r\n0\r\n\r\n",
		"data longer than size":    "3\r\nabcdef\r\n0\r\n\r\n",
		"bare LF after data":       "3\r\nabc\n0\r\n\r\n",
		"size line over 4 KiB":     "3;" + long + "\r\nabc\r\n0\r\n\r\n",
		"trailer line over 4 KiB":  "3\r\nabc\r\n0\r\nX-T: " + long + "\r\n\r\n",
		"NUL in trailer":           "3\r\nabc\r\n0\r\nX-T: a\x00b\r\n\r\n",
		"trailer without colon":    "3\r\nabc\r\n0\r\nX-T\r\n\r\n",
		"obs-fold in trailer":      "3\r\nabc\r\n0\r\nX-T: a\r\n b\r\n\r\n",
		"bare LF ending trailers":  "3\r\nabc\r\n0\r\n\n",
		"too much non-data":        strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 20) + "0\r\n\r\n",
		"size over 2^60":           "1000000000000000\r\nabc\r\n0\r\n\r\n",
		"extension with a control": "3;a\x01\r\nabc\r\n0\r\n\r\n",
	} {
		start := time.Now()
		before := clientErrors(e.p)
		resp, _, _ := exchange(t, e, head+body)
		if resp == nil || resp.StatusCode != http.StatusBadRequest || !resp.Close {
			t.Errorf("%s: answer %v, want 400 and close", name, resp)
		} else if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: 400 after %v, want it at once", name, took)
		}
		if msg := refusedOnce(e.p, before, reasonMalformed); msg != "" {
			t.Errorf("%s: %s", name, msg)
		}
	}
	if n := val(e.p.m.upstreamErrors); n != 0 {
		t.Errorf("faultproxy_upstream_errors_total = %v after malformed client bodies, want 0", n)
	}
	for _, r := range up.seen() {
		if strings.HasSuffix(r, "abc") {
			t.Errorf("the upstream read a whole request %q from a malformed body", r)
		}
	}
	// Well-formed variants pass, extensions and whitespace dropped.
	for name, body := range map[string]string{
		"extension":           "3;a=b;c\r\nabc\r\n0\r\n\r\n",
		"whitespace":          "3 \t\r\nabc\r\n0\r\n\r\n",
		"BWS before ;":        "3 ;a\r\nabc\r\n0\r\n\r\n",
		"upper-case hex":      "A\r\nabcdefghij\r\n0\r\n\r\n",
		"leading zeros":       "003\r\nabc\r\n0000\r\n\r\n",
		"trailer":             "3\r\nabc\r\n0\r\nX-T: v\r\n\r\n",
		"last-chunk with ext": "3\r\nabc\r\n0;z\r\n\r\n",
	} {
		before := clientErrors(e.p)
		resp, b, _ := exchange(t, e, strings.Replace(head, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)+body)
		if resp == nil || resp.StatusCode != 200 || b != "for /c" {
			t.Errorf("%s: answer %v %q, want 200", name, resp, b)
		}
		if msg := refusedOnce(e.p, before, ""); msg != "" {
			t.Errorf("%s: %s", name, msg)
		}
	}
}

// TestRawTransferEncoding: a request framed by anything but one
// Transfer-Encoding line of exactly "chunked" is answered 501 (counted
// once as unsupported) and reaches no upstream (net/http's rule): with an empty second line, the body
// would otherwise be read as a second request (smuggling).
func TestRawTransferEncoding(t *testing.T) {
	var up upstreamSeen
	e := newRawEnv(t, rawUpstream(t, up.serve))
	smuggled := "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, te := range []string{
		"Transfer-Encoding: chunked\r\nTransfer-Encoding:\r\n",
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: gzip, chunked\r\n",
		"Transfer-Encoding: chunked, chunked\r\n",
		"Transfer-Encoding: identity\r\n",
		"Transfer-Encoding:\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: \r\n",
	} {
		before := clientErrors(e.p)
		resp, _, rest := exchange(t, e, "POST /te HTTP/1.1\r\nHost: x\r\nContent-Length: 24\r\n"+te+"\r\n"+smuggled)
		if resp == nil || resp.StatusCode != http.StatusNotImplemented || !resp.Close || rest != "" {
			t.Errorf("%q: answer %v, then %q; want 501, close, nothing more", te, resp, rest)
		}
		if msg := refusedOnce(e.p, before, reasonUnsupported); msg != "" {
			t.Errorf("%q: %s", te, msg)
		}
	}
	if s := up.seen(); len(s) != 0 {
		t.Errorf("the upstream got %q, want nothing", s)
	}
	// Chunked with a Content-Length: chunked counts, the length goes, and
	// the connection closes after the answer (RFC 9112, 6.1).
	resp, b, rest := exchange(t, e, "POST /both HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp == nil || b != "for /both" || !resp.Close || rest != "" {
		t.Errorf("chunked with a length: %v %q, then %q; want for /both and close", resp, b, rest)
	}
	if s := up.seen(); len(s) != 1 || s[0] != "POST /both abc" {
		t.Errorf("the upstream got %q, want [POST /both abc]", s)
	}
}

// TestRawRequestHeadStrictness: what RFC 9112 answers 400 is answered
// 400 (and counted as malformed, once): a signed or listed Content-Length, two Host lines, a Host with
// bytes a host cannot have, a bad %-escape in the path, * but for
// OPTIONS, a target that is neither a path nor an http(s) URI. A later
// HTTP/1.x is read as HTTP/1.1, and an http absolute-form target is sent
// on as its path.
func TestRawRequestHeadStrictness(t *testing.T) {
	var up upstreamSeen
	e := newRawEnv(t, rawUpstream(t, up.serve))
	for _, h := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a% HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET * HTTP/1.1\r\nHost: a\r\n\r\n",         // asterisk-form is for OPTIONS only
		"GET a:0 HTTP/1.1\r\nHost: a\r\n\r\n",       // an opaque URI, not a path (found by FuzzDifferential)
		"GET ftp://a/b HTTP/1.1\r\nHost: a\r\n\r\n", // absolute-form of another scheme
		"GET mailto:x@y HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		before := clientErrors(e.p)
		resp, _, _ := exchange(t, e, h)
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: answer %v, want 400", h, resp)
		}
		if msg := refusedOnce(e.p, before, reasonMalformed); msg != "" {
			t.Errorf("%q: %s", h, msg)
		}
	}
	if s := up.seen(); len(s) != 0 {
		t.Errorf("the upstream got %q, want nothing", s)
	}
	if resp, b, _ := exchange(t, e, "GET /v HTTP/1.2\r\nHost: a\r\nConnection: close\r\n\r\n"); resp == nil || b != "for /v" {
		t.Errorf("an HTTP/1.2 request: %v %q, want it forwarded", resp, b)
	}
	if resp, b, _ := exchange(t, e, "GET HTTP://a/w?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); resp == nil || b != "for /w?x=1" {
		t.Errorf("an absolute-form request: %v %q, want it forwarded as /w?x=1", resp, b)
	}
}

// TestRawBadGatewayKeepsClient: a 502 for a request read whole leaves the
// client connection open for its next request, as net/http's server does:
// for an upstream that closed without an answer, and for a 101 to a
// request without Upgrade (ReverseProxy's 502 too).
func TestRawBadGatewayKeepsClient(t *testing.T) {
	addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		r, err := http.ReadRequest(br)
		switch {
		case err != nil || r.URL.Path == "/none":
		case r.URL.Path == "/101":
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		default:
			okFor(conn, r)
		}
	})
	e := newRawEnv(t, addr)
	for _, first := range []string{
		"GET /none HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /101 HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /101 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
	} {
		resp, _, rest := exchange(t, e, first+"GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if resp == nil || resp.StatusCode != http.StatusBadGateway || resp.Close || !strings.HasSuffix(rest, "for /next") {
			got := "no answer"
			if resp != nil {
				got = fmt.Sprintf("%d (close %v)", resp.StatusCode, resp.Close)
			}
			t.Errorf("%q: %s, then %q; want a 502 without close, then for /next", first, got, rest)
		}
	}
}

// TestRawAnswerFraming: what the upstream frames leniently or against its
// status goes to the client as RFC 9112 has it: no bare LF, junk or NUL
// of a chunked body passed on (the connection is cut, its answer
// unfinished), no control byte of
// a reason phrase, no framing on a 1xx or a 204, no chunking on a HEAD
// answer; framing that a next hop may read otherwise (two
// Transfer-Encoding lines, one in an answer below HTTP/1.1) is a 502.
func TestRawAnswerFraming(t *testing.T) {
	answers := map[string]string{
		"/barelf":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
		"/junk":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 junk\r\nhello\r\n0\r\n\r\n",
		"/nul":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: a\x00b\r\n\r\n",
		"/long":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloEXTRA\r\n0\r\n\r\n",
		"/reason":  "HTTP/1.1 200 OK\rSet-Cookie: injected=1\r\nContent-Length: 2\r\n\r\nok",
		"/reason2": "HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nok",
		"/103":     "HTTP/1.1 103 Early Hints\r\nLink: </s>\r\nTransfer-Encoding: chunked\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/204":     "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
		"/304":     "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/head":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/te2":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding:\r\n\r\n0\r\n\r\n",
		"/te10":    "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/te01":    "HTTP/0.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/crlf":    "\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/lf":      "\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/103crlf": "HTTP/1.1 103 Early Hints\r\n\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	}
	addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			a, ok := answers[r.URL.Path]
			if !ok {
				okFor(conn, r)
				continue
			}
			_, _ = io.WriteString(conn, a)
		}
	})
	e := newRawEnv(t, addr)
	get := func(method, path string) string {
		conn, br := rawDial(t, e)
		_, _ = io.WriteString(conn, method+" "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s %s: no EOF after %q", method, path, b)
		}
		return string(b)
	}
	for path, bad := range map[string]string{"/barelf": "5\n", "/junk": "junk", "/nul": "\x00", "/long": "EXTRA"} {
		if got := get("GET", path); strings.Contains(got, bad) {
			t.Errorf("GET %s: the client got %q, want no %q (the connection cut)", path, got, bad)
		}
	}
	for path, what := range map[string]string{
		"/te2":  "two Transfer-Encoding lines",
		"/te10": "HTTP/1.0 and Transfer-Encoding", // net/http reads it until close, chunk sizes and all (RFC 9112, 6.1: faulty framing)
		"/te01": "HTTP/0.1 and Transfer-Encoding",
		"/crlf": "an empty line before it", // RFC 9112, 2.2 allows it before a request line only; net/http refuses it
		"/lf":   "an empty line (LF) before it",
	} {
		if got := get("GET", path); !strings.HasPrefix(got, "HTTP/1.1 502 ") {
			t.Errorf("an answer with %s: the client got %q, want 502", what, got)
		}
	}
	for _, path := range []string{"/reason", "/reason2"} {
		if got := get("GET", path); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") || strings.Contains(got, "\r\nSet-Cookie") || strings.Count(got, "\r") != strings.Count(got, "\r\n") {
			t.Errorf("GET %s: the client got %q, want a clean 200 OK status line", path, got)
		}
	}
	if got := get("GET", "/103crlf"); !strings.HasPrefix(got, "HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 502 ") {
		t.Errorf("a 103 and an empty line before the answer: the client got %q, want the 103, then 502", got)
	}
	if got := get("GET", "/103"); !strings.HasPrefix(got, "HTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\nHTTP/1.1 200 OK\r\n") || !strings.HasSuffix(got, "\r\n\r\nok") {
		t.Errorf("a 103 with Transfer-Encoding: the client got %q, want the 103 without it, then the 200", got)
	}
	for _, tc := range []struct{ method, path, not string }{
		{"GET", "/204", "Content-Length"},
		{"GET", "/304", "Transfer-Encoding"},
		{"HEAD", "/head", "Transfer-Encoding"},
	} {
		if got := get(tc.method, tc.path); strings.Contains(got, tc.not) {
			t.Errorf("%s %s: the client got %q, want no %s", tc.method, tc.path, got, tc.not)
		}
	}
}

// TestRawUpgradeOutlivesIdleTimeout: an upgraded connection is not cut by
// the read deadline of the head that asked for it.
func TestRawUpgradeOutlivesIdleTimeout(t *testing.T) {
	addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "echo: "+line)
		}
	})
	e := newRawEnv(t, addr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newRawServer(e.p, nil)
	s.idleTimeout = 100 * time.Millisecond
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer func() {
		s.Close()
		<-served
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer: %v, %v; want 101", resp, err)
	}
	for i := range 3 {
		time.Sleep(150 * time.Millisecond) // past the idle timeout: the time is what is tested
		_, _ = io.WriteString(conn, "ping\n")
		if line, err := br.ReadString('\n'); err != nil || line != "echo: ping\n" {
			t.Fatalf("%d×150 ms into the tunnel (idle timeout 100 ms): %q, %v; want echo: ping", i+1, line, err)
		}
	}
}

// TestRawAnswerPassedOnUpToItsFailure: what the upstream sent of an
// answer's body before its framing broke reaches the client, then the
// connection is cut, as through ReverseProxy: an HTTP/1.1 client gets the
// data and a body cut short; an HTTP/1.0 client, whose answer ends where
// its connection closes, gets the data (and cannot tell the rest is
// missing, whatever a proxy does). (Found by FuzzDifferential: an
// HTTP/1.0 client got none of it.)
func TestRawAnswerPassedOnUpToItsFailure(t *testing.T) {
	e := newRawEnv(t, rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX") // no CRLF after the data
		}
	}))
	for _, version := range []string{"HTTP/1.1", "HTTP/1.0"} {
		conn, br := rawDial(t, e)
		_, _ = io.WriteString(conn, "GET /broken "+version+"\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%s: %v, want the answer's head", version, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		if cut := err != nil; string(b) != "hello" || cut != (version == "HTTP/1.1") {
			t.Errorf("%s: the client read %q, %v; want hello, cut short if it can tell", version, b, err)
		}
	}
}

// TestRawDechunkedHeadWaitsForBody: an HTTP/1.0 client reads a chunked
// answer dechunked until its connection closes, so the head of one whose
// body breaks off or turns malformed before its first byte, passed on
// alone, would read as a whole empty answer. The proxy holds the head
// until the first body byte and answers 502 if the body fails first; an
// empty body that ends cleanly, and one with data, pass. An HTTP/1.1
// client gets the head and the cut as before. (Found by FuzzDifferential:
// a malformed first size line.)
func TestRawDechunkedHeadWaitsForBody(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	bodies := map[string]string{
		"/malformed": "zz\r\n",
		"/cut":       "5\r\n",
		"/bare-lf":   "5\nhello\r\n0\r\n\r\n",
		"/empty":     "0\r\n\r\n",
		"/data":      "5\r\nhello\r\n0\r\n\r\n",
	}
	e := newRawEnv(t, rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		if req, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(conn, head+bodies[req.URL.Path])
		}
	}))
	for _, tc := range []struct {
		path, version string
		status        int
		body          string
	}{
		{"/malformed", "HTTP/1.0", http.StatusBadGateway, ""},
		{"/cut", "HTTP/1.0", http.StatusBadGateway, ""},
		{"/bare-lf", "HTTP/1.0", http.StatusBadGateway, ""},
		{"/empty", "HTTP/1.0", http.StatusOK, ""},
		{"/data", "HTTP/1.0", http.StatusOK, "hello"},
		{"/malformed", "HTTP/1.1", http.StatusOK, ""},
	} {
		conn, br := rawDial(t, e)
		_, _ = io.WriteString(conn, "GET "+tc.path+" "+tc.version+"\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%s %s: %v, want %d", tc.version, tc.path, err, tc.status)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || tc.status == http.StatusOK && string(b) != tc.body {
			t.Errorf("%s %s: %d %q, want %d %q", tc.version, tc.path, resp.StatusCode, b, tc.status, tc.body)
		}
	}
}
