package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"golang.org/x/sync/semaphore"
)

func mustPool(t testing.TB, cfg PoolConfig) *Pool {
	t.Helper()
	p, err := NewPool("test", cfg)
	if err != nil {
		t.Fatalf("NewPool(%+v): %v", cfg, err)
	}
	return p
}

func TestPoolConfigValidate(t *testing.T) {
	tests := []struct {
		cfg   PoolConfig
		field string // "" = valid
	}{
		{PoolConfig{Size: 1}, ""},
		{PoolConfig{Size: 10, Queue: 10, MaxWait: time.Millisecond}, ""},
		{PoolConfig{Size: 0}, "size"},
		{PoolConfig{Size: -1}, "size"},
		{PoolConfig{Size: 1 << 31}, "size"},
		{PoolConfig{Size: 1, Queue: -1}, "queue"},
		{PoolConfig{Size: 1, Queue: 1}, "max_wait"},
		{PoolConfig{Size: 1, MaxWait: -time.Second}, "max_wait"},
	}
	for _, tt := range tests {
		_, err := NewPool("p", tt.cfg)
		var ce *ConfigError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("NewPool(%+v) = %v, want nil", tt.cfg, err)
		case tt.field != "" && (!errors.As(err, &ce) || ce.Field != tt.field):
			t.Errorf("NewPool(%+v) = %v, want ConfigError on %q", tt.cfg, err, tt.field)
		case tt.field != "" && !errors.Is(err, ErrInvalidConfig):
			t.Errorf("NewPool(%+v) = %v, does not wrap ErrInvalidConfig", tt.cfg, err)
		}
	}
}

// TestPoolImmediateOutcomes: a pool with `held` permits taken and `waiting`
// callers queued answers a new Acquire as expected without blocking.
func TestPoolImmediateOutcomes(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name          string
		size, queue   int
		held, waiting int
		ctx           context.Context
		want          error // nil = acquired
	}{
		{"free permit", 2, 0, 1, 0, context.Background(), nil},
		{"no queue, full", 2, 0, 2, 0, context.Background(), ErrFull},
		{"queue full", 1, 2, 1, 2, context.Background(), ErrFull},
		{"done ctx with free permit", 2, 0, 0, 0, cancelled, ErrCancelled},
		{"done ctx, would queue", 1, 2, 1, 0, cancelled, ErrCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPool(t, PoolConfig{Size: tt.size, Queue: tt.queue, MaxWait: time.Minute})
			var held []Permit
			for range tt.held {
				pm, err := p.Acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, pm)
			}
			wctx, stopWaiters := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range tt.waiting {
				wg.Go(func() { p.Acquire(wctx) })
			}
			testkit.WaitFor(t, 10*time.Second, "waiters to queue", func() bool { return p.Snapshot().Waiting == tt.waiting })

			pm, err := p.Acquire(tt.ctx)
			if !errors.Is(err, tt.want) || (tt.want == nil) != pm.Held() {
				t.Errorf("%+v: Acquire = (%v, %v), want error %v", tt, pm, err, tt.want)
			}
			if errors.Is(err, ErrCancelled) && !errors.Is(err, context.Canceled) {
				t.Errorf("%+v: %v does not wrap context.Canceled", tt, err)
			}
			pm.Release()
			stopWaiters()
			wg.Wait()
			for _, h := range held {
				h.Release()
			}
			if s := p.Snapshot(); s.InUse != 0 || s.Waiting != 0 {
				t.Errorf("%+v: ends with %+v", tt, s)
			}
		})
	}
}

func TestPoolFIFO(t *testing.T) {
	const n = 8
	p := mustPool(t, PoolConfig{Size: 1, Queue: n, MaxWait: time.Minute})
	first, _ := p.Acquire(context.Background())
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pm, err := p.Acquire(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			pm.Release()
		})
		testkit.WaitFor(t, 10*time.Second, "waiter to queue", func() bool { return p.Snapshot().Waiting == i+1 })
	}
	first.Release()
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d got the permit, want %d (FIFO)", got, want)
		}
		want++
	}
}

func TestPoolWaitTimeoutAndCancel(t *testing.T) {
	tests := []struct {
		name   string
		cancel bool
		want   []error
	}{
		{"wait timeout", false, []error{ErrWaitTimeout}},
		{"cancel while waiting", true, []error{ErrCancelled, context.Canceled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxWait := 20 * time.Millisecond
			if tt.cancel {
				maxWait = time.Minute
			}
			p := mustPool(t, PoolConfig{Size: 1, Queue: 1, MaxWait: maxWait})
			held, _ := p.Acquire(context.Background())
			defer held.Release()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { _, err := p.Acquire(ctx); done <- err }()
			if tt.cancel {
				testkit.WaitFor(t, 10*time.Second, "waiter to queue", func() bool { return p.Snapshot().Waiting == 1 })
				cancel()
			}
			err := <-done
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("%s: err = %v, want it to wrap %v", tt.name, err, w)
				}
			}
			if !tt.cancel && time.Since(start) < maxWait {
				t.Errorf("timed out after %v, before MaxWait %v", time.Since(start), maxWait)
			}
			s := p.Snapshot()
			if s.Waiting != 0 || s.InUse != 1 || s.Rejected.Total() != 1 {
				t.Errorf("%s: snapshot %+v", tt.name, s)
			}
		})
	}
}

