package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// The differential fuzz test of the raw data plane: a stream of client
// bytes goes through the proxy and through httputil.ReverseProxy on
// net/http's server (the oracle), each in front of an upstream of its own
// that answers every request it can parse with the same stream of answer
// bytes (and then closes: a stream may hold more than one answer, or
// bytes after one). What each upstream parsed and what each client
// received are compared, normalised where the two may differ without
// either being wrong:
//
//   - a request either proxy refuses (400, 431, 501, 505, of its own) is
//     "rejected", whatever the code; a 502 of its own is "bad gateway";
//     an answer cut short, or none, is "cut";
//   - an answer that one side turns into a 502 and the other into a cut
//     connection is the same failure (see sameFailure);
//   - an answer without a length is relayed until the upstream closes,
//     and then the proxy closes the client connection, where net/http's
//     server chunks it and reads on (see closedAfter);
//   - an answer head the proxy's parser refuses is a 502 where net/http's
//     client may be lenient (see refusedAnswer);
//   - a chunked answer to an HTTP/1.0 client that breaks off or turns
//     malformed before its first body byte: the proxy answers 502,
//     ReverseProxy passes the head on or sends nothing, as its own
//     goroutines race (see headBeforeCut);
//   - interim (1xx) answers, and the headers each proxy sets itself
//     (Date, Connection, Content-Length and Transfer-Encoding as framing,
//     the oracle's Content-Type of an error), are not compared;
//   - a request that the proxy rejects (its own 4xx) where the oracle
//     forwards it is tolerated, when everything before it matched: the
//     proxy follows RFC 9112 where net/http is lenient (obs-fold, a
//     Transfer-Encoding on HTTP/1.0, whitespace before a chunk
//     extension), and a refused message cannot be read two ways.
//     Anything else is a failure.

// diffUpstream answers every request with answer, once per connection,
// and records what it parsed.
type diffUpstream struct {
	addr   string
	served atomic.Int64 // connections served to their end
	mu     sync.Mutex
	answer []byte
	seen   []string
}

func newDiffUpstream(t testing.TB) *diffUpstream {
	u := &diffUpstream{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer u.served.Add(1)
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				u.serve(c)
			}()
		}
	}()
	return u
}

func (u *diffUpstream) serve(c net.Conn) {
	br := bufio.NewReader(c)
	r, err := http.ReadRequest(br)
	if err != nil {
		if _, perr := br.Peek(1); perr == nil || err != io.EOF {
			u.record("UNPARSABLE " + err.Error())
		}
		return
	}
	declared := map[string]bool{} // trailers not declared are forwarded or not: either is RFC 9110's
	for k := range r.Trailer {
		declared[k] = true
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		u.record("BODY ERROR " + r.Method + " " + r.URL.RequestURI() + " " + err.Error())
		return
	}
	for k := range r.Trailer {
		// A trailer that frames or routes is dropped by the raw plane,
		// and ReverseProxy sends no request trailer's value: either way
		// the upstream gets none.
		if !declared[k] || !forwardableTrailer(k) {
			delete(r.Trailer, k)
		}
	}
	u.record(describeRequest(r, body))
	u.mu.Lock()
	a := u.answer
	u.mu.Unlock()
	if r.URL.Path == "/end" {
		a = []byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nend")
	}
	_, _ = c.Write(a)
}

func (u *diffUpstream) record(s string) {
	u.mu.Lock()
	u.seen = append(u.seen, s)
	u.mu.Unlock()
}

// reset starts an exchange: answer for every request, nothing seen.
func (u *diffUpstream) reset(answer []byte) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	seen := u.seen
	u.answer, u.seen = answer, nil
	return seen
}

// notForwarded are the request headers that a proxy sets or drops itself.
var notForwarded = map[string]bool{"Connection": true, "Keep-Alive": true, "Te": true,
	"Content-Length": true, "Transfer-Encoding": true, "Trailer": true, "Host": true,
	"Proxy-Connection": true, "Upgrade": true, "Expect": true}

