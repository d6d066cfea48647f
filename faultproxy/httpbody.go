package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// idleBody is a request body on the net/http data plane whose every read
// is bounded by idle, as the raw plane's (clientReader): a client that
// sends no byte of its body for idle fails the read with errBodyIdle. The
// deadline is the connection's read deadline, set through the
// ResponseController before each read and cleared when the body ends (the
// server's own read for a client gone follows, and must not time out).
// Where the writer cannot set one, reads are not bounded. Safe for one
// reader, and stalled for any goroutine.
type idleBody struct {
	body io.Reader
	rc   *http.ResponseController
	idle time.Duration
	// stalled is set once a read failed for the deadline: the server then
	// cancels the request's context too, so the upstream call may end
	// with that rather than errBodyIdle.
	stalled atomic.Bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.rc == nil {
		return b.body.Read(p)
	}
	if err := b.rc.SetReadDeadline(time.Now().Add(b.idle)); err != nil {
		b.rc = nil // not supported by this writer
		return b.body.Read(p)
	}
	n, err := b.body.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.stalled.Store(true)
		err = errBodyIdle
	default:
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyIdle returns r's body with each read bounded by the proxy's body idle
// timeout (see idleBody); with no timeout, one whose reads are not.
func (p *Proxy) bodyIdle(w http.ResponseWriter, r *http.Request) *idleBody {
	b := &idleBody{body: r.Body, idle: p.bodyIdleTimeout}
	if p.bodyIdleTimeout > 0 {
		b.rc = http.NewResponseController(w)
	}
	return b
}

// stalledBody answers 408 for a request whose client stopped sending its
// body: its failure, not the upstream's (as the raw plane's
// clientBodyErrorRaw); the connection closes.
func (p *Proxy) stalledBody(w http.ResponseWriter) {
	p.m.clientErrors[reasonStalledBody].Inc()
	w.Header().Set("Connection", "close")
	http.Error(w, "faultproxy: request body: "+errBodyIdle.Error(), http.StatusRequestTimeout)
}
