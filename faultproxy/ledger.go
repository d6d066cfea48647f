package faultproxy

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLedgerBuffer is the number of entries a Ledger queues before it
// starts dropping.
const DefaultLedgerBuffer = 8192

// LedgerEntry is one line of the fault ledger: what the proxy decided for a
// request and what it actually did.
type LedgerEntry struct {
	// Time is when the request arrived at the proxy.
	Time time.Time `json:"time"`
	// Seq is the request's sequence number (its RNG stream).
	Seq uint64 `json:"seq"`
	// RequestID is the request's X-Request-Id header, if any.
	RequestID string `json:"request_id,omitempty"`
	// Decision is the Decision's name: "pass", "latency", "error",
	// "latency+abort"...
	Decision string `json:"decision"`
	// RequestedDelayMS and DelayMS are the decided and the actual delay.
	RequestedDelayMS float64 `json:"requested_delay_ms"`
	DelayMS          float64 `json:"delay_ms"`
	// QueueWaitMS is how long the request waited for a slot of a capacity
	// fault (zero when one was free or no capacity fault fired).
	QueueWaitMS float64 `json:"queue_wait_ms,omitempty"`
	// Outcome is what happened: forwarded, error, abort, hang, cancelled
	// (the caller went away during a wait for a slot or the delay),
	// overloaded (a capacity fault's queue was full) or stopped (proxy
	// closing).
	Outcome string `json:"outcome"`
	// Status is the status of an error fault, or of an overloaded answer.
	Status int `json:"status,omitempty"`
	// BytesUp and BytesDown are what a connection of the TCP data plane
	// carried toward the upstream and toward the client, DurationMS how
	// long it was open (TCP data plane only).
	BytesUp    int64   `json:"bytes_up,omitempty"`
	BytesDown  int64   `json:"bytes_down,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
}

// Ledger writes LedgerEntry values as JSON lines from a single goroutine.
// Record never blocks: when the buffer is full the entry is dropped and
// counted. Safe for concurrent use.
type Ledger struct {
	ch      chan LedgerEntry
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	closed  atomic.Bool
	dropped atomic.Uint64
	err     error // first write error, read after done
}

// NewLedger starts a ledger writing to w with room for buffer queued
// entries (DefaultLedgerBuffer if buffer ≤ 0). Close it to flush.
func NewLedger(w io.Writer, buffer int) *Ledger {
	if buffer <= 0 {
		buffer = DefaultLedgerBuffer
	}
	l := &Ledger{ch: make(chan LedgerEntry, buffer), quit: make(chan struct{}), done: make(chan struct{})}
	go l.run(bufio.NewWriterSize(w, 64<<10))
	return l
}

// Record queues e without blocking. It reports false if e was dropped
// (buffer full or ledger closed).
func (l *Ledger) Record(e LedgerEntry) bool {
	if l.closed.Load() {
		l.dropped.Add(1)
		return false
	}
	select {
	case l.ch <- e:
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

// Dropped returns the number of entries dropped so far.
func (l *Ledger) Dropped() uint64 { return l.dropped.Load() }

// Close stops the ledger, writes what is queued, flushes and returns the
// first write error. Idempotent.
func (l *Ledger) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		close(l.quit)
	})
	<-l.done
	return l.err
}

func (l *Ledger) run(bw *bufio.Writer) {
	defer close(l.done)
	enc := json.NewEncoder(bw)
	write := func(e LedgerEntry) {
		if err := enc.Encode(e); err != nil && l.err == nil {
			l.err = err
		}
	}
	for {
		select {
		case e := <-l.ch:
			write(e)
			if len(l.ch) == 0 {
				l.flush(bw)
			}
		case <-l.quit:
			for {
				select {
				case e := <-l.ch:
					write(e)
				default:
					l.flush(bw)
					return
				}
			}
		}
	}
}

func (l *Ledger) flush(bw *bufio.Writer) {
	if err := bw.Flush(); err != nil && l.err == nil {
		l.err = err
	}
}