func describeRequest(r *http.Request, body []byte) string {
	var hs []string
	for k, vv := range r.Header {
		if !notForwarded[k] {
			hs = append(hs, k+"="+strings.Join(vv, "|"))
		}
	}
	slices.Sort(hs)
	var tr []string
	for k, vv := range r.Trailer {
		tr = append(tr, k+"="+strings.Join(vv, "|"))
	}
	slices.Sort(tr)
	target := r.URL.RequestURI()
	if target == "/%2A" {
		target = "*" // OPTIONS *: ReverseProxy joins it to the upstream's path
	}
	return fmt.Sprintf("%s %s body=%q headers=%q trailers=%q", r.Method, target, body, hs, tr)
}

// diffEnv is the proxy and the oracle, each before its upstream.
type diffEnv struct {
	ours, oracle     string // data-plane addresses
	upOurs, upOracle *diffUpstream
	p                *Proxy
	oracleConns      atomic.Int32 // the oracle's client connections not yet closed
	// the connections each side opened to its upstream: all of them
	// served (see settle), nothing of an exchange is still to come
	dialedOurs, dialedOracle atomic.Int64
}

func newDiffEnv(t testing.TB) *diffEnv {
	d := &diffEnv{upOurs: newDiffUpstream(t), upOracle: newDiffUpstream(t)}
	u, _ := url.Parse("http://" + d.upOurs.addr)
	p, err := New(Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	d.p = p
	p.h1.dialer.Control = func(string, string, syscall.RawConn) error {
		d.dialedOurs.Add(1)
		return nil
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	d.ours = srv.Addr()
	ou, _ := url.Parse("http://" + d.upOracle.addr)
	tr := NewTransport()
	tr.ForceAttemptHTTP2 = false
	tr.DisableKeepAlives = true // the upstream closes after each answer: no stale connections
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			d.dialedOracle.Add(1)
		}
		return c, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(ou) },
		Transport: tr,
		ErrorLog:  log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set("X-Faultproxy-Error", "upstream")
			http.Error(w, "oracle: "+err.Error(), http.StatusBadGateway)
		},
	}
	oracle := httptest.NewUnstartedServer(rp)
	oracle.Config.ErrorLog = log.New(io.Discard, "", 0)
	oracle.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			d.oracleConns.Add(1)
		case http.StateClosed, http.StateHijacked:
			d.oracleConns.Add(-1)
		}
	}
	oracle.Start()
	d.oracle = oracle.Listener.Addr().String()
	t.Cleanup(func() {
		oracle.Close()
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return d
}

// endRequest follows every client stream, so that an exchange ends when
// the proxy closes after its answer (a half-close would be a client gone
// away to either server); if reqs leaves a message unfinished, it is
// part of it, and the exchange ends at its deadline.
const endRequest = "GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

// exchange1 sends reqs and endRequest to addr and returns what came back.
func exchange1(addr string, reqs []byte) []byte {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return []byte("DIAL " + err.Error())
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	go func() { _, _ = c.Write(append(reqs[:len(reqs):len(reqs)], endRequest...)) }()
	got, _ := io.ReadAll(c)
	return got
}

// describeAnswers parses what a client received (methods: of its
// requests, in order, for HEAD answers) into normalised lines.
func describeAnswers(got []byte, methods []string) []string {
	br := bufio.NewReader(bytes.NewReader(got))
	var out []string
	for i := 0; ; {
		if _, err := br.Peek(1); err != nil {
			return out
		}
		m := "GET"
		if i < len(methods) {
			m = methods[i]
		}
		res, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			return append(out, "cut")
		}
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return append(out, "cut")
		}
		if res.StatusCode < 200 {
			continue
		}
		i++
		switch {
		case res.Header.Get("X-Faultproxy-Error") == "upstream":
			out = append(out, "bad gateway")
			continue
		case ownRejection(res, body):
			return append(out, "rejected")
		}
		var hs []string
		for k, vv := range res.Header {
			switch k {
			case "Date", "Connection", "Content-Length", "Transfer-Encoding", "Keep-Alive",
				"Content-Type": // net/http's server sniffs one if the answer has none
				continue
			}
			hs = append(hs, k+"="+strings.Join(vv, "|"))
		}
		slices.Sort(hs)
		var tr []string
		for k, vv := range res.Trailer {
			tr = append(tr, k+"="+strings.Join(vv, "|"))
		}
		slices.Sort(tr)
		out = append(out, fmt.Sprintf("%d body=%q headers=%q trailers=%q", res.StatusCode, body, hs, tr))
		if res.ContentLength < 0 && len(res.TransferEncoding) == 0 && !bodyless([]byte(m), res.StatusCode) {
			out = append(out, "until close")
		}
	}
}

