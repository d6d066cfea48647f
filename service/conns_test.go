package service

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/pflag"
)

// heldDep is a dependency that holds every call until release is called
// (or the caller goes away), announcing each arrival on arrived.
type heldDep struct {
	url     string
	arrived chan struct{}
	release func()
	calls   atomic.Int64
}

func startHeldDep(t *testing.T, capacity int) *heldDep {
	t.Helper()
	released := make(chan struct{})
	d := &heldDep{arrived: make(chan struct{}, capacity)}
	var once sync.Once
	d.release = func() { once.Do(func() { close(released) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.calls.Add(1)
		d.arrived <- struct{}{}
		select {
		case <-released:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("held"))
	}))
	t.Cleanup(func() { d.release(); srv.Close() })
	d.url = srv.URL
	return d
}

// awaitArrivals waits for n calls to reach d.
func (d *heldDep) awaitArrivals(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for i := range n {
		select {
		case <-d.arrived:
		case <-deadline:
			t.Fatalf("only %d of %d calls reached the held dependency", i, n)
		}
	}
}

// connWait returns the count and sum of dependency dep's connection-wait
// histogram and its wait-timeout counter, read from the registry.
func connWait(t *testing.T, s *Service, dep string) (count uint64, sum, timeouts float64) {
	t.Helper()
	fams, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if labelOf(m, "dependency") != dep {
				continue
			}
			switch f.GetName() {
			case rundata.MetricConnWait:
				count, sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				found++
			case rundata.MetricConnWaitTimeouts:
				timeouts = m.GetCounter().GetValue()
				found++
			}
		}
	}
	if found != 2 {
		t.Fatalf("registry lacks %s or %s for dependency %s", rundata.MetricConnWait, rundata.MetricConnWaitTimeouts, dep)
	}
	return count, sum, timeouts
}

