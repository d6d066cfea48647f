package pgproxy

import (
	"errors"
	"io"
	"net"
	"time"
)

// outbuf buffers the bytes for the upstream. The bytes from held on are
// those of an extended-query batch not yet decided: they stay until the
// decision forwards them or drops them (an error or a hang).
type outbuf struct {
	conn net.Conn
	buf  []byte
	held int // -1: nothing held
}

// flushDecided writes the decided bytes; the held ones stay.
func (o *outbuf) flushDecided() error {
	end := len(o.buf)
	if o.held >= 0 {
		end = o.held
	}
	if end == 0 || o.conn == nil {
		return nil
	}
	_, err := o.conn.Write(o.buf[:end])
	n := copy(o.buf, o.buf[end:])
	o.buf = o.buf[:n]
	if o.held >= 0 {
		o.held = 0
	}
	if cap(o.buf) > 2*heldMax && n <= bufSize {
		o.buf = append(make([]byte, 0, bufSize), o.buf...)
	}
	return err
}

// batch is the extended-query batch (or simple Query) being read.
type batch struct {
	open     bool
	set      *faultSet // the fault set when it began
	matched  uint64    // faults a statement of it matched
	lastText []byte    // the last statement text matched (B then E repeat it)
	decided  bool
	extended bool
	dec      decision
	seq      uint64
	discard  bool   // decided synthetic: its messages do not go upstream
	unit     *unit  // once enqueued
	classes  uint64 // the statement classes a statement of it matched
}

// frontend relays the client's messages to the upstream until the client
// closes (nil) or a read or write fails.
func (c *conn) frontend() error {
	c.out.held = -1
	for {
		typ, n, err := c.crd.header()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return c.out.flushDecided()
			}
			return err
		}
		if err := c.message(typ, n); err != nil {
			return err
		}
	}
}

// message handles one message of the client: header read, body of n
// bytes to come.
func (c *conn) message(typ byte, n int) error {
	switch typ {
	case 'Q', 'F':
		return c.simpleQuery(typ, n)
	case 'P', 'B', 'E', 'D', 'C':
		return c.extendedMessage(typ, n)
	case 'S':
		c.openBatch(true)
		c.decide()
		keep := !c.b.discard
		c.closeBatch()
		return c.pass(n, keep)
	case 'H':
		if !c.b.open {
			return c.pass(n, true)
		}
		c.decide()
		keep := !c.b.discard
		if u := c.start(); u.dec.synthetic() {
			c.kick() // its error goes out now
		}
		return c.pass(n, keep)
	case 'd', 'c', 'f':
		return c.copyData(n)
	}
	// Terminate, a password or SASL message, or one the upstream will
	// refuse: on its way, unless it is part of a batch that was dropped.
	if c.b.open {
		c.decide()
	}
	return c.pass(n, !(c.b.open && c.b.discard))
}

// simpleQuery handles a Query (or a FunctionCall): a query of its own, or
// the end of the extended batch before it, decided at once.
func (c *conn) simpleQuery(typ byte, n int) error {
	c.openBatch(false)
	if typ == 'Q' {
		pre := min(n, MaxStatementText+1)
		if err := c.crd.need(5 + pre); err != nil {
			return err
		}
		text, _, _ := cstring(c.crd.peek(5 + pre)[5:])
		c.note(text[:min(len(text), MaxStatementText)])
	} else {
		c.note(nil)
	}
	c.decide()
	keep := !c.b.discard
	c.closeBatch()
	return c.pass(n, keep)
}

// extendedMessage handles Parse, Bind, Execute, Describe and Close: held
// back with their batch until its decision (Sync, Flush, or the batch
// growing beyond heldMax), their statements' texts noted for match.
func (c *conn) extendedMessage(typ byte, n int) error {
	c.openBatch(true)
	pre := min(n, 1024)
	if typ == 'P' {
		pre = min(n, MaxStatementText+1024)
	}
	if err := c.crd.need(5 + pre); err != nil {
		return err
	}
	body := c.crd.peek(5 + pre)[5:]
	switch typ {
	case 'P': // name, query, parameter types
		if name, rest, ok := cstring(body); ok {
			text, _, _ := cstring(rest)
			text = text[:min(len(text), MaxStatementText)]
			c.stmts.set(name, string(text))
			c.note(text)
		}
	case 'B': // portal, statement, parameters...
		if portal, rest, ok := cstring(body); ok {
			if stmt, _, ok := cstring(rest); ok {
				text := c.stmts.get(stmt)
				c.portals.set(portal, text)
				if c.noting() {
					c.note([]byte(text))
				}
			}
		}
	case 'E': // portal, row limit
		if portal, _, ok := cstring(body); ok && c.noting() {
			c.note([]byte(c.portals.get(portal)))
		}
	case 'C': // 'S' or 'P', name
		if len(body) > 0 {
			if name, _, ok := cstring(body[1:]); ok {
				switch body[0] {
				case 'S':
					c.stmts.forget(name)
				case 'P':
					c.portals.forget(name)
				}
			}
		}
	}
	if !c.b.decided && (5+n > bufSize || len(c.out.buf)-c.out.held+5+n > heldMax) {
		c.decide() // too long to hold: decided on what came so far
	}
	return c.pass(n, !(c.b.decided && c.b.discard))
}