// ownRejection reports whether res is a proxy's own answer to a request
// it could not read: either server's "NNN Text" bodies with Connection:
// close.
func ownRejection(res *http.Response, body []byte) bool {
	switch res.StatusCode {
	case 400, 413, 414, 431, 501, 505:
	default:
		return false
	}
	return res.Close && bytes.HasPrefix(body, fmt.Appendf(nil, "%d ", res.StatusCode)) ||
		res.StatusCode == 501 && bytes.HasPrefix(body, []byte("Unsupported transfer encoding"))
}

// clientMethods are the methods of the requests in reqs as net/http
// reads them (as far as it can).
func clientMethods(reqs []byte) []string {
	var ms []string
	for _, r := range clientRequests(reqs) {
		ms = append(ms, r.Method)
	}
	return ms
}

// clientRequests are the requests in reqs as net/http reads them (as far
// as it can), their bodies read.
func clientRequests(reqs []byte) []*http.Request {
	br := bufio.NewReader(bytes.NewReader(reqs))
	var rs []*http.Request
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return rs
		}
		rs = append(rs, r)
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return rs
		}
	}
}

// diffResult is one side's transcript.
type diffResult struct {
	seen    []string // what the upstream parsed
	answers []string // what the client received
}

// run sends reqs through both sides in turn. What an upstream parsed is
// taken once that side is done with the exchange, every connection it
// opened to its upstream served to its end (see settle), so that a request
// still on its way when the client's connection ended (a body the oracle
// streams on until its read fails, on a connection its upstream had not
// yet accepted) is not counted in the next run.
func (d *diffEnv) run(reqs, answer []byte) (ours, oracle diffResult) {
	methods := clientMethods(reqs)
	d.upOurs.reset(answer)
	ours.answers = describeAnswers(exchange1(d.ours, reqs), methods)
	settle(func() bool { return d.p.Inflight() == 0 && d.upOurs.served.Load() == d.dialedOurs.Load() })
	ours.seen = d.upOurs.reset(answer)
	d.upOracle.reset(answer)
	oracle.answers = describeAnswers(exchange1(d.oracle, reqs), methods)
	settle(func() bool { return d.oracleConns.Load() == 0 && d.upOracle.served.Load() == d.dialedOracle.Load() })
	oracle.seen = d.upOracle.reset(nil)
	d.p.closeIdleConnections()
	return ours, oracle
}

