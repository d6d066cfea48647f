package faultproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/sockets"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"go.uber.org/goleak"
)

// serveBodyTimeout serves e's proxy on a raw server of its own whose body
// idle timeout is d, and returns the server's address.
func serveBodyTimeout(t *testing.T, e *fwdEnv, d time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newRawServer(e.p, nil)
	s.bodyIdleTimeout = d
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		<-served
		s.wg.Wait()
	})
	return ln.Addr().String()
}

// bodyEnd is how an upstream's read of a request ended: its body, or the
// error that ended its head (head) or its body.
type bodyEnd struct {
	body []byte
	head bool
	err  error
}

// bodyUpstream is a raw upstream that reads each request's body whole,
// reports how that ended, and answers "got <n>" if it ended well; a body
// that fails ends the connection. A connection that ends (or fails)
// before a whole head is reported too. Reports that find ends full are
// dropped.
func bodyUpstream(t *testing.T, ends chan<- bodyEnd) string {
	report := func(e bodyEnd) {
		select {
		case ends <- e:
		default:
		}
	}
	return rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				report(bodyEnd{head: true, err: err})
				return
			}
			b, err := io.ReadAll(r.Body)
			report(bodyEnd{body: b, err: err})
			if err != nil {
				return
			}
			msg := "got " + itoa(len(b))
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+itoa(len(msg))+"\r\n\r\n"+msg)
		}
	})
}

// finalAnswer reads answers from br until one that is not interim (1xx).
func finalAnswer(br *bufio.Reader) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode >= 200 {
			return resp, err
		}
	}
}

// TestRawStalledBody: a client that announces a body and stops sending it
// (with Content-Length or chunked, anywhere in the body) is answered 408
// and its connection closed once it has sent nothing for the body idle
// timeout, not before; the upstream's read of the body ends with an error
// (its connection is closed, not pooled); it counts once as a stalled_body
// client error, and as neither an upstream error nor a cancellation, and
// no goroutine or socket is left.
func TestRawStalledBody(t *testing.T) {
	const d = 300 * time.Millisecond
	ends := make(chan bodyEnd, 64)
	e := newRawEnv(t, bodyUpstream(t, ends))
	addr := serveBodyTimeout(t, e, d)
	const lengthHead = "POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
	const chunkedHead = "POST /s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tc := range []struct{ name, sent string }{
		{"Content-Length, half the body", lengthHead + "hello"},
		{"Content-Length, none of the body", lengthHead},
		{"Content-Length, after 100 Continue", strings.Replace(lengthHead, "\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1)},
		{"chunked, between chunks", chunkedHead + "5\r\nhello\r\n"},
		{"chunked, inside a chunk", chunkedHead + "a\r\nhello"},
		{"chunked, inside a size line", chunkedHead + "5\r\nhello\r\n3"},
		{"chunked, inside the trailers", chunkedHead + "5\r\nhello\r\n0\r\nX-T: v\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idle := goleak.IgnoreCurrent()
			socks := sockets.Open()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			before := clientErrors(e.p)
			start := time.Now()
			_, _ = io.WriteString(conn, tc.sent)
			br := bufio.NewReader(conn)
			resp, err := finalAnswer(br)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("sent %q and stalled: %v after %v, want 408 after %v", tc.sent, err, took, d)
			}
			rest, err := io.ReadAll(br)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || err != nil {
				t.Errorf("sent %q and stalled: %d (close %v), then %q, %v; want 408, Connection: close and EOF", tc.sent, resp.StatusCode, resp.Close, rest, err)
			}
			if took < d-d/120 || took > 5*time.Second {
				t.Errorf("sent %q and stalled: answered after %v, want after the body idle timeout %v (bound 5 s)", tc.sent, took, d)
			}
			if msg := refusedOnce(e.p, before, reasonStalledBody); msg != "" {
				t.Errorf("sent %q and stalled: %s", tc.sent, msg)
			}
			select {
			case end := <-ends:
				// The proxy passed on what it had before it waited (the
				// head at least), then closed the upstream connection.
				if end.head || end.err == nil {
					t.Errorf("sent %q and stalled: the upstream read ended with %q, %v (in the head %v); want the head read and the body's read failed", tc.sent, end.body, end.err, end.head)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("sent %q and stalled: the upstream's read of the request did not end (its connection held)", tc.sent)
			}
			conn.Close()
			testkit.WaitFor(t, 10*time.Second, "the request to leave the in-flight count", func() bool { return e.p.Inflight() == 0 })
			goleak.VerifyNone(t, idle)
			if socks >= 0 {
				testkit.WaitFor(t, 10*time.Second, "the client's and the upstream's sockets to close", func() bool { return sockets.Open() <= socks })
			}
		})
	}
	if n := val(e.p.m.upstreamErrors); n != 0 {
		t.Errorf("faultproxy_upstream_errors_total = %v after stalled bodies, want 0", n)
	}
	if n := val(e.p.m.cancelled); n != 0 {
		t.Errorf("faultproxy_cancelled_total = %v after stalled bodies, want 0", n)
	}
}

