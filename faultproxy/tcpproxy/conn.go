package tcpproxy

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Outcomes of a connection, as the ledger and the metrics name them.
const (
	outcomeClosed    = "closed"     // both peers closed their side
	outcomeError     = "error"      // a peer reset, vanished or failed a write
	outcomeReset     = "reset"      // a reset fault
	outcomeTimeout   = "timeout"    // a timeout fault's time ran out
	outcomeLimit     = "limit_data" // a limit_data fault ran out
	outcomeRefused   = "refused"    // a down fault
	outcomeDialError = "dial_error" // the upstream could not be reached
	outcomeStopped   = "stopped"    // the proxy closed
)

var outcomes = []string{outcomeClosed, outcomeError, outcomeReset, outcomeTimeout, outcomeLimit, outcomeRefused, outcomeDialError, outcomeStopped}

// maxDecisions caps the plans a ledger entry lists for one connection.
const maxDecisions = 8

// conn is one relayed connection: the client's, the upstream's, and the
// plan its pipes follow.
type conn struct {
	p       *Proxy
	seq     uint64
	arrived time.Time
	client  *net.TCPConn
	plan    atomic.Pointer[plan]
	done    chan struct{} // closed when the connection is being closed
	once    sync.Once
	delay   atomic.Int64 // ns of latency waited, over both pipes
	dropped atomic.Int64 // bytes a timeout fault dropped
	bytes   [2]atomic.Int64
	half    atomic.Bool // one direction has passed its peer's FIN on

	mu        sync.Mutex
	up        *net.TCPConn // nil until dialled
	closed    bool
	outcome   string
	timer     *time.Timer // a timeout fault's
	decisions []string
}

// serveConn relays nc until both peers have closed, or a fault, an error
// or the proxy ends it.
func (p *Proxy) serveConn(nc *net.TCPConn) {
	c := &conn{p: p, seq: p.seq.Add(1), arrived: time.Now(), client: nc, done: make(chan struct{})}
	p.m.accepted.Inc()
	p.register(c)
	defer c.finish()
	c.replan(p.set.Load())
	if p.ctx.Err() != nil {
		c.close(outcomeStopped, true)
		return
	}
	if c.plan.Load().down {
		c.close(outcomeRefused, true)
		return
	}
	nu, err := p.dialer.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil {
		p.m.dialErrors.Inc()
		c.close(outcomeDialError, false)
		return
	}
	up := nu.(*net.TCPConn)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		up.Close()
		return
	}
	c.up = up
	c.mu.Unlock()
	toUp := newPipe(c, dirUp, nc, up)
	toClient := newPipe(c, dirDown, up, nc)
	var wg sync.WaitGroup
	wg.Go(toUp.run)
	toClient.run()
	wg.Wait()
	c.close(outcomeClosed, false)
}

// replan rolls set for c, unless c already follows it or a newer one, and
// (re)arms its timeout.
func (c *conn) replan(set *faultSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.plan.Load(); c.closed || (old != nil && old.gen >= set.gen) {
		return
	}
	pl := newPlan(set, c.p.seed, c.seq)
	c.plan.Store(pl)
	if len(c.decisions) < maxDecisions {
		c.decisions = append(c.decisions, pl.decision)
	}
	for _, t := range pl.fired {
		c.p.m.injected[t].Inc()
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if pl.hasTimeout && pl.closeAfter > 0 {
		c.timer = time.AfterFunc(pl.closeAfter, func() { c.close(outcomeTimeout, false) })
	}
}

// close ends the connection once, with outcome; rst resets the client's
// side (SO_LINGER 0) instead of closing it.
func (c *conn) close(outcome string, rst bool) {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed, c.outcome = true, outcome
		up := c.up
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
		close(c.done)
		if rst {
			_ = c.client.SetLinger(0)
		}
		_ = c.client.Close()
		if up != nil {
			_ = up.Close()
		}
	})
}

// isDone reports whether the connection is being closed.
func (c *conn) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *conn) noteDelay(d time.Duration) {
	c.delay.Add(int64(d))
	c.p.m.delay.Observe(d.Seconds())
}

func (c *conn) noteDropped(n int) { c.dropped.Add(int64(n)) }

// finish accounts for the ended connection: metrics and a ledger entry.
func (c *conn) finish() {
	c.close(outcomeClosed, false) // no-op if closed already
	c.p.unregister(c)
	dur := time.Since(c.arrived)
	c.mu.Lock()
	outcome, decision := c.outcome, strings.Join(c.decisions, ",")
	c.mu.Unlock()
	m := c.p.m
	m.duration.Observe(dur.Seconds())
	m.outcomes[outcome].Inc()
	if c.p.ledger == nil {
		return
	}
	c.p.ledger.Record(faultproxy.LedgerEntry{
		Time: c.arrived, Seq: c.seq, Decision: decision, Outcome: outcome,
		DelayMS:    float64(c.delay.Load()) / 1e6,
		BytesUp:    c.bytes[dirUp].Load(),
		BytesDown:  c.bytes[dirDown].Load(),
		DurationMS: float64(dur) / 1e6,
	})
}
