// Package runtimestats exports what a starved or GC-bound Go process shows
// first — the runtime's scheduling latency (runtime/metrics
// /sched/latencies:seconds: how long runnable goroutines waited to run) and
// its GC pauses (/sched/pauses/total/gc:seconds) — as Prometheus histograms
// with fixed, fine buckets (the Go collector of client_golang re-buckets
// these in powers of ten, too coarse for a p99), and the runtime's CPU
// accounting, so that the GC's share of a process's CPU can be told
// (cpu.go). Every component of the
// harness registers it, and the runner reads its own process the same way.
package runtimestats

import (
	"math"
	"runtime/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names.
const (
	SchedLatency = "bulkheadlab_go_sched_latency_seconds"
	GCPause      = "bulkheadlab_go_gc_pause_seconds"
)

// Buckets are the upper bounds, in seconds, of both histograms: 25 µs to
// 2.5 s, about three per decade.
var Buckets = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3, 1, 2.5}

// source is one runtime metric and the name and help it is exported under.
type source struct{ name, metric, help string }

// readSources reads the runtime metrics of srcs now, in their order.
func readSources(srcs []source) []metrics.Sample {
	samples := make([]metrics.Sample, len(srcs))
	for i, s := range srcs {
		samples[i].Name = s.metric
	}
	metrics.Read(samples)
	return samples
}

var sources = []source{
	{SchedLatency, "/sched/latencies:seconds", "Time goroutines spent runnable before running (runtime/metrics /sched/latencies:seconds)."},
	{GCPause, "/sched/pauses/total/gc:seconds", "Stop-the-world GC pauses (runtime/metrics /sched/pauses/total/gc:seconds)."},
}

// collector reads runtime/metrics at scrape time. It is safe for concurrent
// use: every Collect reads a fresh sample set.
type collector struct {
	descs    []*prometheus.Desc
	cpuDescs []*prometheus.Desc
}

// NewCollector returns a collector of both histograms and the CPU
// counters.
func NewCollector() prometheus.Collector {
	c := &collector{cpuDescs: cpuDescs()}
	for _, s := range sources {
		c.descs = append(c.descs, prometheus.NewDesc(s.name, s.help, nil, nil))
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append(c.descs, c.cpuDescs...) {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for i, h := range Read() {
		m, err := prometheus.NewConstHistogram(c.descs[i], h.Count, h.Sum, h.Cumulative)
		if err == nil {
			ch <- m
		}
	}
	collectCPU(c.cpuDescs, ch)
}

// Histogram is one runtime histogram re-bucketed to Buckets.
type Histogram struct {
	Name string
	// Cumulative maps each bucket's upper bound to the number of
	// observations at or below it.
	Cumulative map[float64]uint64
	Count      uint64
	// Sum is estimated from the runtime's bucket midpoints (the runtime
	// keeps no exact sum).
	Sum float64
}

// Read samples both runtime histograms of this process now.
func Read() []Histogram {
	samples := readSources(sources)
	out := make([]Histogram, len(sources))
	for i, s := range samples {
		out[i] = Histogram{Name: sources[i].name, Cumulative: map[float64]uint64{}}
		if s.Value.Kind() != metrics.KindFloat64Histogram {
			for _, b := range Buckets {
				out[i].Cumulative[b] = 0
			}
			continue
		}
		out[i].Cumulative, out[i].Count, out[i].Sum = rebucket(s.Value.Float64Histogram())
	}
	return out
}

// rebucket sums a runtime histogram into Buckets: a runtime bucket counts
// towards the first of our bounds at or above its upper edge, so counts are
// never placed below where they may lie.
func rebucket(h *metrics.Float64Histogram) (map[float64]uint64, uint64, float64) {
	cum := make(map[float64]uint64, len(Buckets))
	var total uint64
	var sum float64
	counts := make([]uint64, len(Buckets))
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		total += n
		mid := hi
		switch {
		case math.IsInf(lo, -1):
			mid = hi
		case math.IsInf(hi, 1):
			mid = lo
		default:
			mid = (lo + hi) / 2
		}
		sum += mid * float64(n)
		for j, b := range Buckets {
			if hi <= b {
				counts[j] += n
				break
			}
		} // above the last bound: only in the total (the +Inf bucket)
	}
	var run uint64
	for j, b := range Buckets {
		run += counts[j]
		cum[b] = run
	}
	return cum, total, sum
}
