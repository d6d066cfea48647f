package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The raw data plane. For a plain-http upstream and the proxy's own client
// (the default), Listen serves the data plane with this HTTP/1.x server
// instead of net/http's. It reads a request's head into a buffer, decides
// the request's faults as ServeHTTP does, and forwards the head with its
// hop-by-hop headers dropped and the body and the answer as they come
// (chunked bodies as chunks, trailers included), on the connections of the
// proxy's client. Next to net/http's server and its Request, Header and
// ResponseWriter, this leaves out per request: the parse into maps and its
// allocations, the background reader goroutine that watches for clients
// that go away (with its deadline dance), and the encoding of the answer.
// A client that goes away is watched for only while the proxy waits: during
// a delay or a hang at once, and during an upstream call from 1 ms on, so
// the usual sub-millisecond call pays nothing for it.
//
// Its data plane is the same as ServeHTTP's: the same decisions, faults,
// ledger and metrics, 502 on upstream failures, upgrades (101 Switching
// Protocols) tunnelled. Requests with a body get a 100 Continue if they
// asked for one, and a 408 if their body stops coming for a minute (see
// rawbody.go). Idle connections are closed after IdleTimeout; Shutdown
// works as http.Server's.

// planeServer is what Server needs of a listener's server; *http.Server
// and *rawServer are ones.
type planeServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

const (
	rawIdleTimeout = 2 * time.Minute
	// rawBodyIdleTimeout bounds each wait for more of a request body: a
	// client that sends nothing of its body for this long is cut (408),
	// one that keeps sending is not, however long its body takes. As
	// nginx's client_body_timeout (60 s, between two reads).
	rawBodyIdleTimeout = time.Minute
	upstreamWatch      = 10 * time.Millisecond // when a client starts being watched during an upstream call
)

type rawServer struct {
	p      *Proxy
	errLog *log.Logger

	mu    sync.Mutex
	ln    net.Listener
	conns map[*rconn]struct{}
	down  atomic.Bool // shutting down or closed; set under mu
	wg    sync.WaitGroup
	slow  slowCalls

	idleTimeout     time.Duration // the wait for a request head; rawIdleTimeout
	bodyIdleTimeout time.Duration // each wait for more of a request body (0: none); rawBodyIdleTimeout

	// maxConns bounds the client connections (0: no bound), so that they
	// and their upstream connections leave file descriptors to the
	// control API and the rest of the process: at the bound an idle one
	// is closed for a new one, or the new one waits to be accepted.
	maxConns int
	freed    chan struct{} // a connection ended
}

func newRawServer(p *Proxy, errLog *log.Logger) *rawServer {
	s := &rawServer{p: p, errLog: errLog, conns: map[*rconn]struct{}{}, idleTimeout: rawIdleTimeout,
		bodyIdleTimeout: rawBodyIdleTimeout, maxConns: ConnBudget(), freed: make(chan struct{}, 1)}
	s.slow.init(s)
	return s
}

