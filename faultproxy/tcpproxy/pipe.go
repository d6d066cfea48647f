package tcpproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Buffer sizes of a pipe: every pipe reads into a small buffer of its own,
// and borrows a large one from a pool while its reads keep filling the
// small one (a stream), so an idle connection holds 2 × smallBuf and a
// streaming one at most 2 × (smallBuf + largeBuf).
const (
	smallBuf = 4 << 10
	largeBuf = 32 << 10
)

var largeBufs = sync.Pool{New: func() any { b := make([]byte, largeBuf); return &b }}

// errDone ends a pipe whose connection is being closed by someone else;
// errStopped one that the proxy's closing cut.
var (
	errDone    = errors.New("tcpproxy: connection closed")
	errStopped = errors.New("tcpproxy: proxy closed")
)

// pipe is one direction of a connection: it reads src and writes dst
// through the stages of the connection's current plan.
type pipe struct {
	c        *conn
	dir      int
	src, dst *net.TCPConn
	readAt   time.Time // when the chunk in hand was read
	bytes    prometheus.Counter
	small    [smallBuf]byte
}

func newPipe(c *conn, dir int, src, dst *net.TCPConn) *pipe {
	return &pipe{c: c, dir: dir, src: src, dst: dst, bytes: c.p.m.bytes[dir]}
}

// run relays until src ends (then dst's write side is closed, after a
// slow_close's delay) or the connection ends.
func (p *pipe) run() {
	buf := p.small[:]
	var large *[]byte
	defer func() {
		if large != nil {
			largeBufs.Put(large)
		}
	}()
	for {
		n, err := p.src.Read(buf)
		if p.c.half.Load() {
			_ = p.src.SetReadDeadline(time.Now().Add(p.c.p.halfOpen))
		}
		if n > 0 {
			p.readAt = time.Now()
			if werr := p.c.plan.Load().chain[p.dir].write(p, buf[:n]); werr != nil {
				p.fail(werr)
				return
			}
			switch {
			case n == len(buf) && large == nil:
				large = largeBufs.Get().(*[]byte)
				buf = *large
			case n < smallBuf && large != nil:
				largeBufs.Put(large)
				large, buf = nil, p.small[:]
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.c.close(outcomeClosed, false) // half-open for too long
			return
		}
		if !errors.Is(err, io.EOF) {
			p.c.close(outcomeError, false)
			return
		}
		if d := p.c.plan.Load().closeDelay[p.dir]; d > 0 {
			if err := p.sleepUntil(time.Now().Add(d)); err != nil {
				p.fail(err)
				return
			}
		}
		_ = p.dst.CloseWrite()
		// The other direction now runs on a deadline, renewed by each read.
		p.c.half.Store(true)
		_ = p.dst.SetReadDeadline(time.Now().Add(p.c.p.halfOpen))
		return
	}
}

// fail ends the connection for a stage's error.
func (p *pipe) fail(err error) {
	switch {
	case errors.Is(err, errReset):
		p.c.close(outcomeReset, true)
	case errors.Is(err, errLimit):
		p.c.close(outcomeLimit, false)
	case errors.Is(err, errStopped):
		p.c.close(outcomeStopped, false)
	case errors.Is(err, errDone):
	default:
		p.c.close(outcomeError, false)
	}
}

// out writes b to the destination.
func (p *pipe) out(b []byte) error {
	n, err := p.dst.Write(b)
	if n > 0 {
		p.bytes.Add(float64(n))
		p.c.bytes[p.dir].Add(int64(n))
	}
	return err
}

// sleepUntil waits until t (on the kernel timer the HTTP plane's delays
// use, see faultproxy.SleepUntil); it returns errDone if the connection is
// being closed first, errStopped if the proxy is.
func (p *pipe) sleepUntil(t time.Time) error {
	if faultproxy.SleepUntil(p.c.done, p.c.p.ctx.Done(), t) {
		return nil
	}
	if p.c.p.ctx.Err() != nil {
		return errStopped
	}
	return errDone
}
