package tcpproxy

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDelayBuffer is the default of Config.DelayBuffer: the bytes a
// latency fault may hold for one direction of a connection. Toxiproxy's
// latency toxic holds up to 1024 chunks of up to 32 KiB (32 MiB); 4 MiB
// lets a stream carry 40 MiB/s under a 100ms latency and keeps a thousand
// delayed connections' worst case to gigabytes, not tens of them.
const DefaultDelayBuffer = 4 << 20

// delayLine is what a pipe's latency faults hold: the chunks read and not
// yet written, in order. The pipe's reader pushes a chunk that reaches a
// latency fault, with when it was read, and goes on reading; one writer
// goroutine, started when the line gets a chunk and ended when it has none,
// takes them in order and hands each to its latency stage, which waits
// until the chunk's delay from its read has passed and passes it on
// through the rest of its chain. So a pipelining client sees the latency
// once, not once per request in flight (Toxiproxy's latency toxic works so
// too); and a chunk is never written before an earlier one: one whose
// jitter is shorter goes right after the one before it.
//
// While the writer runs, every chunk the reader would write goes through
// the line (at once, behind the others: a fault set put while chunks wait
// does not let later data overtake them), and a chunk already in the line
// keeps the stages it was pushed with: when a latency fault is cleared or
// changed, the chunks it holds go at their due time.
//
// The line holds at most limit bytes of copies (one chunk if it is
// larger), counted by the memory they take (a chunk over half a pooled
// buffer takes one, 32 KiB): past it the reader waits until the writer has
// let bytes go, so the source's sender meets TCP's backpressure as it
// would meet a slow peer.
type delayLine struct {
	w     *pipe // the writer's view of the pipe (inLine)
	limit int64
	space chan struct{} // a token when the writer has let bytes go
	busy  atomic.Bool   // the writer runs: the line holds chunks, or it writes one
	wg    sync.WaitGroup

	mu     sync.Mutex
	q      []delayed // from head on
	head   int
	held   int64
	failed bool // the writer ended the connection; the line takes no more
}

// keepQueue is the most chunks whose room an empty line keeps (for the
// next burst); a longer queue's array is let go.
const keepQueue = 64

// delayed is one chunk in a delay line: a copy (in a buffer of largeBufs
// if pooled), the memory it takes, when it was read, and the stage (nil:
// none) and chain it goes on through.
type delayed struct {
	b      []byte
	pooled *[]byte
	size   int64
	at     time.Time
	st     stage
	next   *link
}

func newDelayLine(p *pipe) *delayLine {
	w := &pipe{c: p.c, dir: p.dir, src: p.src, dst: p.dst, bytes: p.bytes, inLine: true}
	return &delayLine{w: w, limit: p.c.p.delayBuffer, space: make(chan struct{}, 1)}
}

// push adds a copy of b, read at p.readAt, to the line, to go on through st
// (nil: none) and next; it waits while the line is full. It returns
// errDone or errStopped if the connection or the proxy ends first.
func (l *delayLine) push(p *pipe, b []byte, st stage, next *link) error {
	pool := len(b) > largeBuf/2 && len(b) <= largeBuf
	n := int64(len(b))
	if pool {
		n = largeBuf
	}
	l.mu.Lock()
	for !l.failed && l.held > 0 && l.held+n > l.limit {
		l.mu.Unlock()
		select {
		case <-l.space:
		case <-p.c.done:
			return p.ended()
		case <-p.c.p.ctx.Done():
			return errStopped
		}
		l.mu.Lock()
	}
	if l.failed {
		l.mu.Unlock()
		return errDone
	}
	d := delayed{size: n, at: p.readAt, st: st, next: next}
	if pool {
		d.pooled = largeBufs.Get().(*[]byte)
		d.b = append((*d.pooled)[:0], b...)
	} else {
		d.b = append([]byte(nil), b...)
	}
	if len(l.q) == cap(l.q) && l.head >= len(l.q)/2 {
		// Full, and half of it chunks gone: the rest moves to the front.
		k := copy(l.q, l.q[l.head:])
		clear(l.q[k:])
		l.q, l.head = l.q[:k], 0
	}
	l.q = append(l.q, d)
	l.held += n
	p.c.p.noteDelayed(n, l.held)
	if !l.busy.Load() {
		l.busy.Store(true)
		l.wg.Add(1)
		go l.run()
	}
	l.mu.Unlock()
	return nil
}

// run is the writer: it passes the line's chunks on in order until the
// line is empty, or a stage fails (then it drops the rest and ends the
// connection).
func (l *delayLine) run() {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		if l.head == len(l.q) {
			l.q, l.head = l.q[:0], 0
			if cap(l.q) > keepQueue {
				l.q = nil
			}
			l.busy.Store(false)
			l.mu.Unlock()
			return
		}
		d := l.q[l.head]
		l.mu.Unlock()
		l.w.readAt = d.at
		var err error
		if d.st != nil {
			err = d.st.pass(l.w, d.b, d.next)
		} else {
			err = d.next.write(l.w, d.b)
		}
		l.mu.Lock()
		l.q[l.head] = delayed{}
		l.head++
		freed := d.release()
		if err != nil {
			for _, x := range l.q[l.head:] {
				freed += x.release()
			}
			l.q, l.head, l.failed = nil, 0, true
			l.busy.Store(false)
		}
		l.held -= freed
		l.mu.Unlock()
		l.w.c.p.noteDelayed(-freed, 0)
		select {
		case l.space <- struct{}{}:
		default:
		}
		if err != nil {
			l.w.fail(err)
			return
		}
	}
}

// release gives d's buffer back and returns the memory it took.
func (d delayed) release() int64 {
	if d.pooled != nil {
		largeBufs.Put(d.pooled)
	}
	return d.size
}

// wait returns once the writer has passed on every chunk the line holds,
// or ended the connection.
func (l *delayLine) wait() { l.wg.Wait() }