// TestRawSlowBodyPasses: a body that comes slowly but steadily (a piece
// every 40 ms for 1 s, against a body idle timeout of 300 ms) passes
// whole, with Content-Length and chunked; and the connection, kept alive,
// serves a next request after waiting longer than the body idle timeout
// (the body's deadline is gone with the body).
func TestRawSlowBodyPasses(t *testing.T) {
	const d = 300 * time.Millisecond
	ends := make(chan bodyEnd, 64)
	e := newRawEnv(t, bodyUpstream(t, ends))
	addr := serveBodyTimeout(t, e, d)
	const pieces, size, every = 25, 40, 40 * time.Millisecond
	piece := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), size) }
	want := ""
	for i := range pieces {
		want += piece(i)
	}
	for _, chunked := range []bool{false, true} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		if chunked {
			_, _ = io.WriteString(conn, "POST /slow HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
		} else {
			_, _ = io.WriteString(conn, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: "+itoa(len(want))+"\r\n\r\n")
		}
		start := time.Now()
		for i := range pieces {
			time.Sleep(every) // the pace is what is tested
			p := piece(i)
			if chunked {
				p = "28\r\n" + p + "\r\n"
				if i == pieces-1 {
					p += "0\r\n\r\n"
				}
			}
			if _, err := io.WriteString(conn, p); err != nil {
				t.Fatalf("chunked %v: piece %d of %d, %v into the body: %v (body idle timeout %v)", chunked, i+1, pieces, time.Since(start), err, d)
			}
		}
		took := time.Since(start)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("chunked %v: a body of %v in pieces %v apart: %v, want its answer (body idle timeout %v)", chunked, took, every, err, d)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "got "+itoa(len(want)) {
			t.Errorf("chunked %v: a body of %v in pieces %v apart: %d %q, want 200 got %d", chunked, took, every, resp.StatusCode, b, len(want))
		}
		if end := <-ends; end.err != nil || string(end.body) != want {
			t.Errorf("chunked %v: the upstream read %d bytes, %v; want the %d sent", chunked, len(end.body), end.err, len(want))
		}
		time.Sleep(2 * d) // past the body idle timeout: the time is what is tested
		_, _ = io.WriteString(conn, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("chunked %v: a GET on the same connection %v after the body: %v, %v; want 200", chunked, 2*d, resp, err)
		} else {
			resp.Body.Close()
			<-ends
		}
	}
}

// TestRawBodyDeadlineLeavesWatch: the body's deadline does not outlive
// the body: a client that sent a body (large enough to be read in many
// reads) and gives up during a slow upstream call, after the body idle
// timeout has passed, is still noticed and its upstream call cut. (The
// watch for clients that go away waits on the client connection, and ends
// at its read deadline.)
func TestRawBodyDeadlineLeavesWatch(t *testing.T) {
	const d = 200 * time.Millisecond
	arrived, cut := make(chan struct{}, 1), make(chan struct{}, 1)
	e := newFwdEnv(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
			cut <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	}), "")
	addr := serveBodyTimeout(t, e, d)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := bytes.Repeat([]byte("x"), 256<<10)
	_, _ = io.WriteString(conn, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: "+itoa(len(body))+"\r\n\r\n")
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the request's body did not reach the upstream")
	}
	time.Sleep(3 * d) // past the body idle timeout: the time is what is tested
	conn.Close()
	select {
	case <-cut:
	case <-time.After(5 * time.Second):
		t.Fatalf("a client gone %v after its body (body idle timeout %v): its upstream call was not cut", 3*d, d)
	}
	testkit.WaitFor(t, 10*time.Second, "the cancellation to be counted", func() bool { return val(e.p.m.cancelled) == 1 })
	if n := val(e.p.m.upstreamErrors); n != 0 {
		t.Errorf("faultproxy_upstream_errors_total = %v, want 0", n)
	}
}