// copyData handles CopyData, CopyDone and CopyFail: streamed on. The
// first of them after an extended query whose answer has not ended means
// the upstream went into COPY FROM STDIN at its Execute and ignored its
// Sync (as PostgreSQL does during a copy): its ReadyForQuery comes after
// the client's next Sync, which therefore starts no query of its own.
func (c *conn) copyData(n int) error {
	if c.b.open {
		c.decide()
		return c.pass(n, !c.b.discard)
	}
	if u := c.last; c.reopened == nil && u != nil && u.extended && !u.dec.synthetic() && c.inFlight(u) {
		c.reopened = u
	}
	return c.pass(n, true)
}

// openBatch starts a batch unless one is open; after a COPY's ignored Sync
// (copyData) the batch continues that query, decided already.
func (c *conn) openBatch(extended bool) {
	if c.b.open {
		return
	}
	if u := c.reopened; u != nil {
		c.reopened = nil
		c.b = batch{open: true, decided: true, extended: true, dec: u.dec, seq: u.seq, unit: u}
		return
	}
	c.b = batch{open: true, set: c.p.set.Load(), extended: extended}
	c.out.held = len(c.out.buf)
}

// matching reports whether the open batch's statements are still to be
// matched: it is undecided and has faults to match.
func (c *conn) matching() bool { return !c.b.decided && len(c.b.set.faults) > 0 }

// noting reports whether the open batch's statements are still to be
// noted: matched against the faults, or classed.
func (c *conn) noting() bool { return c.matching() || len(c.p.classes.res) > 0 }

// note matches a statement text of the batch against the statement
// classes and the faults' expressions.
func (c *conn) note(text []byte) {
	b := &c.b
	if text != nil {
		b.classes |= c.p.classes.match(text)
	}
	if !c.matching() {
		return
	}
	if b.matched != 0 && string(text) == string(b.lastText) {
		return
	}
	b.matched |= b.set.match(text)
	b.lastText = append(b.lastText[:0], text...)
}

// decide makes the open batch's decision, once: a query sequence number
// and the faults' rolls. A synthetic decision drops what the batch held.
func (c *conn) decide() {
	b := &c.b
	if b.decided {
		return
	}
	b.decided = true
	b.seq = c.p.qseq.Add(1)
	b.dec = b.set.decide(c.p.seed, b.seq, b.matched)
	if b.dec.synthetic() {
		c.out.buf = c.out.buf[:c.out.held]
		b.discard = true
	}
	c.out.held = -1
}

// start enqueues the batch's query, once: its clock starts now.
func (c *conn) start() *unit {
	b := &c.b
	if b.unit != nil {
		return b.unit
	}
	now := time.Now()
	u := &unit{seq: b.seq, arrived: now, release: now.Add(b.dec.delay), dec: b.dec, extended: b.extended}
	b.unit = u
	c.enqueue(u)
	return u
}

// closeBatch ends the batch at its Sync or Query: its query may end.
func (c *conn) closeBatch() {
	u := c.start()
	c.mu.Lock()
	u.closed = true
	if bits := c.b.classes; bits != 0 && u.classes == 0 && !u.ended {
		// In flight in its classes from now (its statements are all
		// known) until it ends; once only for a query continued after a
		// COPY (reopened).
		u.classes = bits
		c.p.classes.enter(bits)
	}
	c.mu.Unlock()
	c.p.classes.count(c.b.classes)
	c.b = batch{}
	if u.dec.synthetic() {
		c.kick()
	}
}

// pass consumes the message whose header is next (body n bytes): into
// the upstream's buffer if keep, else dropped. A long one is streamed,
// after the decided bytes before it.
func (c *conn) pass(n int, keep bool) error {
	total := 5 + n
	if total <= bufSize {
		if err := c.crd.need(total); err != nil {
			return err
		}
		if keep {
			c.out.buf = append(c.out.buf, c.crd.peek(total)...)
		}
		c.crd.skip(total)
		return nil
	}
	if keep {
		if err := c.out.flushDecided(); err != nil {
			return err
		}
	}
	for total > 0 {
		b, err := c.crd.piece(total)
		if err != nil {
			return err
		}
		if keep {
			if _, err := c.out.conn.Write(b); err != nil {
				return err
			}
		}
		c.crd.skip(len(b))
		total -= len(b)
	}
	return nil
}