// connHold returns the count and sum of dependency dep's connection-hold
// histogram, read from the registry.
func connHold(t *testing.T, s *Service, dep string) (count uint64, sum float64) {
	t.Helper()
	fams, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetName() == rundata.MetricConnHold && labelOf(m, "dependency") == dep {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("registry lacks %s for dependency %s", rundata.MetricConnHold, dep)
	return 0, 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func (s *Service) connPool(name string) connPoolSnapshot {
	for _, p := range s.connPools {
		if p.name == name {
			return p.snapshot()
		}
	}
	return connPoolSnapshot{}
}

// TestConnsLayout: a slow A holds K = 4 connections. With one connection
// pool shared by both dependencies, a call to B waits for a connection
// although B's own bulkhead has free permits; with a pool per dependency it
// does not wait at all.
func TestConnsLayout(t *testing.T) {
	const k = 4
	for _, tt := range []struct {
		layout  ConnsLayout
		poolOfA string // A's connection pool
		bWaits  bool
		metrics []string
	}{
		{"", EndpointA, false, []string{`bulkheadlab_conn_pool_limit{pool="a"} 4`, `bulkheadlab_conn_pool_limit{pool="b"} 4`}},
		{ConnsPerDependency, EndpointA, false, []string{`bulkheadlab_conn_pool_in_use{pool="a"} 4`, `bulkheadlab_conn_pool_in_use{pool="b"} 0`}},
		{ConnsShared, SharedConnPool, true, []string{`bulkheadlab_conn_pool_limit{pool="shared"} 4`, `bulkheadlab_conn_pool_in_use{pool="shared"} 4`}},
	} {
		name := string(tt.layout)
		if name == "" {
			name = "zero value"
		}
		t.Run(name, func(t *testing.T) {
			a := startHeldDep(t, k)
			b := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond, Size: 3})
			svc, url := startService(t, Config{
				Layout:  LayoutConfig{Mode: ModeBulkhead, PoolSize: 2 * k},
				Timeout: 30 * time.Second, ConnsLayout: tt.layout, Conns: k,
				Endpoints: TwoEndpoints(a.url, b),
			})
			c := testClient(t)
			var held sync.WaitGroup
			for range k {
				held.Go(func() { get(t, c, url+"/a", nil) })
			}
			a.awaitArrivals(t, k)
			if s := svc.connPool(tt.poolOfA); s.InUse != k || s.Limit != k {
				t.Fatalf("layout %q, A holding %d calls: connection pool %+v, want %d/%d in use", tt.layout, k, s, k, k)
			}
			metrics := get(t, c, url+"/metrics", nil).body
			for _, want := range append(tt.metrics, `bulkheadlab_conn_wait_seconds_count{dependency="a"} 4`,
				`bulkheadlab_conn_wait_timeouts_total{dependency="b"} 0`, `bulkheadlab_conn_pool_waiting{pool="`+tt.poolOfA+`"} 0`) {
				if !strings.Contains(metrics, want) {
					t.Errorf("layout %q: /metrics lacks %q", tt.layout, want)
				}
			}

			bDone := make(chan reply, 1)
			go func() { bDone <- get(t, c, url+"/b", nil) }()
			if tt.bWaits {
				testkit.WaitFor(t, 10*time.Second, "the call to B to wait for a connection", func() bool { return svc.connPool(SharedConnPool).Waiting == 1 })
				if s := svc.Layout().Pool(EndpointB).Snapshot(); s.InUse != 1 || s.Limit != k {
					t.Errorf("layout %q: B's bulkhead %d/%d in use while B waits for a connection, want 1/%d (room to spare)", tt.layout, s.InUse, s.Limit, k)
				}
				select {
				case r := <-bDone:
					t.Fatalf("layout %q: /b answered %d while A held every shared connection", tt.layout, r.status)
				default:
				}
				a.release()
			}
			r := <-bDone
			a.release()
			held.Wait()
			if r.status != http.StatusOK || r.body != "xxx" {
				t.Errorf("layout %q: /b = %d %q, want 200 xxx", tt.layout, r.status, r.body)
			}
			n, sum, timeouts := connWait(t, svc, EndpointB)
			if n != 1 || timeouts != 0 || (sum > 0) != tt.bWaits {
				t.Errorf("layout %q: B's connection wait: %d calls, %.6f s, %g timeouts; want 1 call, waited: %t, 0 timeouts",
					tt.layout, n, sum, timeouts, tt.bWaits)
			}
			if tt.bWaits {
				t.Logf("layout %q: B waited %.1f ms for a connection held by A", tt.layout, sum*1000)
			}
			// The hold is the call's own time, not its wait: B's stays at
			// its dependency's 1 ms however long it waited; A's calls held
			// theirs while B waited.
			hn, hsum := connHold(t, svc, EndpointB)
			if hn != 1 || hsum < 0.001 || hsum > 0.5 {
				t.Errorf("layout %q: B's connection hold: %d calls, %.6f s; want 1 call of ≥ 1 ms (its dependency's latency), not its wait", tt.layout, hn, hsum)
			}
			an, asum := connHold(t, svc, EndpointA)
			if an != k || asum/float64(k) < sum {
				t.Errorf("layout %q: A's connection hold: %d calls, mean %.6f s; want %d calls holding at least B's wait %.6f s", tt.layout, an, asum/float64(k), k, sum)
			}
		})
	}
}

// TestConnWaitTimeout: a call whose deadline passes while it waits for a
// connection is a timeout, counted as a connection-wait timeout, and never
// reaches the dependency.
func TestConnWaitTimeout(t *testing.T) {
	d := startHeldDep(t, 1)
	pool := newConnPool("x", 1)
	m := newConnWaitMetrics()
	dep := newDependency("a", d.url, 1, pool, m, newDecodeMetrics())
	defer dep.transport.CloseIdleConnections()
	if _, err := pool.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := dep.call(ctx, "id", 1<<10)
	if res.outcome != outcomeTimeout || !errors.Is(res.err, context.DeadlineExceeded) {
		t.Errorf("call while the only connection is held: outcome %q, error %v; want timeout wrapping DeadlineExceeded", res.outcome, res.err)
	}
	if got := counterValue(t, m.timeouts.WithLabelValues("a")); got != 1 {
		t.Errorf("connection-wait timeouts = %g, want 1", got)
	}
	if s := pool.snapshot(); s.InUse != 1 || s.Waiting != 0 {
		t.Errorf("after the timeout: pool %+v, want 1 in use (the test's), 0 waiting", s)
	}
	if n := d.calls.Load(); n != 0 {
		t.Errorf("the dependency saw %d calls, want 0", n)
	}
	pool.release()
	if s := pool.snapshot(); s.InUse != 0 {
		t.Errorf("after release: pool %+v, want 0 in use", s)
	}
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestConnsLayoutErrorsNameTheField(t *testing.T) {
	cfg := Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 2}, Timeout: time.Second,
		Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2"), ConnsLayout: "pooled"}
	var ce *ConfigError
	if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "conns_layout" || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Validate with conns layout %q = %v, want a *ConfigError for conns_layout", cfg.ConnsLayout, err)
	}
	deps := []string{"--dep-a", "http://127.0.0.1:1", "--dep-b", "http://127.0.0.1:2"}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--conns-layout", "pooled"}, "--conns-layout"},
		{[]string{"--conns-layout", "Shared"}, "--conns-layout"},
		{[]string{"--conns-layout", "shared", "--conns", "0"}, "--conns"},
	} {
		var f ServeFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(append(append([]string(nil), deps...), tc.args...)); err != nil {
			t.Fatal(err)
		}
		_, err := f.Config()
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != tc.flag {
			t.Errorf("serve %v: error %v, want a *FlagError for %s", tc.args, err, tc.flag)
		}
	}
}

