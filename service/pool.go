package service

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Rejection reasons. Acquire wraps exactly one of them (with %w, together
// with the pool name) in every error it returns; callers branch with
// errors.Is and map them to a protocol status only at the edge.
var (
	// ErrFull: no permit was free and the wait queue was full; the caller
	// was rejected at once.
	ErrFull = errors.New("bulkhead pool full")
	// ErrWaitTimeout: the caller waited in the queue for MaxWait without
	// getting a permit.
	ErrWaitTimeout = errors.New("bulkhead wait timeout")
	// ErrCancelled: the caller's context ended before a permit was granted.
	// The error also wraps ctx.Err() (context.Canceled or
	// context.DeadlineExceeded).
	ErrCancelled = errors.New("bulkhead wait cancelled")
)

// maxPoolDimension bounds Size and Queue so that both fit the 32-bit halves
// of the pool's state word.
const maxPoolDimension = 1 << 30

// PoolConfig sizes one pool. The zero value is not valid: Size must be at
// least 1.
type PoolConfig struct {
	// Size is the number of permits (the bulkhead's concurrency limit).
	Size int
	// Queue is the most callers that may wait for a permit at once; a caller
	// arriving with Queue callers already waiting is rejected with ErrFull.
	// Zero means no queue: reject whenever no permit is free.
	Queue int
	// MaxWait bounds each caller's time in the queue (ErrWaitTimeout). It
	// must be positive when Queue > 0.
	MaxWait time.Duration
}

// Validate reports the first invalid field as a *ConfigError.
func (c PoolConfig) Validate() error {
	switch {
	case c.Size < 1 || c.Size > maxPoolDimension:
		return fieldErrorf("size", "must be between 1 and %d, got %d", maxPoolDimension, c.Size)
	case c.Queue < 0 || c.Queue > maxPoolDimension:
		return fieldErrorf("queue", "must be between 0 and %d, got %d", maxPoolDimension, c.Queue)
	case c.MaxWait < 0:
		return fieldErrorf("max_wait", "must not be negative, got %v", c.MaxWait)
	case c.Queue > 0 && c.MaxWait == 0:
		return fieldErrorf("max_wait", "must be positive when the queue is not empty (queue %d)", c.Queue)
	}
	return nil
}

// Pool is a bulkhead: a counting semaphore of Size permits with a FIFO wait
// queue of at most Queue callers, each waiting at most MaxWait.
//
// A Pool is safe for concurrent use. The uncontended path (a permit is free
// and nobody waits) is one compare-and-swap on acquire and one on release;
// the mutex and the queue are touched only when callers have to wait.
//
// A Pool also implements prometheus.Collector: its metrics carry a constant
// label pool=<name> and are read from the pool's own atomic counters at
// scrape time, so metrics cost nothing on the hot path.
type Pool struct {
	name  string
	size  uint32
	queue uint32
	// racy is the racy-counter TEST DEFECT (DefectRacyCounter), set by the
	// service before the pool is used: Acquire checks, yields, then
	// increments. It sits next to size, which Acquire reads anyway.
	racy    bool
	maxWait time.Duration

	// state packs in-use permits (low 32 bits) and waiting callers (high 32
	// bits). Invariant: waiting > 0 implies inUse == size, because a release
	// with waiters hands its permit directly to the queue head. Changes to
	// the waiting half happen only with mu held.
	state atomic.Uint64
	// zeroWaitAcquired counts acquisitions that did not queue; it sits next
	// to state so the hot path touches one cache line.
	zeroWaitAcquired atomic.Uint64
	// exhaustedSince is when (Unix ns) the last free permit was taken, or 0
	// while a permit is free. Written only on the transitions, so it costs
	// the hot path one comparison.
	exhaustedSince atomic.Int64

	mu      sync.Mutex
	head    *waiter // FIFO queue, guarded by mu
	tail    *waiter
	errFull error
	errWait error

	rejFull        atomic.Uint64
	rejWaitTimeout atomic.Uint64
	rejCancelled   atomic.Uint64
	waitHist       waitHistogram // acquisitions that queued

	metrics poolMetrics
}

const waitingOne = 1 << 32

// waiter is one queued caller. granted is set, and ready closed, by the
// releaser that hands it a permit; both happen with the pool's mu held.
type waiter struct {
	ready      chan struct{}
	granted    bool
	prev, next *waiter
}

// NewPool returns an empty pool named name (the value of its metrics' pool
// label). It returns a *ConfigError naming the field when cfg is invalid.
func NewPool(name string, cfg PoolConfig) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fieldErrorf("name", "must not be empty")
	}
	p := &Pool{
		name:    name,
		size:    uint32(cfg.Size),
		queue:   uint32(cfg.Queue),
		maxWait: cfg.MaxWait,
		errFull: fmt.Errorf("pool %q: %w", name, ErrFull),
		errWait: fmt.Errorf("pool %q: %w after %v", name, ErrWaitTimeout, cfg.MaxWait),
	}
	p.metrics = newPoolMetrics(name)
	return p, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

