package pgproxy

import (
	"io"
	"time"
)

// cancelTimeout bounds the relay of one cancel request to the upstream.
const cancelTimeout = 5 * time.Second

// passCancel passes a CancelRequest on to the upstream on a connection of
// its own and waits (at most cancelTimeout) until the upstream has closed
// it, as a client of the server would; then, if the request's key is a
// connection of this proxy whose first query in flight the proxy holds (a
// hang, or a delayed answer), that query ends as the server ends a
// cancelled statement (see cancelHead).
// The client's connection is closed without an answer, as the server
// closes it.
func (c *conn) passCancel(pkt []byte) {
	c.p.m.cancels.Inc()
	if up, err := c.dial(); err == nil {
		_ = up.SetDeadline(time.Now().Add(cancelTimeout))
		if _, err := up.Write(pkt); err == nil {
			_, _ = io.Copy(io.Discard, up)
		}
	}
	c.p.mu.Lock()
	target := c.p.keys[string(pkt[8:])]
	c.p.mu.Unlock()
	if target != nil {
		target.cancelHead()
	}
}