// TestServeArgsConnsLayout: the layout survives ServeArgs and the flags,
// and the zero layout renders no flag (so older configs render as before).
func TestServeArgsConnsLayout(t *testing.T) {
	for _, layout := range []ConnsLayout{"", ConnsPerDependency, ConnsShared} {
		want := Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 4, Queue: 1, MaxWait: time.Second}, Timeout: time.Second,
			Conns: 3, ConnsLayout: layout, Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2")}
		args := ServeArgs(want)
		if has := strings.Contains(strings.Join(args, " "), "--conns-layout"); has != (layout != "") {
			t.Errorf("ServeArgs with layout %q: %v", layout, args)
		}
		var f ServeFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if got, err := f.Config(); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %v = %+v, %v; want %+v", args, got, err, want)
		}
	}
}

// BenchmarkConnPool compares the connection pool's uncontended and
// contended acquire/release with the obvious alternative, a buffered
// channel used as a semaphore (which has no FIFO order for its waiters and
// no way to give up on a context without a select per call).
func BenchmarkConnPool(b *testing.B) {
	ctx := context.Background()
	for _, limit := range []int{1, 64} {
		b.Run("semaphore/limit="+strconv.Itoa(limit), func(b *testing.B) {
			p := newConnPool("bench", limit)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.acquire(ctx); err != nil {
						b.Fatal(err)
					}
					p.release()
				}
			})
		})
		b.Run("channel/limit="+strconv.Itoa(limit), func(b *testing.B) {
			ch := make(chan struct{}, limit)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					select {
					case ch <- struct{}{}:
					case <-ctx.Done():
						b.Fatal(ctx.Err())
					}
					<-ch
				}
			})
		})
	}
}

// TestConnPoolExhaustedSince: the mark is set when the last free slot is
// taken, kept while a released slot goes straight to a waiting call, and
// cleared once a slot is left free.
func TestConnPoolExhaustedSince(t *testing.T) {
	p := newConnPool("x", 2)
	ctx := context.Background()
	if _, err := p.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if s := p.snapshot(); !s.ExhaustedSince.IsZero() {
		t.Fatalf("1 of 2 slots in use: exhausted since %v, want zero", s.ExhaustedSince)
	}
	before := time.Now()
	if _, err := p.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	since := p.snapshot().ExhaustedSince
	if since.Before(before) || since.After(time.Now()) {
		t.Fatalf("2 of 2 slots in use: exhausted since %v, want between %v and now", since, before)
	}
	got := make(chan error)
	go func() { _, err := p.acquire(ctx); got <- err }()
	for p.snapshot().Waiting == 0 {
		runtime.Gosched()
	}
	p.release() // handed to the waiting call
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if s := p.snapshot(); !s.ExhaustedSince.Equal(since) {
		t.Errorf("after a hand-off: exhausted since %v, want unchanged %v", s.ExhaustedSince, since)
	}
	p.release()
	if s := p.snapshot(); !s.ExhaustedSince.IsZero() {
		t.Errorf("a slot free again: exhausted since %v, want zero", s.ExhaustedSince)
	}
}