// Config returns the configuration the pool was built with.
func (p *Pool) Config() PoolConfig {
	return PoolConfig{Size: int(p.size), Queue: int(p.queue), MaxWait: p.maxWait}
}

// Permit is one acquired slot of a Pool; Release returns it. A Permit is a
// small value that may be copied and used from any goroutine. The zero
// Permit (returned with every error) holds nothing, and its Release does
// nothing.
type Permit struct {
	tok *permitToken
	gen uint64
}

// permitToken is the shared state behind a Permit. Tokens are recycled
// through a sync.Pool to keep Acquire allocation-free; gen is bumped by the
// one Release that wins, so stale copies of a Permit can never release a
// later holder's permit.
type permitToken struct {
	pool *Pool
	gen  atomic.Uint64
}

var permitTokens = sync.Pool{New: func() any { return new(permitToken) }}

func (p *Pool) newPermit() Permit {
	t := permitTokens.Get().(*permitToken)
	t.pool = p
	return Permit{tok: t, gen: t.gen.Load()}
}

// Release returns the permit to its pool, handing it to the longest-waiting
// caller if there is one. Release is idempotent: only the first call on a
// permit (or any copy of it) has an effect, so a double release (for
// example an explicit Release followed by a deferred one, or two goroutines
// racing) is harmless and can never free someone else's permit.
func (pm Permit) Release() {
	t := pm.tok
	if t == nil || !t.gen.CompareAndSwap(pm.gen, pm.gen+1) {
		return
	}
	p := t.pool
	t.pool = nil
	permitTokens.Put(t)
	p.release()
}

// Held reports whether pm was granted by Acquire (it stays true after
// Release).
func (pm Permit) Held() bool { return pm.tok != nil }

// Acquire takes a permit, waiting in the FIFO queue if none is free.
//
// It returns a permit that the caller must Release once it is done
// (a defer right after the error check covers success, error and panic), or
// the zero Permit and an error wrapping ErrFull (queue full, rejected without
// waiting), ErrWaitTimeout (waited MaxWait) or ErrCancelled (ctx ended first,
// also wrapping ctx.Err()). On error the pool is left unchanged: a permit
// handed to a caller at the very instant its context ended is passed on to
// the next waiter, never leaked. A ctx that is already done never acquires.
func (p *Pool) Acquire(ctx context.Context) (Permit, error) {
	if ctx.Err() == nil {
		s := p.state.Load()
		if s < uint64(p.size) {
			if p.racy {
				return p.acquireRacy(), nil
			}
			if p.state.CompareAndSwap(s, s+1) {
				// s < size implies waiting == 0 and a free permit.
				p.zeroWaitAcquired.Add(1)
				if s+1 == uint64(p.size) {
					p.markExhausted()
				}
				return p.newPermit(), nil
			}
		}
	}
	return p.acquireSlow(ctx)
}

