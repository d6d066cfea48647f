package service

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
)

// ConnsLayout is how the service's HTTP connections to its dependencies
// are pooled. Whatever the layout, a dependency call holds one connection
// slot of its pool from sending the request until the response body is
// read and closed, and the time it waited for that slot is measured.
type ConnsLayout string

const (
	// ConnsPerDependency: every dependency has its own pool of Conns
	// connections (the service's behaviour before layouts existed). The
	// pools are named after the endpoints.
	ConnsPerDependency ConnsLayout = "per-dependency"
	// ConnsShared: one pool, named "shared", of Conns connections in all,
	// used by every dependency, like a database/sql pool shared by two
	// query classes: a slow dependency holding connections makes calls to
	// the others wait for one, whatever their worker pools allow.
	ConnsShared ConnsLayout = "shared"
)

// SharedConnPool is the name of the one connection pool of ConnsShared.
const SharedConnPool = rundata.SharedConnPool

// ParseConnsLayout parses "per-dependency" or "shared" (the empty string is
// not a layout; Config treats a zero ConnsLayout as ConnsPerDependency).
// The error is a *ConfigError for the field conns_layout.
func ParseConnsLayout(s string) (ConnsLayout, error) {
	switch l := ConnsLayout(s); l {
	case ConnsPerDependency, ConnsShared:
		return l, nil
	}
	return "", fieldErrorf("conns_layout", "must be %q or %q, got %q", ConnsPerDependency, ConnsShared, s)
}

// connPool bounds the round trips in flight through it: a call holds one of
// its slots from sending the request until the response body is closed.
// It is a FIFO semaphore (golang.org/x/sync/semaphore) with counts of the
// slots in use and the callers waiting, read at scrape time; it is safe for
// concurrent use and implements prometheus.Collector.
type connPool struct {
	name    string
	limit   int64
	sem     *semaphore.Weighted
	inUse   atomic.Int64
	waiting atomic.Int64
	// exhaustedSince is when (Unix ns) the last free slot was taken, 0
	// while one is free. Set and cleared next to the count without a lock:
	// a take and a release that race may leave the mark set a moment
	// early, never a scrape's worth late.
	exhaustedSince atomic.Int64

	limitDesc, inUseDesc, waitingDesc, sinceDesc *prometheus.Desc
}

func newConnPool(name string, limit int) *connPool {
	l := prometheus.Labels{"pool": name}
	return &connPool{
		name: name, limit: int64(limit), sem: semaphore.NewWeighted(int64(limit)),
		limitDesc:   prometheus.NewDesc(rundata.MetricConnPoolLimit, "Connection slots of the pool (its limit on concurrent dependency round trips).", nil, l),
		inUseDesc:   prometheus.NewDesc(rundata.MetricConnPoolInUse, "Connection slots held by dependency calls in their round trip.", nil, l),
		waitingDesc: prometheus.NewDesc(rundata.MetricConnPoolWaiting, "Dependency calls waiting for a connection slot.", nil, l),
		sinceDesc:   prometheus.NewDesc(rundata.MetricConnPoolExhaustedSince, "When (Unix seconds) the last free connection slot was taken; 0 while one is free.", nil, l),
	}
}

// acquire takes a slot, waiting as long as ctx allows, and returns how long
// it waited. When ctx ends first it returns ctx.Err() and holds nothing.
func (c *connPool) acquire(ctx context.Context) (time.Duration, error) {
	if c.sem.TryAcquire(1) {
		c.took()
		return 0, nil
	}
	start := time.Now()
	c.waiting.Add(1)
	err := c.sem.Acquire(ctx, 1)
	c.waiting.Add(-1)
	waited := time.Since(start)
	if err != nil {
		return waited, err
	}
	c.took()
	return waited, nil
}