func TestPermitDoubleReleaseIsHarmless(t *testing.T) {
	p := mustPool(t, PoolConfig{Size: 3})
	a, _ := p.Acquire(context.Background())
	b, _ := p.Acquire(context.Background())
	a.Release()
	a.Release()
	var zero Permit
	zero.Release()
	if s := p.Snapshot(); s.InUse != 1 {
		t.Fatalf("after releasing one of two permits twice, in use = %d, want 1", s.InUse)
	}
	copied := b
	copied.Release()
	b.Release() // the copy already released it
	if s := p.Snapshot(); s.InUse != 0 {
		t.Fatalf("after releasing a permit through a copy and the original, in use = %d, want 0", s.InUse)
	}
	c, _ := p.Acquire(context.Background()) // may reuse a recycled token
	d, _ := p.Acquire(context.Background())
	a.Release() // stale: must not free c or d
	b.Release()
	if s := p.Snapshot(); s.InUse != 2 {
		t.Fatalf("a stale release freed another holder's permit: in use = %d, want 2", s.InUse)
	}
	c.Release()
	d.Release()
	if s := p.Snapshot(); s.InUse != 0 || s.Acquired != 4 {
		t.Fatalf("snapshot %+v, want 0 in use and 4 acquired", s)
	}
}

func TestPermitReleasedOnPanic(t *testing.T) {
	p := mustPool(t, PoolConfig{Size: 1})
	func() {
		defer func() { _ = recover() }()
		pm, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer pm.Release()
		panic("boom")
	}()
	if s := p.Snapshot(); s.InUse != 0 {
		t.Fatalf("in use = %d after a panicking holder, want 0", s.InUse)
	}
}

func TestPoolSnapshotWaitHistogram(t *testing.T) {
	p := mustPool(t, PoolConfig{Size: 1, Queue: 1, MaxWait: time.Minute})
	held, _ := p.Acquire(context.Background())
	got := make(chan Permit)
	go func() { pm, _ := p.Acquire(context.Background()); got <- pm }()
	testkit.WaitFor(t, 10*time.Second, "waiter to queue", func() bool { return p.Snapshot().Waiting == 1 })
	held.Release()
	(<-got).Release()
	s := p.Snapshot()
	if s.Acquired != 2 || s.Wait.Count != 2 || s.Wait.Sum <= 0 {
		t.Fatalf("snapshot %+v: want 2 acquisitions, one with a positive wait", s)
	}
	last := s.Wait.Cumulative[len(s.Wait.Cumulative)-1]
	if s.Wait.Cumulative[0] < 1 || last != 2 {
		t.Fatalf("cumulative buckets %v: want the zero wait in the first and both by the last", s.Wait.Cumulative)
	}
}

// TestPoolBurst releases thousands of goroutines at once against a small
// pool: in flight never exceeds the limit and every attempt is counted.
func TestPoolBurst(t *testing.T) {
	const attempts, size = 4000, 8
	p := mustPool(t, PoolConfig{Size: size, Queue: 16, MaxWait: 20 * time.Millisecond})
	var inFlight, maxInFlight, acquired, rejected atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range attempts {
		wg.Go(func() {
			<-start
			pm, err := p.Acquire(context.Background())
			if err != nil {
				rejected.Add(1)
				return
			}
			acquired.Add(1)
			n := inFlight.Add(1)
			for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
			}
			runtime.Gosched()
			inFlight.Add(-1)
			pm.Release()
		})
	}
	close(start)
	wg.Wait()
	s := p.Snapshot()
	if maxInFlight.Load() > size {
		t.Errorf("max in flight %d > limit %d", maxInFlight.Load(), size)
	}
	if acquired.Load()+rejected.Load() != attempts || s.Acquired+s.Rejected.Total() != attempts {
		t.Errorf("acquired %d + rejected %d (snapshot %d + %d) != attempts %d",
			acquired.Load(), rejected.Load(), s.Acquired, s.Rejected.Total(), attempts)
	}
	if uint64(acquired.Load()) != s.Acquired || s.InUse != 0 || s.Waiting != 0 {
		t.Errorf("snapshot %+v disagrees with observed acquired %d", s, acquired.Load())
	}
}

