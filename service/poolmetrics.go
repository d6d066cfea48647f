package service

import (
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/prometheus/client_golang/prometheus"
)

// WaitBuckets are the upper bounds, in seconds, of the wait-time histogram
// (bulkhead_pool_wait_seconds and Snapshot.Wait).
var WaitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// waitHistogram is a lock-free fixed-bucket histogram of queue waits. It is
// written only by callers that actually queued, so the hot path never
// touches it.
type waitHistogram struct {
	counts [15]atomic.Uint64 // len(WaitBuckets)+1, the last is +Inf; not cumulative
	sumNs  atomic.Int64
}

func (h *waitHistogram) observe(d time.Duration) {
	sec := d.Seconds()
	i := 0
	for i < len(WaitBuckets) && sec > WaitBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
}

// WaitSnapshot is a point-in-time copy of a pool's wait-time histogram. It
// covers every successful acquisition: those that did not queue count as a
// zero wait. Rejected callers are not in it (see Rejected).
type WaitSnapshot struct {
	// Bounds are the bucket upper bounds in seconds (WaitBuckets).
	Bounds []float64
	// Cumulative[i] is the number of acquisitions that waited at most
	// Bounds[i].
	Cumulative []uint64
	// Count is the number of acquisitions (equal to Snapshot.Acquired).
	Count uint64
	// Sum is the total time spent waiting.
	Sum time.Duration
}

// Rejections counts rejected Acquire calls by reason.
type Rejections struct {
	Full        uint64 // ErrFull
	WaitTimeout uint64 // ErrWaitTimeout
	Cancelled   uint64 // ErrCancelled
}

// Total is the sum over all reasons.
func (r Rejections) Total() uint64 { return r.Full + r.WaitTimeout + r.Cancelled }

// PoolSnapshot is a point-in-time view of a pool. Fields are read one by
// one without a global lock, so under load they may be off by in-flight
// calls relative to each other; each one is exact on its own.
type PoolSnapshot struct {
	Name       string
	Limit      int // Size
	QueueLimit int // Queue
	InUse      int
	Waiting    int
	Acquired   uint64
	Rejected   Rejections
	Wait       WaitSnapshot
	// ExhaustedSince is when the last free permit was taken, zero while a
	// permit is free: the start of the current exhaustion, to the nanosecond.
	ExhaustedSince time.Time
}

// Snapshot returns the pool's current metrics. It is safe to call
// concurrently with Acquire and Release.
func (p *Pool) Snapshot() PoolSnapshot {
	s := p.state.Load()
	snap := PoolSnapshot{
		Name:       p.name,
		Limit:      int(p.size),
		QueueLimit: int(p.queue),
		InUse:      int(uint32(s)),
		Waiting:    int(s >> 32),
		Rejected: Rejections{
			Full:        p.rejFull.Load(),
			WaitTimeout: p.rejWaitTimeout.Load(),
			Cancelled:   p.rejCancelled.Load(),
		},
	}
	snap.Wait = p.waitSnapshot()
	snap.Acquired = snap.Wait.Count
	if ns := p.exhaustedSince.Load(); ns != 0 {
		snap.ExhaustedSince = time.Unix(0, ns)
	}
	return snap
}

func (p *Pool) waitSnapshot() WaitSnapshot {
	zero := p.zeroWaitAcquired.Load()
	ws := WaitSnapshot{
		Bounds:     WaitBuckets,
		Cumulative: make([]uint64, len(WaitBuckets)),
		Sum:        time.Duration(p.waitHist.sumNs.Load()),
	}
	cum := zero
	for i := range WaitBuckets {
		cum += p.waitHist.counts[i].Load()
		ws.Cumulative[i] = cum
	}
	ws.Count = cum + p.waitHist.counts[len(WaitBuckets)].Load()
	return ws
}

// poolMetrics holds the descriptors of one pool's metrics (pool is a
// constant label, so several pools can be registered in one registry).
type poolMetrics struct {
	limit, inUse, waiting, queueLimit, acquired, rejected, wait, exhaustedSince *prometheus.Desc
}

func newPoolMetrics(pool string) poolMetrics {
	l := prometheus.Labels{"pool": pool}
	d := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, l)
	}
	return poolMetrics{
		limit:      d(rundata.MetricPoolLimit, "Permits of the pool (its concurrency limit)."),
		inUse:      d(rundata.MetricPoolInUse, "Permits currently held."),
		waiting:    d(rundata.MetricPoolWaiting, "Callers currently waiting in the queue."),
		queueLimit: d(rundata.MetricPoolQueueLimit, "Most callers that may wait at once."),
		acquired:   d("bulkhead_pool_acquired_total", "Permits granted."),
		rejected:   d(rundata.MetricPoolRejected, "Acquire calls rejected, by reason (full, wait_timeout, cancelled).", "reason"),
		wait:       d("bulkhead_pool_wait_seconds", "Time granted callers waited for a permit (zero when one was free)."),
		exhaustedSince: d(rundata.MetricPoolExhaustedSince,
			"Unix time at which the last free permit was taken; 0 while a permit is free."),
	}
}

// Describe implements prometheus.Collector.
func (p *Pool) Describe(ch chan<- *prometheus.Desc) {
	m := p.metrics
	for _, d := range []*prometheus.Desc{m.limit, m.inUse, m.waiting, m.queueLimit, m.acquired, m.rejected, m.wait, m.exhaustedSince} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; it reads the pool's counters at
// scrape time.
func (p *Pool) Collect(ch chan<- prometheus.Metric) {
	m, s := p.metrics, p.Snapshot()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	gauge(m.limit, s.Limit)
	gauge(m.inUse, s.InUse)
	gauge(m.waiting, s.Waiting)
	gauge(m.queueLimit, s.QueueLimit)
	since := 0.0
	if !s.ExhaustedSince.IsZero() {
		since = float64(s.ExhaustedSince.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(m.exhaustedSince, prometheus.GaugeValue, since)
	ch <- prometheus.MustNewConstMetric(m.acquired, prometheus.CounterValue, float64(s.Acquired))
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"full", s.Rejected.Full}, {"wait_timeout", s.Rejected.WaitTimeout}, {"cancelled", s.Rejected.Cancelled}} {
		ch <- prometheus.MustNewConstMetric(m.rejected, prometheus.CounterValue, float64(r.n), r.reason)
	}
	buckets := make(map[float64]uint64, len(s.Wait.Bounds))
	for i, b := range s.Wait.Bounds {
		buckets[b] = s.Wait.Cumulative[i]
	}
	ch <- prometheus.MustNewConstHistogram(m.wait, s.Wait.Count, s.Wait.Sum.Seconds(), buckets)
}

var _ prometheus.Collector = (*Pool)(nil)
