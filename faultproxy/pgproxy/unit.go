package pgproxy

import (
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// unit is one query in flight: a simple Query (or FunctionCall), or an
// extended-query batch up to its Sync; the upstream answers each with one
// ReadyForQuery. It enters its connection's queue when the client starts
// waiting for its answer (the Query, or the batch's first Flush or its
// Sync), in the order of the answers, and leaves it when its
// ReadyForQuery has gone to the client.
type unit struct {
	seq     uint64
	arrived time.Time // when the proxy received its Query, Flush or Sync
	release time.Time // arrived + the decided delay: no answer goes out before
	dec     decision
	// extended: an extended-query batch (ended by Sync), not a Query.
	extended bool

	// Guarded by conn.mu.
	closed    bool // its Query or Sync was received: it may end
	cancelled bool // a cancel request ended its hang or its hold
	ended     bool // taken out of the queue (pop, finish)
	// classes are the statement classes it is counted in flight in (set
	// when it closes, unless it ended first); read once it ended.
	classes uint64

	// The pump's.
	errSent  bool          // its ErrorResponse went out (synthetic units)
	released bool          // its first answer went out
	held     time.Duration // from arrived until its first answer went out, when it had a delay
	// dropped: a cancel request ended its hold; the upstream's answer is
	// dropped and the client gets 57014, as from a cancelled statement.
	dropped bool
}

// enqueue starts query u: it is in flight from now, answered in turn.
func (c *conn) enqueue(u *unit) {
	c.p.m.requests.Inc()
	c.p.queryStarted()
	for _, t := range u.dec.fired {
		c.p.m.injected[t].Inc()
	}
	c.mu.Lock()
	c.queue = append(c.queue, u)
	c.mu.Unlock()
	c.last = u
}

// head returns the first query in flight, nil if none.
func (c *conn) head() *unit {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return nil
	}
	return c.queue[0]
}

// pop removes u, the head, from the queue and accounts for it.
func (c *conn) pop(u *unit, outcome string) {
	c.mu.Lock()
	if len(c.queue) == 0 || c.queue[0] != u {
		c.mu.Unlock()
		return // the connection's end took it
	}
	c.queue[0] = nil
	c.queue = c.queue[1:]
	u.ended = true
	c.mu.Unlock()
	c.endQuery(u, outcome)
}

// inFlight reports whether u is still in the queue.
func (c *conn) inFlight(u *unit) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.queue {
		if q == u {
			return true
		}
	}
	return false
}

// endQuery accounts for an ended query: metrics and a ledger entry.
func (c *conn) endQuery(u *unit, outcome string) {
	p := c.p
	p.queryEnded()
	dur := time.Since(u.arrived)
	p.m.outcomes[outcome].Inc()
	answered := outcome != outcomeAborted && outcome != outcomeHang
	if answered {
		p.m.duration.Observe(dur.Seconds())
	}
	if u.classes != 0 {
		p.classes.leave(u.classes, dur, answered)
	}
	if p.ledger == nil {
		return
	}
	p.ledger.Record(faultproxy.LedgerEntry{
		Time: u.arrived, Seq: u.seq, Decision: u.dec.name, Outcome: outcome,
		RequestedDelayMS: float64(u.dec.delay) / 1e6,
		DelayMS:          float64(u.held) / 1e6,
		DurationMS:       float64(dur) / 1e6,
	})
}

// texts remembers the statement text of prepared statements (or portals)
// by name, for match, within maxRemembered bytes per connection: beyond,
// a new name is remembered without its text (and matches no expression).
type texts struct {
	m     map[string]string
	bytes int
}

const maxRemembered = 1 << 20

func newTexts() texts { return texts{m: map[string]string{}} }

func (t *texts) get(name []byte) string { return t.m[string(name)] }

func (t *texts) set(name []byte, text string) {
	old, had := t.m[string(name)]
	if had {
		t.bytes -= len(name) + len(old)
	}
	if t.bytes+len(name)+len(text) > maxRemembered {
		text = ""
		if !had && t.bytes+len(name) > maxRemembered {
			return
		}
	}
	t.m[string(name)] = text
	t.bytes += len(name) + len(text)
}

func (t *texts) forget(name []byte) {
	if old, ok := t.m[string(name)]; ok {
		t.bytes -= len(name) + len(old)
		delete(t.m, string(name))
	}
}