// acquireRacy is Acquire under the racy-counter TEST DEFECT, after the
// check found a permit free: it yields, as a log line or a metric call
// between the check and the increment would, then increments whatever the
// count has become, so that callers arriving together all pass the check
// and the limit is exceeded. The increment is atomic (the state stays
// consistent and free of data races, and the count returns to zero as the
// permits are released); only the check and the increment are not one.
// While more than size permits are in use, other callers see the pool full
// and queue or are rejected as usual.
func (p *Pool) acquireRacy() Permit {
	runtime.Gosched()
	if uint32(p.state.Add(1)) == p.size {
		p.markExhausted()
	}
	p.zeroWaitAcquired.Add(1)
	return p.newPermit()
}

func (p *Pool) acquireSlow(ctx context.Context) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, p.cancelled(err)
	}
	p.mu.Lock()
	for {
		s := p.state.Load()
		waiting, inUse := s>>32, uint32(s)
		switch {
		case waiting == 0 && inUse < p.size:
			if p.state.CompareAndSwap(s, s+1) {
				p.mu.Unlock()
				p.zeroWaitAcquired.Add(1)
				if inUse+1 == p.size {
					p.markExhausted()
				}
				return p.newPermit(), nil
			}
		case waiting >= uint64(p.queue):
			p.mu.Unlock()
			p.rejFull.Add(1)
			return Permit{}, p.errFull
		default:
			if p.state.CompareAndSwap(s, s+waitingOne) {
				return p.wait(ctx)
			}
		}
	}
}

// wait enqueues the caller (mu held on entry, released here) and blocks
// until a permit is handed over, MaxWait passes or ctx ends.
func (p *Pool) wait(ctx context.Context) (Permit, error) {
	w := &waiter{ready: make(chan struct{})}
	p.push(w)
	p.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(p.maxWait)
	defer timer.Stop()
	select {
	case <-w.ready:
		p.waitHist.observe(time.Since(start))
		return p.newPermit(), nil
	case <-timer.C:
		if p.dequeue(w) {
			// Granted at the instant the timer fired: keep it, it arrived
			// within the wait budget.
			p.waitHist.observe(time.Since(start))
			return p.newPermit(), nil
		}
		p.rejWaitTimeout.Add(1)
		return Permit{}, p.errWait
	case <-ctx.Done():
		if p.dequeue(w) {
			// Granted at the instant ctx ended: the caller is gone, pass the
			// permit on instead of leaking it.
			p.release()
		}
		return Permit{}, p.cancelled(ctx.Err())
	}
}

func (p *Pool) cancelled(cause error) error {
	p.rejCancelled.Add(1)
	return fmt.Errorf("pool %q: %w: %w", p.name, ErrCancelled, cause)
}

// dequeue removes w from the queue unless it has already been granted a
// permit, and reports whether it had been granted.
func (p *Pool) dequeue(w *waiter) (granted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted {
		return true
	}
	p.unlink(w)
	p.state.Add(^uint64(waitingOne - 1)) // waiting--
	return false
}

// release frees one permit, or hands it to the queue head.
func (p *Pool) release() {
	s := p.state.Load()
	if s>>32 == 0 && p.state.CompareAndSwap(s, s-1) {
		if s == uint64(p.size) {
			p.exhaustedSince.Store(0) // a permit is free again
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		s := p.state.Load()
		if s>>32 > 0 {
			// Hand-off: in use stays the same, one fewer waiter. Only mu
			// holders change the state while waiters exist.
			w := p.head
			p.unlink(w)
			p.state.Add(^uint64(waitingOne - 1))
			w.granted = true
			close(w.ready)
			return
		}
		if p.state.CompareAndSwap(s, s-1) {
			if s == uint64(p.size) {
				p.exhaustedSince.Store(0)
			}
			return
		}
	}
}

// markExhausted records that the last free permit was just taken. A stale
// mark from a racing release is possible but harmless: the next release
// from full clears it.
func (p *Pool) markExhausted() { p.exhaustedSince.CompareAndSwap(0, time.Now().UnixNano()) }

func (p *Pool) push(w *waiter) {
	w.prev = p.tail
	if p.tail != nil {
		p.tail.next = w
	} else {
		p.head = w
	}
	p.tail = w
}

func (p *Pool) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	w.prev, w.next = nil, nil
}