func (s *rawServer) logf(format string, args ...any) {
	if s.errLog != nil {
		s.errLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// Serve accepts connections on ln until Shutdown or Close, then returns
// http.ErrServerClosed.
func (s *rawServer) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.down.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.down.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: back off, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logf("faultproxy: accept error: %v; retrying in %v", err, backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !s.roomForOne() {
			nc.Close()
			return http.ErrServerClosed
		}
		c := &rconn{s: s, c: nc, bw: bufio.NewWriterSize(nc, 4<<10), watchDone: make(chan struct{}, 1)}
		c.br = bufio.NewReaderSize(clientReader{c}, 4<<10)
		if sc, ok := nc.(syscall.Conn); ok {
			c.rc, _ = sc.SyscallConn()
		}
		s.mu.Lock()
		if s.down.Load() {
			s.mu.Unlock()
			nc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// roomForOne waits, with a new connection accepted, until there are
// fewer than maxConns others, closing an idle one if there is one (the
// accept queue holds the clients after it meanwhile); false if the
// server is going down.
func (s *rawServer) roomForOne() bool {
	for {
		s.mu.Lock()
		if s.maxConns <= 0 || len(s.conns) < s.maxConns {
			s.mu.Unlock()
			return !s.down.Load()
		}
		for c := range s.conns {
			if c.idle.Load() {
				c.c.Close() // it ends, and frees its place
				break
			}
		}
		s.mu.Unlock()
		select {
		case <-s.freed:
		case <-time.After(100 * time.Millisecond): // to see a shutdown
		}
		if s.down.Load() {
			return false
		}
	}
}

// Shutdown stops accepting, closes idle connections and waits for the
// others to finish their request, until ctx is done; then it closes them
// and returns ctx's error.
func (s *rawServer) Shutdown(ctx context.Context) error {
	defer s.slow.stop()
	s.mu.Lock()
	s.down.Store(true)
	ln := s.ln
	for c := range s.conns {
		if c.idle.Load() {
			c.c.Close()
		}
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// Close closes the listener and every connection at once.
func (s *rawServer) Close() error {
	defer s.slow.stop()
	s.mu.Lock()
	s.down.Store(true)
	ln := s.ln
	for c := range s.conns {
		c.c.Close()
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	return nil
}

// setIdle records whether c waits for a request; false if c must close
// (the server is shutting down). It takes no lock: c stores idle before it
// loads down, and Shutdown stores down before it loads each idle, so
// either c sees the shutdown or Shutdown sees c idle and closes it.
func (s *rawServer) setIdle(c *rconn, idle bool) bool {
	c.idle.Store(idle)
	return !idle || !s.down.Load()
}

// rconn is one client connection of the raw data plane.
type rconn struct {
	s         *rawServer
	c         net.Conn
	rc        syscall.RawConn // nil: clients that go away are not noticed
	br        *bufio.Reader
	bw        *bufio.Writer
	req, res  head
	out       []byte        // the upstream request's head
	watchDone chan struct{} // a watch has ended
	gone      atomic.Bool   // the client went away during an upstream call
	idle      atomic.Bool   // waiting for a request (see setIdle)

	// an upstream call in progress (see slowCalls)
	call      atomic.Int32 // callNone, callActive, callWatched
	callStart atomic.Int64 // when it began, on slowCalls' clock
	callConn  atomic.Pointer[h1Conn]

	deadline time.Time     // the read deadline set on c, zero if none
	bodyIdle time.Duration // while a request body is read: the bound of each read (see relayBody)

	// counted is the proxy's in-flight count while this connection's
	// request is counted in it (nil otherwise): see answering.
	counted *atomic.Int64
	// classBits are the route classes the request is counted in flight
	// in (0: none), in classes since arrived: see answering.
	classBits uint64
	classes   *classes
	arrived   time.Time
}

// answering takes the request out of the proxy's in-flight count, once,
// just before its answer goes out: a call the client has its answer to
// is not in flight, so the count never holds a call its caller has
// already finished with (and replaced with the next one).
func (c *rconn) answering() {
	if c.counted != nil {
		c.counted.Add(-1)
		c.counted = nil
	}
	if c.classBits != 0 {
		c.classes.leave(c.classBits, c.arrived)
		c.classBits = 0
	}
}

// errAbortConn ends a connection without an answer (abort fault).
var errAbortConn = errors.New("faultproxy: abort")

func (c *rconn) serve() {
	defer func() {
		if r := recover(); r != nil {
			c.s.logf("faultproxy: panic serving %v: %v", c.c.RemoteAddr(), r)
		}
		c.c.Close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		select {
		case c.s.freed <- struct{}{}:
		default:
		}
		c.s.wg.Done()
	}()
	for {
		if !c.s.setIdle(c, true) {
			return
		}
		c.idleDeadline()
		err := readHead(c.br, &c.req)
		if err != nil {
			if err == errHeadTooLarge {
				c.refuse(http.StatusRequestHeaderFieldsTooLarge, reasonHeadTooLarge)
			}
			return
		}
		c.s.setIdle(c, false) // a request read during shutdown is still served
		if err := c.req.parse(true); err != nil {
			switch err {
			case errVersion:
				c.refuse(http.StatusHTTPVersionNotSupported, reasonUnsupported)
			case errEncoding:
				c.refuse(http.StatusNotImplemented, reasonUnsupported)
			default:
				c.refuse(http.StatusBadRequest, reasonMalformed)
			}
			return
		}
		if c.req.hasBody() {
			c.clearDeadline() // the head's; relayBody bounds each read of the body instead
		}
		if !c.s.p.serveRaw(c) {
			return
		}
		c.trimBuffers()
	}
}

// Beyond these capacities a connection's head buffers are given back
// after the request instead of kept for the next one, so that a
// keep-alive connection holds a few KiB whatever heads it has seen.
const (
	keepHeadBytes = 16 << 10
	keepHeaders   = 128
)

// trimBuffers drops the head buffers that an oversized head grew.
func (c *rconn) trimBuffers() {
	for _, h := range []*head{&c.req, &c.res} {
		if cap(h.buf) > keepHeadBytes || cap(h.hdrs) > keepHeaders {
			*h = head{} // every slice of the old buffer with it
		}
	}
	if cap(c.out) > keepHeadBytes {
		c.out = nil
	}
}

// Reasons of faultproxy_client_errors_total: why the raw data plane
// refused a request for what its client sent.
const (
	reasonMalformed    = "malformed"      // 400: a head or a chunked body against RFC 9112
	reasonStalledBody  = "stalled_body"   // 408: a body that stopped coming (errBodyIdle)
	reasonHeadTooLarge = "head_too_large" // 431: errHeadTooLarge
	reasonUnsupported  = "unsupported"    // 501, 505: errEncoding, errVersion
)

var clientErrorReasons = []string{reasonMalformed, reasonStalledBody, reasonHeadTooLarge, reasonUnsupported}

// refuse counts a request refused for what its client sent under reason
// (faultproxy_client_errors_total) and answers it code; the connection
// is to close.
func (c *rconn) refuse(code int, reason string) {
	c.s.p.m.clientErrors[reason].Inc()
	c.writeProtocolError(code)
}

// writeProtocolError answers a request that could not be read, and the
// connection closes.
func (c *rconn) writeProtocolError(code int) {
	text := fmt.Sprintf("%d %s", code, http.StatusText(code))
	fmt.Fprintf(c.bw, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		text, len(text), text)
	_ = c.bw.Flush()
}

// watchLoop blocks until the client goes away (then calls onGone), sends
// data (a pipelined request), or the watch is stopped (a past read
// deadline).
func (c *rconn) watchLoop(onGone func()) {
	if c.rc == nil || c.br.Buffered() > 0 {
		return
	}
	gone := false
	err := c.rc.Read(func(fd uintptr) bool {
		var done bool
		done, gone = peekGone(fd)
		return done
	})
	if err == nil && gone {
		onGone()
	}
}

// watch watches for the client going away from now until the returned stop
// is called.
func (c *rconn) watch(onGone func()) (stop func()) {
	c.clearDeadline() // a delay or a hang may outlast the idle deadline
	go func() {
		c.watchLoop(onGone)
		c.watchDone <- struct{}{}
	}()
	return c.endWatch
}

// endWatch stops a running watch and waits for it.
func (c *rconn) endWatch() {
	_ = c.c.SetReadDeadline(aLongTimeAgo)
	<-c.watchDone
	_ = c.c.SetReadDeadline(time.Time{})
	c.deadline = time.Time{}
}

// idleDeadline bounds the wait for the next request by the server's
// idleTimeout (see readDeadline): a request without a body reads nothing
// more from the client, so the deadline may stay set while it is served.
func (c *rconn) idleDeadline() { c.readDeadline(c.s.idleTimeout) }

// readDeadline sets c's read deadline d from now, unless the one set is
// at most d/120 older than that (a second of the two-minute idle
// timeout): setting a deadline costs a timer update, and one renewed
// that late is as good.
func (c *rconn) readDeadline(d time.Duration) {
	now := time.Now()
	if rem := c.deadline.Sub(now); !c.deadline.IsZero() && rem > d-d/120 && rem <= d {
		return
	}
	c.deadline = now.Add(d)
	_ = c.c.SetReadDeadline(c.deadline)
}

func (c *rconn) clearDeadline() {
	if !c.deadline.IsZero() {
		_ = c.c.SetReadDeadline(time.Time{})
		c.deadline = time.Time{}
	}
}