// took counts a slot taken and marks the moment the last one went.
func (c *connPool) took() {
	if c.inUse.Add(1) >= c.limit {
		c.exhaustedSince.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// release returns a slot taken by a successful acquire. A slot handed to a
// waiting caller keeps the pool exhausted: only a slot left free clears the
// mark.
func (c *connPool) release() {
	if c.inUse.Add(-1) < c.limit && c.waiting.Load() == 0 {
		c.exhaustedSince.Store(0)
	}
	c.sem.Release(1)
}

// connPoolSnapshot is a point-in-time view of a connection pool; the
// counts are read one by one, each exact on its own.
type connPoolSnapshot struct {
	Name                  string
	Limit, InUse, Waiting int
	// ExhaustedSince is when the last free slot was taken, zero while
	// one is free.
	ExhaustedSince time.Time
}

func (c *connPool) snapshot() connPoolSnapshot {
	s := connPoolSnapshot{Name: c.name, Limit: int(c.limit), InUse: int(c.inUse.Load()), Waiting: int(c.waiting.Load())}
	if ns := c.exhaustedSince.Load(); ns != 0 {
		s.ExhaustedSince = time.Unix(0, ns)
	}
	return s
}

// Describe implements prometheus.Collector.
func (c *connPool) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limitDesc
	ch <- c.inUseDesc
	ch <- c.waitingDesc
	ch <- c.sinceDesc
}

// Collect implements prometheus.Collector.
func (c *connPool) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	for _, g := range []struct {
		d *prometheus.Desc
		v int
	}{{c.limitDesc, s.Limit}, {c.inUseDesc, s.InUse}, {c.waitingDesc, s.Waiting}} {
		ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, float64(g.v))
	}
	since := 0.0
	if !s.ExhaustedSince.IsZero() {
		since = float64(s.ExhaustedSince.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(c.sinceDesc, prometheus.GaugeValue, since)
}

var _ prometheus.Collector = (*connPool)(nil)

// newConnPools builds the connection pools of layout (zero: per-dependency)
// for the endpoints, in order, and the pool each endpoint's calls draw from.
func newConnPools(layout ConnsLayout, conns int, endpoints []string) ([]*connPool, map[string]*connPool) {
	byEndpoint := map[string]*connPool{}
	if layout == ConnsShared {
		p := newConnPool(SharedConnPool, conns)
		for _, e := range endpoints {
			byEndpoint[e] = p
		}
		return []*connPool{p}, byEndpoint
	}
	pools := make([]*connPool, len(endpoints))
	for i, e := range endpoints {
		pools[i] = newConnPool(e, conns)
		byEndpoint[e] = pools[i]
	}
	return pools, byEndpoint
}

// connWaitMetrics are the per-dependency series of connection waits.
type connWaitMetrics struct {
	wait     *prometheus.HistogramVec
	hold     *prometheus.HistogramVec
	timeouts *prometheus.CounterVec
}

func newConnWaitMetrics() connWaitMetrics {
	dep := []string{"dependency"}
	return connWaitMetrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    rundata.MetricConnWait,
			Help:    "Time dependency calls waited for a connection slot of their pool (zero when one was free); calls that never got one are in " + rundata.MetricConnWaitTimeouts + ".",
			Buckets: append([]float64{0}, WaitBuckets...),
		}, dep),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    rundata.MetricConnHold,
			Help:    "Time dependency calls held their connection slot, from getting it to its release: a query's time, an HTTP call's round trip, without the wait for the slot.",
			Buckets: WaitBuckets,
		}, dep),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: rundata.MetricConnWaitTimeouts,
			Help: "Dependency calls whose deadline passed while they waited for a connection slot.",
		}, dep),
	}
}

func (m connWaitMetrics) register(r prometheus.Registerer, endpoints []string) {
	r.MustRegister(m.wait, m.hold, m.timeouts)
	for _, e := range endpoints { // export zeros from the start
		m.wait.WithLabelValues(e)
		m.hold.WithLabelValues(e)
		m.timeouts.WithLabelValues(e)
	}
}