// TestRawChunkedPassesOnBeforeALine: what the proxy has of a chunked body
// is passed on before it waits for the rest of a line begun (a chunk
// size or a trailer line), both ways: while a client pauses inside such
// a line, the upstream has the request head and the body up to that line;
// while an upstream pauses so, the client has the answer head and the
// body up to it. The pause lasts until the other side has that, or 5 s.
// (The other side reads the body's bytes as they come: net/http's chunked
// reader would wait for the trailers itself.)
func TestRawChunkedPassesOnBeforeALine(t *testing.T) {
	const pause = 5 * time.Second
	for _, tc := range []struct{ name, first, passed, rest string }{
		{"inside a size line", "5\r\nhello\r\n3", "5\r\nhello\r\n", "\r\nabc\r\n0\r\n\r\n"},
		{"inside a trailer line", "5\r\nhello\r\n0\r\nX-T", "5\r\nhello\r\n0\r\n", ": v\r\n\r\n"},
	} {
		whole := tc.first + tc.rest // as the proxy forwards it: sizes in bare hex, no extensions
		// readBody reads the body from br as it comes, sending on passed
		// when it has what must be passed on before the pause ends.
		readBody := func(br *bufio.Reader, passed chan<- string) (string, error) {
			b := make([]byte, len(whole))
			n, err := io.ReadFull(br, b[:len(tc.passed)])
			passed <- string(b[:n])
			if err != nil {
				return string(b[:n]), err
			}
			_, err = io.ReadFull(br, b[n:])
			return string(b), err
		}
		t.Run("request, "+tc.name, func(t *testing.T) {
			passed, body := make(chan string, 1), make(chan string, 1)
			e := newRawEnv(t, rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
				if _, err := http.ReadRequest(br); err != nil { // the head; its body stays in br
					return
				}
				b, err := readBody(br, passed)
				body <- b
				if err == nil {
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				}
			}))
			conn, br := rawDial(t, e)
			start := time.Now()
			_, _ = io.WriteString(conn, "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.first)
			select {
			case got := <-passed:
				if got != tc.passed {
					t.Errorf("sent %q and paused: the upstream read %q, want %q", tc.first, got, tc.passed)
				}
			case <-time.After(pause):
				t.Errorf("sent %q and paused: the upstream had nothing of the body after %v, want the head and %q before the rest comes", tc.first, time.Since(start), tc.passed)
			}
			_, _ = io.WriteString(conn, tc.rest)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("sent %q, then %q: %v", tc.first, tc.rest, err)
			}
			if got := <-body; resp.StatusCode != 200 || got != whole {
				t.Errorf("sent %q, then %q: %d, the upstream read %q; want 200, %q", tc.first, tc.rest, resp.StatusCode, got, whole)
			}
		})
		t.Run("answer, "+tc.name, func(t *testing.T) {
			more := make(chan struct{})
			e := newRawEnv(t, rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.first)
				<-more
				_, _ = io.WriteString(conn, tc.rest)
			}))
			conn, br := rawDial(t, e)
			start := time.Now()
			_, _ = io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			passed := make(chan string, 1)
			type read struct {
				body string
				err  error
			}
			done := make(chan read, 1)
			go func() {
				if _, err := http.ReadResponse(br, nil); err != nil { // the head; its body stays in br
					passed <- ""
					done <- read{"", err}
					return
				}
				b, err := readBody(br, passed)
				done <- read{b, err}
			}()
			select {
			case got := <-passed:
				if got != tc.passed {
					t.Errorf("upstream sent %q and paused: the client read %q, want %q", tc.first, got, tc.passed)
				}
			case <-time.After(pause):
				t.Errorf("upstream sent %q and paused: the client had nothing of the answer after %v, want its head and %q before the rest comes", tc.first, time.Since(start), tc.passed)
			}
			close(more)
			if r := <-done; r.err != nil || r.body != whole {
				t.Errorf("upstream sent %q, then %q: the client read %q, %v; want %q", tc.first, tc.rest, r.body, r.err, whole)
			}
		})
	}
}