// settle waits until done, for at most 3 s (past the upstream's 2 s
// deadline on a connection).
func settle(done func() bool) {
	for deadline := time.Now().Add(3 * time.Second); !done() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// trimCut drops a trailing "cut" (a connection that ends without (the
// rest of) an answer ends the same way whether or not a head came first)
// and "until close" (the last answer's framing, which net/http's server
// may turn into a length).
func trimCut(a []string) []string {
	for len(a) > 0 && (a[len(a)-1] == "cut" || a[len(a)-1] == "until close") {
		a = a[:len(a)-1]
	}
	return a
}

// lenientNetHTTP reports whether the two sides differ only in that the
// proxy rejected, as its last answer, a request that the oracle forwarded
// (see the top of the file).
func lenientNetHTTP(ours, oracle diffResult) bool {
	return len(ours.answers) > 0 && ours.answers[len(ours.answers)-1] == "rejected" &&
		len(ours.seen) <= len(oracle.seen) && slices.Equal(ours.seen, oracle.seen[:len(ours.seen)])
}

// closedAfter reports whether the proxy's answers are the oracle's up to
// one it relayed until its upstream closed, after which it closed the
// client connection where net/http's server chunked the answer and went
// on: what the upstream parsed must agree as far as the proxy went.
func closedAfter(ours, oracle diffResult) bool {
	a, b := ours.answers, oracle.answers
	n := len(a)
	if n == 0 || a[n-1] != "until close" || len(b) < n || !slices.Equal(a[:n-1], b[:n-1]) {
		return false
	}
	return len(ours.seen) <= len(oracle.seen) && slices.Equal(ours.seen, oracle.seen[:len(ours.seen)])
}

// refusedAnswer reports whether the proxy answered 502 to every request
// whose answer was a head its parser refuses (a bad header name or line,
// a version that is not HTTP/d.d, bad framing) where net/http's client
// is more lenient, and the upstreams parsed the same.
func refusedAnswer(ours, oracle diffResult, answer []byte) bool {
	var h head
	if readHead(bufio.NewReader(bytes.NewReader(answer)), &h) == nil && h.parse(false) == nil {
		return false
	}
	for _, a := range ours.answers {
		if a != "bad gateway" && !strings.HasSuffix(a, `body="end" headers=[] trailers=[]`) {
			return false
		}
	}
	m := min(len(ours.seen), len(oracle.seen))
	return slices.Equal(ours.seen[:m], oracle.seen[:m])
}

// sameFailure reports whether the two sides agree up to an answer that one
// turned into a 502 and the other into a cut connection (net/http's
// server aborts on a status it cannot write, below 100): either way the
// client got no answer and its connection ends there for one side, so
// nothing after it is compared.
func sameFailure(ours, oracle diffResult) bool {
	a, b := ours.answers, oracle.answers
	if len(a) < len(b) {
		a, b = b, a
	}
	n := len(b)
	if len(a) == n || !slices.Equal(a[:n], b) || a[n] != "bad gateway" {
		return false
	}
	m := min(len(ours.seen), len(oracle.seen))
	return slices.Equal(ours.seen[:m], oracle.seen[:m])
}

// headBeforeCut reports whether the two sides differ only in that the
// oracle's last answer is the bare head of one whose body broke off or
// turned malformed before its first byte, where the proxy answered 502:
// everything before it the same, the upstreams parsed the same, the
// client's request HTTP/1.0 and the answer chunked (see
// chunkedNoBodyByte).
//
// ReverseProxy writes the head of an answer without a length from a timer
// of its own (copyResponse's first flush, in another goroutine); if the
// read of the body fails first, its handler aborts and the connection
// closes with the head unsent. Which comes first varies from run to run
// (measured alone: nothing in 56 of 60 runs, the head in 4). To an HTTP/1.1
// client both read as an answer cut short (see trimCut); to an HTTP/1.0
// one, which gets the answer dechunked until close, the head alone is a
// whole empty answer. The proxy holds such a head until the body's first
// byte and answers 502 if it fails before (as sameFailure allows against
// the oracle's usual nothing).
func headBeforeCut(ours, oracle diffResult, reqs, answer []byte) bool {
	n := len(ours.answers) - 1
	if n < 0 || ours.answers[n] != "bad gateway" || len(oracle.answers) != n+1 ||
		!slices.Equal(ours.answers[:n], oracle.answers[:n]) || !slices.Equal(ours.seen, oracle.seen) {
		return false
	}
	if _, rest, _ := strings.Cut(oracle.answers[n], " "); !strings.HasPrefix(rest, `body="" `) {
		return false
	}
	rs := clientRequests(reqs)
	if n >= len(rs) || rs[n].ProtoMajor != 1 || rs[n].ProtoMinor != 0 {
		return false
	}
	return chunkedNoBodyByte(answer, rs[n].Method)
}

// errMore is what chunkedNoBodyByte's reader returns once the answer has
// run out: a parser that gets it wanted more bytes.
var errMore = errors.New("diff: the answer has no more bytes")

// chunkedNoBodyByte reports whether answer, as net/http reads it for a
// request with method (after at most 5 interim answers, as its Transport),
// is chunked and fails before the first byte of its body: it ends within
// a chunk size line, before a chunk's data or within the trailer section
// of an empty body, or a size line or the trailer is malformed.
func chunkedNoBodyByte(answer []byte, method string) bool {
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(answer), iotest.ErrReader(errMore)))
	for range 6 {
		res, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return false
		}
		if res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		if res.Body == http.NoBody || !slices.Equal(res.TransferEncoding, []string{"chunked"}) {
			return false
		}
		// res.Body reads from br lazily: read the chunks with net/http's
		// own reader, and the trailer section as a header.
		n, err := io.ReadFull(httputil.NewChunkedReader(br), make([]byte, 1))
		switch {
		case n > 0:
			return false
		case err == io.EOF: // the last chunk
			_, err = textproto.NewReader(br).ReadMIMEHeader()
		}
		return err != nil
	}
	return false
}

