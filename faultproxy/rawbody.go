package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"os"
)

// A request body on the raw data plane is relayed to the upstream as it
// comes, on an upstream connection taken for it, so a client that
// announced a body and stopped sending it would hold both connections for
// good. Each read of the client that waits for more of a body is bounded
// by the server's bodyIdleTimeout from when it starts: a deadline on no
// progress, renewed by every read, so that a slow but steady upload is
// never cut (as nginx's client_body_timeout; net/http's ReadTimeout bounds
// the whole request instead).
//
// The deadline lives only while the body is read. The client connection's
// read deadline is also the end of any watch for a client that goes away
// (watchLoop waits on the same socket, and ends quietly when the deadline
// passes: a client that gives up after that is not noticed, and its
// upstream call not cut), and endWatch clears it. So relayBody sets it on
// the serving goroutine when no watch runs (a delay's or a capacity
// queue's has ended, the upstream call's has not begun) and clears it
// before the upstream call.

// errBodyIdle is the failure of a read of a request body that got no
// bytes for the server's bodyIdleTimeout.
var errBodyIdle = errors.New("faultproxy: no request body bytes within the body idle timeout")

// clientReader is what an rconn's bufio.Reader reads: the client
// connection, each read bounded by the rconn's bodyIdle while that is
// set.
type clientReader struct{ c *rconn }

func (r clientReader) Read(b []byte) (int, error) {
	c := r.c
	if c.bodyIdle <= 0 {
		return c.c.Read(b)
	}
	c.readDeadline(c.bodyIdle)
	n, err := c.c.Read(b)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = errBodyIdle
	}
	return n, err
}

// WriteTo copies the connection to w through the connection's own WriteTo
// (splice on Linux), as the bufio.Reader over it did for a tunnel before
// clientReader was between them. It sets no deadline: a tunnel has none.
func (r clientReader) WriteTo(w io.Writer) (int64, error) { return io.Copy(w, r.c.c) }

// relayBody relays the request's body from the client to dst. A client
// that sends none of it for the server's bodyIdleTimeout fails it with
// errBodyIdle (a *srcError). The client connection has no read deadline
// after it, as before it (serve clears the head's for a request with a
// body).
func (c *rconn) relayBody(dst *bufio.Writer) error {
	c.bodyIdle = c.s.bodyIdleTimeout
	var err error
	if c.req.chunked {
		err = relayChunked(dst, c.br)
	} else {
		err = relayN(dst, c.br, c.req.contentLength)
	}
	c.bodyIdle = 0
	c.clearDeadline()
	return err
}
