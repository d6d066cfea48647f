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
// streaming one at most 2 × (smallBuf + largeBuf), besides what latency
// faults hold (at most Config.DelayBuffer per direction, see delayLine).
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
// through the stages of the connection's current plan. A chunk's stages up
// to its first latency fault run on the reader (run); that fault pushes it
// to the pipe's delay line, whose writer runs the rest with a pipe of its
// own (inLine) that shares c, src and dst.
type pipe struct {
	c        *conn
	dir      int
	src, dst *net.TCPConn
	// readAt is when the chunk in hand was read; in the delay line's
	// writer, after a latency fault, when that fault let it go (due).
	readAt time.Time
	bytes  prometheus.Counter
	line   *delayLine // made by the reader at its first latency fault
	inLine bool       // this is the delay line writer's pipe
}

func newPipe(c *conn, dir int, src, dst *net.TCPConn) *pipe {
	return &pipe{c: c, dir: dir, src: src, dst: dst, bytes: c.p.m.bytes[dir]}
}

// run relays until src ends (then dst's write side is closed, after a
// slow_close's delay) or the connection ends.
func (p *pipe) run() {
	small := make([]byte, smallBuf)
	buf := small
	var large *[]byte
	defer func() {
		if large != nil {
			largeBufs.Put(large)
		}
		p.drain() // the connection is being closed: at once
	}()
	for {
		n, err := p.src.Read(buf)
		if p.c.half.Load() {
			_ = p.src.SetReadDeadline(time.Now().Add(p.c.p.halfOpen))
		}
		if n > 0 {
			p.readAt = time.Now()
			if werr := p.c.plan.Load().chain[p.dir].write(p, buf[:n]); werr != nil {
				if errors.Is(werr, errLimit) {
					p.drain() // the bytes within the limit go first
				}
				p.fail(werr)
				return
			}
			switch {
			case n == len(buf) && large == nil:
				large = largeBufs.Get().(*[]byte)
				buf = *large
			case n < smallBuf && large != nil:
				largeBufs.Put(large)
				large, buf = nil, small
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
		// The close goes after the data that latency faults hold.
		if p.drain(); p.c.isDone() {
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

// drain waits until the delay line (if any) has passed on every chunk it
// holds, or the connection is being closed.
func (p *pipe) drain() {
	if p.line != nil {
		p.line.wait()
	}
}

// delayLine returns the pipe's delay line, made on first use.
func (p *pipe) delayLine() *delayLine {
	if p.line == nil {
		p.line = newDelayLine(p)
	}
	return p.line
}

// out writes b to the destination; on the reader, while the delay line
// holds chunks, behind them.
func (p *pipe) out(b []byte) error {
	if !p.inLine && p.line != nil && p.line.busy.Load() {
		return p.line.push(p, b, nil, nil)
	}
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
	return p.ended()
}

// ended is the error of a wait that the connection's or the proxy's end
// cut: errStopped if the proxy is closed, else errDone.
func (p *pipe) ended() error {
	if p.c.p.ctx.Err() != nil {
		return errStopped
	}
	return errDone
}