// TestChunkedNoBodyByte: the answers that headBeforeCut allows for are
// chunked ones that fail before a body byte, and no others.
func TestChunkedNoBodyByte(t *testing.T) {
	const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tc := range []struct {
		answer, method string
		want           bool
	}{
		{chunked, "GET", true},
		{chunked + "0", "GET", true},
		{chunked + "a\r\n", "GET", true},
		{chunked + "0\r\n", "GET", true},
		{chunked + "0\r\nX-T: 1", "GET", true},
		{chunked + "0\r\nX-T: 1\r\n", "GET", true},
		{"HTTP/1.1 103 Early Hints\r\n\r\n" + chunked + "5;e", "GET", true},
		{chunked + "zz\r\n", "GET", true}, // malformed before a byte
		{chunked + "0\r\nno colon\r\n", "GET", true},
		{chunked + "0\r\n\r\n", "GET", false}, // whole, and empty
		{chunked + "0\r\nX-T: 1\r\n\r\n", "GET", false},
		{chunked + "1\r\nx", "GET", false}, // a body byte came
		{chunked + "1\r\nxzz\r\n", "GET", false},
		{chunked, "HEAD", false}, // no body
		{"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", false},
		{"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", false}, // until close
		{"HTTP/1.1 200 OK\r\n\r\n", "GET", false},                               // until close: ends cleanly
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "GET", false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "GET", false}, // no head
	} {
		if got := chunkedNoBodyByte([]byte(tc.answer), tc.method); got != tc.want {
			t.Errorf("%q to %s: %v, want %v", tc.answer, tc.method, got, tc.want)
		}
	}
}

