package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// h1Client is the forwarding path's client for a plain-http upstream: an
// HTTP/1.1 client in which the handler's goroutine writes the request and
// reads the answer on a pooled keep-alive connection itself.
// http.Transport hands every request to a writer goroutine and every
// answer over from a reader goroutine of the connection; each handoff is a
// goroutine wake-up (a futex call when a processor is idle), and in
// profiles of the proxy under load those wake-ups and the transport's
// per-request allocations cost about as much as the forwarding itself.
// Here an exchange costs the two waits on the network that it must.
//
// The pool is LIFO (the most recently used connection first, so that
// spare ones age out) with at most maxIdle connections, each dropped after
// idleTimeout unused. A request without a body whose reused connection
// fails before any answer (the upstream had closed it) is retried once on
// a new connection, as http.Transport does; every pooled connection is
// checked first with a non-blocking peek (see get).
type h1Client struct {
	addr        string // host:port to dial
	host        string // Host header
	dialer      net.Dialer
	maxIdle     int
	idleTimeout time.Duration

	mu   sync.Mutex
	idle []*h1Conn
}

type h1Conn struct {
	c        net.Conn
	rc       syscall.RawConn // nil if the connection has none
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
	stop     func() bool // stops the cancellation hook of the current exchange
}

func newH1Client(target *url.URL) *h1Client {
	addr := target.Host
	if target.Port() == "" {
		addr = net.JoinHostPort(target.Hostname(), "80")
	}
	return &h1Client{addr: addr, host: target.Host, maxIdle: 1024, idleTimeout: 90 * time.Second,
		dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
}

// errBodyShort is the error of a request body shorter than its length.
var errBodyShort = errors.New("faultproxy: request body shorter than its Content-Length")

// roundTrip sends req within ctx and returns the answer (1xx interim
// answers skipped) with its connection, which the caller hands back with
// release once done with the body.
func (c *h1Client) roundTrip(ctx context.Context, req *http.Request) (*http.Response, *h1Conn, error) {
	replayable := req.Body == nil
	for attempt := 0; ; attempt++ {
		pc, reused, err := c.get(ctx, attempt > 0)
		if err != nil {
			return nil, nil, err
		}
		pc.stop = context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(time.Unix(1, 0)) })
		res, err := c.exchange(pc, req)
		if err == nil {
			return res, pc, nil
		}
		pc.stop()
		pc.c.Close()
		if ctx.Err() == nil && reused && replayable && attempt == 0 && staleConnErr(err) {
			continue
		}
		return nil, nil, err
	}
}

// staleConnErr reports whether err is what a request on a connection that
// the upstream had closed meets before any answer.
func staleConnErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// get returns a pooled connection (unless fresh) that has not idled too
// long and still looks open, or a new one.
//
// Every reuse peeks at the socket (a system call, about a microsecond):
// bytes that the upstream sent on an idle connection (a late body after
// a 204 or a HEAD answer, anything unasked) would otherwise be read as
// the next request's answer, and every later answer on the connection
// would be one behind. http.Transport reads its idle connections for the
// same reason.
func (c *h1Client) get(ctx context.Context, fresh bool) (*h1Conn, bool, error) {
	if !fresh {
		now := time.Now()
		for {
			c.mu.Lock()
			n := len(c.idle)
			if n == 0 {
				c.mu.Unlock()
				break
			}
			pc := c.idle[n-1]
			c.idle[n-1] = nil
			c.idle = c.idle[:n-1]
			c.mu.Unlock()
			if now.Sub(pc.lastUsed) < c.idleTimeout && pc.open() {
				return pc, true, nil
			}
			pc.c.Close()
		}
	}
	conn, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, false, err
	}
	pc := &h1Conn{c: conn, br: bufio.NewReaderSize(conn, 4<<10), bw: bufio.NewWriterSize(conn, 4<<10)}
	if sc, ok := conn.(syscall.Conn); ok {
		pc.rc, _ = sc.SyscallConn()
	}
	return pc, false, nil
}

// release takes back pc after its answer res: into the pool if the answer
// was read whole (complete), the connection may be kept and the request
// was not cancelled; closed otherwise.
func (c *h1Client) release(pc *h1Conn, res *http.Response, complete bool) {
	c.put(pc, pc.stop() && complete && !res.Close)
}

// put pools pc if reusable and it has nothing unread; else it closes pc.
func (c *h1Client) put(pc *h1Conn, reusable bool) {
	if !reusable || pc.br.Buffered() > 0 {
		pc.c.Close()
		return
	}
	pc.lastUsed = time.Now()
	c.mu.Lock()
	if len(c.idle) < c.maxIdle {
		c.idle = append(c.idle, pc)
		pc = nil
	}
	c.mu.Unlock()
	if pc != nil {
		pc.c.Close()
	}
}

// closeIdle closes the pooled connections.
func (c *h1Client) closeIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, pc := range idle {
		pc.c.Close()
	}
}

// exchange writes req on pc and reads the answer's head.
func (c *h1Client) exchange(pc *h1Conn, req *http.Request) (*http.Response, error) {
	werr := c.writeRequest(pc.bw, req)
	if werr == nil {
		werr = pc.bw.Flush()
	}
	for {
		res, err := http.ReadResponse(pc.br, req)
		if err != nil {
			if werr != nil {
				return nil, werr
			}
			return nil, err
		}
		if werr != nil {
			res.Close = true // an early answer; the connection is spent
		}
		if res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim answer (100 Continue, 103 Early Hints): the final one follows
		}
		return res, nil
	}
}

// writeRequest writes req's head and body. The header's values came from
// net/http's server (already checked) or the proxy itself.
func (c *h1Client) writeRequest(bw *bufio.Writer, req *http.Request) error {
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(c.host)
	bw.WriteString("\r\n")
	for k, vv := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // written below from the request's fields
		}
		for _, v := range vv {
			if v == "" && k == "User-Agent" {
				continue
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	chunked := false
	switch {
	case req.Body == nil:
		if req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
			bw.WriteString("Content-Length: 0\r\n")
		}
	case req.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(req.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
		if len(req.Trailer) > 0 {
			first := true
			bw.WriteString("Trailer: ")
			for k := range req.Trailer {
				if !first {
					bw.WriteString(", ")
				}
				bw.WriteString(k)
				first = false
			}
			bw.WriteString("\r\n")
		}
	}
	if _, err := bw.WriteString("\r\n"); err != nil {
		return err
	}
	if req.Body == nil {
		return nil
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	if !chunked {
		n, err := io.CopyBuffer(bw, io.LimitReader(req.Body, req.ContentLength), *bp)
		if err == nil && n < req.ContentLength {
			err = errBodyShort
		}
		return err
	}
	cw := httputil.NewChunkedWriter(bw)
	if _, err := io.CopyBuffer(cw, req.Body, *bp); err != nil {
		return err
	}
	if err := cw.Close(); err != nil { // the last chunk, "0\r\n"
		return err
	}
	for k, vv := range req.Trailer { // filled in once the body was read
		if !forwardableTrailer(k) {
			continue
		}
		for _, v := range vv {
			fmt.Fprintf(bw, "%s: %s\r\n", k, v)
		}
	}
	_, err := bw.WriteString("\r\n")
	return err
}

// open reports whether the upstream has neither closed pc nor sent it
// anything unasked, with a non-blocking peek at its socket.
func (pc *h1Conn) open() bool {
	if pc.rc == nil {
		return true
	}
	return peekOpen(pc.rc)
}
