package service

import (
	"errors"
	"net/http"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/prometheus/client_golang/prometheus"
)

// Limits of a stub's capacity (DepConfig.Capacity and Queue).
const (
	// MaxDepCapacity bounds DepConfig.Capacity.
	MaxDepCapacity = 1 << 20
	// MaxDepQueue bounds DepConfig.Queue, and is the queue of a stub whose
	// Queue is zero: effectively unbounded for any experiment (a waiting
	// request holds a goroutine and a connection), yet finite.
	MaxDepQueue = 10000
	// MaxDepQueueWait is the longest a request waits for a slot; one that
	// waited this long is answered 503 with X-Dep-Overloaded: wait-timeout.
	// No experiment's caller waits that long (a spec's client timeout is at
	// most 10m), so in practice callers leave the queue by giving up.
	MaxDepQueueWait = 10 * time.Minute
)

func (c DepConfig) validateCapacity() error {
	switch {
	case c.Capacity < 0 || c.Capacity > MaxDepCapacity:
		return fieldErrorf("capacity", "must be between 0 (unlimited) and %d, got %d", MaxDepCapacity, c.Capacity)
	case c.Queue < 0 || c.Queue > MaxDepQueue:
		return fieldErrorf("queue", "must be between 0 (up to %d) and %d, got %d", MaxDepQueue, MaxDepQueue, c.Queue)
	case c.Queue > 0 && c.Capacity == 0:
		return fieldErrorf("queue", "applies only with a capacity (capacity 0 is unlimited: nobody waits), got %d", c.Queue)
	}
	return nil
}

// queueLimit is the effective queue of a stub with a capacity.
func (c DepConfig) queueLimit() int {
	if c.Queue == 0 {
		return MaxDepQueue
	}
	return c.Queue
}

// overloaded answers a request that got no slot: 503 with
// X-Dep-Overloaded, or nothing if its caller went away.
func overloaded(w http.ResponseWriter, err error) {
	reason := "queue-full"
	switch {
	case errors.Is(err, ErrCancelled):
		return // the caller is gone: nobody to answer
	case errors.Is(err, ErrWaitTimeout):
		reason = "wait-timeout"
	}
	w.Header().Set(rundata.HeaderDepOverloaded, reason)
	http.Error(w, "dependency overloaded: "+reason, http.StatusServiceUnavailable)
}

// depCapacityCollector exports a stub's capacity metrics, read from its
// slot pool (or, with unlimited capacity, its in-flight count) at scrape
// time.
type depCapacityCollector struct {
	d                                            *Dep
	capacity, queueLimit, inService, queueLength *prometheus.Desc
	wait, overloaded, abandoned                  *prometheus.Desc
}

func newDepCapacityCollector(d *Dep) *depCapacityCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &depCapacityCollector{
		d:           d,
		capacity:    desc("bulkheadlab_dep_capacity", "Requests the stub serves at once; 0: unlimited."),
		queueLimit:  desc("bulkheadlab_dep_queue_limit", "Most requests that may wait for a slot; 0 with unlimited capacity."),
		inService:   desc("bulkheadlab_dep_in_service", "Requests being served (holding a slot; with unlimited capacity, every request in the stub)."),
		queueLength: desc("bulkheadlab_dep_queue_length", "Requests waiting for a slot."),
		wait:        desc("bulkheadlab_dep_queue_wait_seconds", "Time requests that got a slot waited for it (zero when one was free); empty with unlimited capacity."),
		overloaded:  desc("bulkheadlab_dep_overloaded_total", "Requests answered 503 for want of room, by reason (queue_full, wait_timeout).", "reason"),
		abandoned:   desc("bulkheadlab_dep_queue_abandoned_total", "Requests whose caller went away before they got a slot."),
	}
}

// Describe implements prometheus.Collector.
func (c *depCapacityCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.capacity, c.queueLimit, c.inService, c.queueLength, c.wait, c.overloaded, c.abandoned} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *depCapacityCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	var s PoolSnapshot
	if c.d.slots != nil {
		s = c.d.slots.Snapshot()
	} else {
		s.InUse = int(c.d.inflight.Load())
		s.Wait.Bounds, s.Wait.Cumulative = WaitBuckets, make([]uint64, len(WaitBuckets))
	}
	gauge(c.capacity, float64(s.Limit))
	gauge(c.queueLimit, float64(s.QueueLimit))
	gauge(c.inService, float64(s.InUse))
	gauge(c.queueLength, float64(s.Waiting))
	counter(c.overloaded, s.Rejected.Full, "queue_full")
	counter(c.overloaded, s.Rejected.WaitTimeout, "wait_timeout")
	counter(c.abandoned, s.Rejected.Cancelled)
	buckets := make(map[float64]uint64, len(s.Wait.Bounds))
	for i, b := range s.Wait.Bounds {
		buckets[b] = s.Wait.Cumulative[i]
	}
	ch <- prometheus.MustNewConstHistogram(c.wait, s.Wait.Count, s.Wait.Sum.Seconds(), buckets)
}

var _ prometheus.Collector = (*depCapacityCollector)(nil)