// TestHeadBeforeCut: headBeforeCut allows the oracle the bare head of a
// chunked answer that fails before its first body byte, to an HTTP/1.0
// request, only where the proxy answered 502, everything before it the
// same.
func TestHeadBeforeCut(t *testing.T) {
	const (
		cut  = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n"
		head = `200 body="" headers=[] trailers=[]`
		bad  = "bad gateway"
		seen = "GET / body=\"\" headers=[] trailers=[]"
	)
	for _, tc := range []struct {
		req, answer        string
		ours, oracle, seen []string
		want               bool
	}{
		{"GET / HTTP/1.0\r\n\r\n", cut, []string{bad}, []string{head}, []string{seen}, true},
		{"GET / HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", []string{bad}, []string{head}, []string{seen}, true},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", cut, []string{bad}, []string{head}, []string{seen}, false},
		{"GET / HTTP/1.0\r\n\r\n", cut + "abcde\r\n0\r\n\r\n", []string{bad}, []string{head}, []string{seen}, false},
		{"GET / HTTP/1.0\r\n\r\n", cut, []string{bad}, []string{`200 body="a" headers=[] trailers=[]`}, []string{seen}, false},
		{"GET / HTTP/1.0\r\n\r\n", cut, []string{head}, nil, []string{seen}, false}, // the proxy never sends the head alone
		{"GET / HTTP/1.0\r\n\r\n", cut, []string{bad, bad}, []string{head}, []string{seen}, false},
		{"GET / HTTP/1.0\r\n\r\n", cut, []string{bad}, []string{"rejected"}, []string{seen}, false},
	} {
		ours := diffResult{seen: tc.seen, answers: tc.ours}
		oracle := diffResult{seen: tc.seen, answers: tc.oracle}
		if got := headBeforeCut(ours, oracle, []byte(tc.req), []byte(tc.answer)); got != tc.want {
			t.Errorf("%q, answer %q: proxy %q, oracle %q: %v, want %v", tc.req, tc.answer, tc.ours, tc.oracle, got, tc.want)
		}
	}
	ours := diffResult{seen: []string{seen}, answers: []string{bad}}
	oracle := diffResult{seen: []string{seen, seen}, answers: []string{head}}
	if headBeforeCut(ours, oracle, []byte("GET / HTTP/1.0\r\n\r\n"), []byte(cut)) {
		t.Errorf("allowed with the upstreams parsing %q and %q", ours.seen, oracle.seen)
	}
}

// FuzzDifferential compares the raw data plane with ReverseProxy on
// net/http's server for a client stream and an answer stream; see above.
// Run it with
//
//	go test -run '^$' -fuzz FuzzDifferential -parallel 1 ./faultproxy
func FuzzDifferential(f *testing.F) {
	seeds := []struct{ req, ans string }{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{"POST /p?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"},
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n0\r\nX-T: v\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding:\r\n\r\n0\r\n\r\nGET /s HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\nuntil close"},
		{"HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL"},
		{"GET / HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{"GET / HTTP/1.1\r\nHost: x\r\nConnection: X-A, close\r\nX-A: 1\r\nX-B: 2\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\nHTTP/1.1 200 OK\r\nConnection: X-C\r\nX-C: 3\r\nContent-Length: 1\r\n\r\n!"},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\rX: y\r\nContent-Length: 1\r\n\r\n!"},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"},
		{"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n!!"},
		{"GET /%41?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 500 Internal\r\nContent-Length: 1\r\n\r\n!"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.req), []byte(s.ans))
	}
	d := newDiffEnv(f)
	f.Fuzz(func(t *testing.T, reqs, answer []byte) {
		if len(reqs) > 64<<10 || len(answer) > 64<<10 {
			return
		}
		// Empty lines before a request line are ignored by the proxy, as
		// RFC 9112, 2.2 asks, and by net/http's server only after a POST.
		reqs = bytes.TrimLeft(reqs, "\r\n")
		ours, oracle := d.run(reqs, answer)
		if closedAfter(ours, oracle) {
			return
		}
		ours.answers, oracle.answers = trimCut(ours.answers), trimCut(oracle.answers)
		if slices.Equal(ours.seen, oracle.seen) && slices.Equal(ours.answers, oracle.answers) {
			return
		}
		if lenientNetHTTP(ours, oracle) || sameFailure(ours, oracle) ||
			refusedAnswer(ours, oracle, answer) || headBeforeCut(ours, oracle, reqs, answer) {
			return
		}
		t.Errorf("requests %q\nanswers %q\nthe upstream parsed\n  proxy  %q\n  oracle %q\nthe client received\n  proxy  %q\n  oracle %q",
			reqs, answer, ours.seen, oracle.seen, ours.answers, oracle.answers)
	})
}