// TestPoolRandomInterleavings runs seeded random acquire / cancel / timeout
// / release / double-release sequences from many goroutines and checks that
// the pool ends empty and consistent.
func TestPoolRandomInterleavings(t *testing.T) {
	const workers, ops, size = 12, 400, 3
	p := mustPool(t, PoolConfig{Size: size, Queue: 4, MaxWait: 500 * time.Microsecond})
	var inFlight atomic.Int64
	var attempts atomic.Uint64
	var wg sync.WaitGroup
	deadline := time.Now().Add(4 * time.Second)
	for w := range workers {
		rng := rand.New(rand.NewPCG(42, uint64(w)))
		wg.Go(func() {
			for i := 0; i < ops && time.Now().Before(deadline); i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(4) == 0 {
					go cancel() // races with the grant
				}
				attempts.Add(1)
				pm, err := p.Acquire(ctx)
				if err == nil {
					if n := inFlight.Add(1); n > size {
						t.Errorf("in flight %d > size %d", n, size)
					}
					if rng.IntN(2) == 0 {
						runtime.Gosched()
					}
					inFlight.Add(-1)
					pm.Release()
					if rng.IntN(5) == 0 {
						pm.Release()
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	s := p.Snapshot()
	if s.InUse != 0 || s.Waiting != 0 {
		t.Fatalf("pool ends with %d in use, %d waiting: %+v", s.InUse, s.Waiting, s)
	}
	if s.Acquired+s.Rejected.Total() != attempts.Load() {
		t.Fatalf("acquired %d + rejected %d != attempts %d", s.Acquired, s.Rejected.Total(), attempts.Load())
	}
}

// TestPoolCancelAtReleaseLeaksNothing: a waiter cancelled at the instant the
// holder releases either gets the permit or passes it on; the permit is
// never lost (the historical leak of several semaphore libraries).
func TestPoolCancelAtReleaseLeaksNothing(t *testing.T) {
	for i := range 1500 {
		p := mustPool(t, PoolConfig{Size: 1, Queue: 2, MaxWait: time.Minute})
		held, _ := p.Acquire(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan Permit, 1)
		go func() { pm, _ := p.Acquire(ctx); got <- pm }()
		second := make(chan Permit, 1)
		if i%2 == 1 { // a second waiter must receive the passed-on permit
			testkit.WaitFor(t, 10*time.Second, "first waiter", func() bool { return p.Snapshot().Waiting == 1 })
			go func() { pm, _ := p.Acquire(context.Background()); second <- pm }()
			testkit.WaitFor(t, 10*time.Second, "second waiter", func() bool { return p.Snapshot().Waiting == 2 })
		} else {
			testkit.WaitFor(t, 10*time.Second, "waiter", func() bool { return p.Snapshot().Waiting == 1 })
			second <- Permit{}
		}
		go cancel()
		held.Release()
		(<-got).Release()
		(<-second).Release()
		if s := p.Snapshot(); s.InUse != 0 || s.Waiting != 0 {
			t.Fatalf("iteration %d: leaked: %+v", i, s)
		}
		if pm, err := p.Acquire(context.Background()); err != nil {
			t.Fatalf("iteration %d: pool unusable after cancel-at-release: %v", i, err)
		} else {
			pm.Release()
		}
		cancel()
	}
}

func benchPool(b *testing.B, size int) *Pool {
	p, err := NewPool("bench", PoolConfig{Size: size, Queue: 1024, MaxWait: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkAcquireRelease compares the pool with golang.org/x/sync/semaphore.
// uncontended: one goroutine; parallel-free: one goroutine per core, a
// permit each (contention on the pool's memory only); parallel-size1: one
// goroutine per core against a single permit (every call queues).
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	procs := runtime.GOMAXPROCS(0)
	pool := func(size int) func(*testing.B) {
		return func(b *testing.B) {
			p := benchPool(b, size)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pm, err := p.Acquire(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					pm.Release()
				}
			})
		}
	}
	xsync := func(size int) func(*testing.B) {
		return func(b *testing.B) {
			s := semaphore.NewWeighted(int64(size))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.Acquire(ctx, 1); err != nil {
						b.Error(err)
						return
					}
					s.Release(1)
				}
			})
		}
	}
	b.Run("pool/uncontended", func(b *testing.B) {
		p := benchPool(b, 1)
		b.ReportAllocs()
		for b.Loop() {
			pm, _ := p.Acquire(ctx)
			pm.Release()
		}
	})
	b.Run("xsync/uncontended", func(b *testing.B) {
		s := semaphore.NewWeighted(1)
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
	b.Run("pool/parallel-free", pool(procs))
	b.Run("xsync/parallel-free", xsync(procs))
	b.Run("pool/parallel-size1", pool(1))
	b.Run("xsync/parallel-size1", xsync(1))
}
