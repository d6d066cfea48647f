package pgproxy

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// errDone ends a wait whose connection is being closed; errStopped one
// that the proxy's closing cut.
var (
	errDone    = errors.New("pgproxy: connection closed")
	errStopped = errors.New("pgproxy: proxy closed")
)

// aLongTimeAgo is a read deadline in the past: setting it wakes a reader
// blocked on the connection (see conn.kick).
var aLongTimeAgo = time.Unix(1, 0)

// conn is one relayed client connection: the client's socket, the
// upstream's, and the queries in flight between them. Two goroutines
// serve it: the frontend (client to upstream: frontend.go) and the pump
// (upstream to client: backend.go), which alone writes to the client once
// the startup is done.
type conn struct {
	p      *Proxy
	seq    uint64
	client *net.TCPConn
	crd    *reader       // the client's messages (frontend)
	cw     *bufio.Writer // to the client (startup, then the pump)
	done   chan struct{} // closed when the connection is being closed
	once   sync.Once
	kickCh chan struct{} // wakes the pump (see kick)
	key    string        // the upstream's BackendKeyData, guarded by p.mu

	mu     sync.Mutex
	up     *net.TCPConn // nil until dialled
	closed bool
	queue  []*unit // queries in flight, in the order of their answers

	// The pump's.
	urd    *reader // the upstream's messages
	ready  bool    // the first ReadyForQuery (end of the startup) went by
	status byte    // the transaction status of the last ReadyForQuery

	// The frontend's.
	out      outbuf
	b        batch
	stmts    texts // prepared statement name → its text
	portals  texts // portal name → its statement's text
	last     *unit // the query enqueued last
	reopened *unit // an extended query whose Sync the upstream ignored (COPY, see copyData)
}

func (p *Proxy) newConn(nc *net.TCPConn) *conn {
	return &conn{p: p, seq: p.cseq.Add(1), client: nc, crd: newReader(nc), cw: bufio.NewWriterSize(nc, bufSize),
		done: make(chan struct{}), kickCh: make(chan struct{}, 1), status: 'I',
		stmts: newTexts(), portals: newTexts()}
}

// serveConn serves nc until either peer closes it, a malformed stream or
// the proxy ends it.
func (p *Proxy) serveConn(nc *net.TCPConn) {
	c := p.newConn(nc)
	p.m.accepted.Inc()
	p.register(c)
	defer c.finish()
	if p.ctx.Err() != nil {
		return
	}
	pkt, mode, err := c.startup()
	if err != nil {
		c.countProtocol(err)
		return
	}
	if mode == modeCancel {
		c.passCancel(pkt)
		return
	}
	up, err := c.dial()
	if err != nil {
		return
	}
	if mode == modeTLS {
		c.relayTLS(up, pkt)
		return
	}
	if _, err := up.Write(pkt); err != nil {
		return
	}
	c.urd = newReader(up)
	c.urd.beforeBlock = c.flushClient
	c.crd.beforeBlock = c.out.flushDecided
	c.out.conn = up
	var wg sync.WaitGroup
	wg.Go(func() {
		c.countProtocol(c.pump())
		c.close()
	})
	c.countProtocol(c.frontend())
	c.close()
	wg.Wait()
}

// dial connects to the upstream, unless the connection is being closed.
func (c *conn) dial() (*net.TCPConn, error) {
	nu, err := c.p.dialer.DialContext(c.p.ctx, "tcp", c.p.upstream)
	if err != nil {
		c.p.m.dialErrors.Inc()
		return nil, err
	}
	up := nu.(*net.TCPConn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		up.Close()
		return nil, errDone
	}
	c.up = up
	return up, nil
}

// countProtocol counts a malformed stream's reason.
func (c *conn) countProtocol(err error) {
	var pe *protocolError
	if errors.As(err, &pe) {
		c.p.m.protocol[pe.reason].Inc()
	}
}

// close ends the connection once: both sockets are closed, every wait
// ends. Idempotent, safe from any goroutine.
func (c *conn) close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		up := c.up
		c.mu.Unlock()
		close(c.done)
		_ = c.client.Close()
		if up != nil {
			_ = up.Close()
		}
	})
}

// kick wakes the pump to look at the queue again: from a wait for the
// queue, and from a read of the upstream (a deadline in the past makes it
// fail at once; the pump clears it). Called after the queue changed.
func (c *conn) kick() {
	select {
	case c.kickCh <- struct{}{}:
	default:
	}
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	if up != nil {
		_ = up.SetReadDeadline(aLongTimeAgo)
	}
}

// flushClient writes what the pump buffered for the client.
func (c *conn) flushClient() error { return c.cw.Flush() }

// sleepUntil waits until t on the proxy's precise timer; errDone if the
// connection is being closed first, errStopped if the proxy is.
func (c *conn) sleepUntil(t time.Time) error {
	if faultproxy.SleepUntil(c.done, c.p.ctx.Done(), t) {
		return nil
	}
	if c.p.ctx.Err() != nil {
		return errStopped
	}
	return errDone
}

// finish accounts for the ended connection: its queries still in flight
// end as hang or aborted.
func (c *conn) finish() {
	c.close()
	c.mu.Lock()
	left := c.queue
	c.queue = nil
	for _, u := range left {
		u.ended = true
	}
	c.mu.Unlock()
	for _, u := range left {
		outcome := outcomeAborted
		if u.dec.hang {
			outcome = outcomeHang
		}
		if u.dec.synthetic() || u.dec.delay > 0 {
			c.p.m.cancelled.Inc() // held by the proxy when its client went away
		}
		c.endQuery(u, outcome)
	}
	c.p.unregister(c)
}
