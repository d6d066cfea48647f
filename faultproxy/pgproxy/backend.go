package pgproxy

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// pump relays the upstream's messages to the client, each in turn with
// the query it answers (the head of the queue): it holds a delayed query's
// answer until its release, and answers the queries the proxy answers
// itself (an error, a cancelled hang) in their turn. It returns nil when
// the upstream closes, else the error that ended it; either way the
// caller closes the connection.
func (c *conn) pump() error {
	for {
		if err := c.service(); err != nil {
			return err
		}
		typ, n, err := c.urd.header()
		if err != nil {
			if c.woken(err) {
				continue
			}
			_ = c.cw.Flush() // what came before the upstream's end
			var pe *protocolError
			if errors.As(err, &pe) {
				return &protocolError{reasonUpstream}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		u := c.head()
		if u != nil && u.dec.synthetic() {
			continue // answered first, by service
		}
		if u != nil && !u.released {
			if err := c.hold(u); err != nil {
				return err
			}
		}
		if err := c.relay(typ, n, u); err != nil {
			return err
		}
	}
}

// hold waits until u's answer may go out, the first time one of its
// messages comes. A cancel request for u ends the wait (see cancelHead):
// u is dropped.
func (c *conn) hold(u *unit) error {
	if u.dec.delay > 0 {
		if time.Now().Before(u.release) {
			if err := c.cw.Flush(); err != nil {
				return err
			}
			ok, err := c.holdUntil(u)
			if err != nil {
				return err
			}
			u.dropped = !ok
		}
		u.held = time.Since(u.arrived)
		c.p.m.delay.Observe(u.held.Seconds())
	}
	u.released = true
	return nil
}

// holdUntil waits until u's release; false if a cancel request for u
// came first.
func (c *conn) holdUntil(u *unit) (bool, error) {
	for {
		c.mu.Lock()
		cut := u.cancelled
		c.mu.Unlock()
		if cut {
			return false, nil
		}
		if faultproxy.SleepUntil(c.kickCh, c.done, u.release) {
			return true, nil
		}
		select {
		case <-c.done:
			if c.p.ctx.Err() != nil {
				return false, errStopped
			}
			return false, errDone
		default: // kicked: look at u again
		}
	}
}

// relay passes the upstream's message whose header is next (body n
// bytes) to the client, and acts on the few the proxy reads: a
// ReadyForQuery ends the head query u (its status is kept for the
// answers of error faults), a BackendKeyData keys the connection for
// cancel requests.
func (c *conn) relay(typ byte, n int, u *unit) error {
	drop := u != nil && u.dropped
	total := 5 + n
	if total > bufSize {
		for total > 0 {
			b, err := c.urd.piece(total)
			if err != nil {
				if c.woken(err) {
					continue
				}
				return err
			}
			if drop {
				// not the client's: its statement was cancelled
			} else if _, err := c.cw.Write(b); err != nil {
				return err
			}
			c.urd.skip(len(b))
			total -= len(b)
		}
		return nil
	}
	for {
		err := c.urd.need(total)
		if err == nil {
			break
		}
		if !c.woken(err) {
			return err
		}
	}
	b := c.urd.peek(total)
	switch {
	case typ == 'Z' && n == 1:
		c.status = b[5]
	case typ == 'K' && !c.ready && n >= 8:
		c.p.mu.Lock()
		c.key = string(b[5:])
		c.p.keys[c.key] = c
		c.p.mu.Unlock()
	}
	if drop {
		c.urd.skip(total)
		if typ != 'Z' {
			return nil
		}
		// The end of the cancelled query's answer: the client gets what
		// the server sends for a cancelled statement.
		if _, err := c.cw.Write(appendReadyForQuery(appendErrorResponse(nil, DefaultCode, DefaultMessage), c.status)); err != nil {
			return err
		}
		c.p.m.cancelled.Inc()
		c.pop(u, outcomeCancelled)
		return c.cw.Flush()
	}
	if _, err := c.cw.Write(b); err != nil {
		return err
	}
	c.urd.skip(total)
	if typ == 'Z' {
		if !c.ready {
			c.ready = true // the end of the startup, no query's
		} else if u != nil {
			c.pop(u, outcomeForwarded)
		}
	}
	return nil
}

// woken reports whether err is the wake-up of kick (a read deadline in
// the past), which it clears, on a connection still open.
func (c *conn) woken(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
	}
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	_ = up.SetReadDeadline(time.Time{})
	return true
}

// service answers the queries at the head of the queue that the proxy
// answers itself, in turn: an error fault's ErrorResponse (after its
// delay) and, once its Sync came, its ReadyForQuery with the transaction
// status the upstream last reported; a hang nothing, until a cancel
// request ends it as the server would (57014), or the connection ends.
func (c *conn) service() error {
	wrote := false
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return errDone
		}
		if len(c.queue) == 0 || !c.queue[0].dec.synthetic() {
			c.mu.Unlock()
			break
		}
		u := c.queue[0]
		closed, cancelled := u.closed, u.cancelled
		c.mu.Unlock()
		if u.dec.hang && !cancelled {
			if err := c.waitKick(); err != nil {
				return err
			}
			continue
		}
		if !u.errSent {
			code, msg := DefaultCode, DefaultMessage
			if !u.dec.hang {
				if err := c.hold(u); err != nil {
					return err
				}
				if !u.dropped {
					code, msg = u.dec.err.Code, u.dec.err.Message
				}
			}
			if _, err := c.cw.Write(appendErrorResponse(nil, code, msg)); err != nil {
				return err
			}
			u.errSent, wrote = true, true
		}
		if !closed {
			if err := c.waitKick(); err != nil {
				return err
			}
			continue
		}
		if _, err := c.cw.Write(appendReadyForQuery(nil, c.status)); err != nil {
			return err
		}
		outcome := outcomeError
		if u.dec.hang {
			outcome = outcomeCancelled
			c.p.m.cancelled.Inc()
		}
		c.pop(u, outcome)
		wrote = true
	}
	if wrote {
		return c.cw.Flush()
	}
	return nil
}

// waitKick flushes what is buffered for the client and waits for the
// queue to change (kick).
func (c *conn) waitKick() error {
	if err := c.cw.Flush(); err != nil {
		return err
	}
	select {
	case <-c.kickCh:
		return nil
	case <-c.done:
		return errDone
	case <-c.p.ctx.Done():
		return errStopped
	}
}

// cancelHead ends the query a cancel request for this connection meant:
// the first in the queue, if the proxy holds it — a hang not yet
// cancelled, or a query whose answer a delay holds (the proxy's slow
// statement; one whose hold is over is left to the upstream, which got
// the request too). The pump then answers it 57014, as the server answers
// a cancelled statement. A query the upstream is running without a hold
// is the upstream's to cancel.
func (c *conn) cancelHead() {
	hit := false
	c.mu.Lock()
	for _, u := range c.queue {
		if u.cancelled {
			continue // answered 57014 already, or about to be
		}
		if u.dec.hang || u.dec.delay > 0 && time.Now().Before(u.release) {
			u.cancelled, hit = true, true
			break
		}
		if !u.dec.synthetic() {
			break
		}
	}
	c.mu.Unlock()
	if hit {
		c.kick()
	}
}

// be32 reads a big-endian int32 field.
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
