package measure

import (
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Sources of MemoryRun's calls in flight.
const (
	InflightFromService = "service" // the built-in service's bulkheadlab_dependency_inflight
	InflightFromProxy   = "proxy"   // the culprit's fault proxy: calls at the dependency
)

// MemoryRun is how the calls in flight to the culprit's dependency and the
// service's memory moved over one run's fault phase: seed-004's "on an
// event-loop runtime awaits are cheap, so there is no natural bound at all
// — unbounded in-flight work grows memory". With nothing bounding them
// and a dependency slower than the fault phase is long, the calls in
// flight grow at the arrival rate λ (Little's law while no call has come
// back: λ·t), and each holds its request's state. Slopes are least-squares
// fits to the samples inside the fault phase.
type MemoryRun struct {
	// Source says whose count of calls in flight was read: the service's
	// own, else the culprit's fault proxy's.
	Source string `json:"inflight_source"`
	// OfferedPerS is λ, the culprit's requests per second in the fault.
	OfferedPerS Num `json:"offered_per_s"`
	// InflightStart and InflightEnd are the calls in flight at the fault
	// phase's start and end; InflightPeak the most in any sample of it.
	InflightStart Num `json:"inflight_start"`
	InflightEnd   Num `json:"inflight_end"`
	InflightPeak  Num `json:"inflight_peak"`
	// InflightSlope is their growth over the fault phase, in calls per
	// second; FirstHalfSlope and SecondHalfSlope the same over each half.
	InflightSlope   Num `json:"inflight_slope_per_s"`
	FirstHalfSlope  Num `json:"inflight_first_half_slope_per_s"`
	SecondHalfSlope Num `json:"inflight_second_half_slope_per_s"`
	// GrowthShare is InflightSlope ÷ λ (1: every call still in flight),
	// LateGrowthShare the second half's slope ÷ λ (still growing at the
	// end of the fault phase).
	GrowthShare     Num `json:"growth_share"`
	LateGrowthShare Num `json:"late_growth_share"`
	// RSS* are the service's resident memory (process_resident_memory_bytes,
	// from /proc for a process the runner started) at the fault's start
	// and end and at its peak; RSSGrowth is (end − start) ÷ start and
	// RSSSlope its growth in bytes per second.
	RSSStartBytes Num `json:"rss_start_bytes"`
	RSSEndBytes   Num `json:"rss_end_bytes"`
	RSSPeakBytes  Num `json:"rss_peak_bytes"`
	RSSGrowth     Num `json:"rss_growth"`
	RSSSlope      Num `json:"rss_slope_bytes_per_s"`
	// BytesPerCall is the memory each call in flight added: the RSS's
	// growth ÷ the growth of the calls in flight (null when they did not
	// grow).
	BytesPerCall Num `json:"bytes_per_call"`
	// HeapStartBytes and HeapEndBytes are the built-in service's live heap
	// objects (MetricHeapObjects) at the fault's start and end; null for a
	// service that does not export them.
	HeapStartBytes Num `json:"heap_start_bytes"`
	HeapEndBytes   Num `json:"heap_end_bytes"`
}

// MetricHeapObjects is the built-in service's live heap objects, in bytes
// (runtime/metrics /memory/classes/heap/objects:bytes).
const MetricHeapObjects = "bulkheadlab_heap_objects_bytes"

// memoryFamily adds the memory claim's numbers when the experiment names
// it.
func memoryFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	if ex.Memory != nil {
		s.Memory = memoryStats(r, ex.Culprit, s.Endpoint(ex.Culprit))
	}
}

// memoryStats computes the run's MemoryRun for the culprit.
func memoryStats(run *rundir.Run, culprit string, e EndpointStats) *MemoryRun {
	m := &MemoryRun{OfferedPerS: Undefined, InflightStart: Undefined, InflightEnd: Undefined, InflightPeak: Undefined,
		InflightSlope: Undefined, FirstHalfSlope: Undefined, SecondHalfSlope: Undefined, GrowthShare: Undefined, LateGrowthShare: Undefined,
		RSSStartBytes: Undefined, RSSEndBytes: Undefined, RSSPeakBytes: Undefined, RSSGrowth: Undefined, RSSSlope: Undefined, BytesPerCall: Undefined,
		HeapStartBytes: Undefined, HeapEndBytes: Undefined}
	from, ok := run.FaultStart()
	if !ok {
		return m
	}
	to := run.FaultEnd()
	if !to.After(from) {
		return m
	}
	switch tot := e.FaultCounts.Total(); {
	case tot > 0:
		m.OfferedPerS = Num(float64(tot) / to.Sub(from).Seconds())
	case run.EndpointInfo(culprit).Rate > 0:
		// A run stopped within its fault phase has no record of it: the
		// open model's schedule is its rate.
		m.OfferedPerS = Num(run.EndpointInfo(culprit).Rate)
	}
	inflight, source := inflightOf(run, culprit)
	m.Source = source
	mid := from.Add(to.Sub(from) / 2)
	m.InflightStart, m.InflightEnd, m.InflightPeak = valueNum(inflight, from), valueNum(inflight, to), peakOver(inflight, from, to)
	m.InflightSlope, m.FirstHalfSlope, m.SecondHalfSlope = slopeOver(inflight, from, to), slopeOver(inflight, from, mid), slopeOver(inflight, mid, to)
	m.GrowthShare = Num(Ratio(float64(m.InflightSlope), float64(m.OfferedPerS)))
	m.LateGrowthShare = Num(Ratio(float64(m.SecondHalfSlope), float64(m.OfferedPerS)))
	rss := run.Metric(rundata.ServiceComponent, rundata.MetricResidentBytes)
	m.RSSStartBytes, m.RSSEndBytes, m.RSSPeakBytes = valueNum(rss, from), valueNum(rss, to), peakOver(rss, from, to)
	m.RSSGrowth = Num(Ratio(float64(m.RSSEndBytes-m.RSSStartBytes), float64(m.RSSStartBytes)))
	m.RSSSlope = slopeOver(rss, from, to)
	heap := run.Metric(rundata.ServiceComponent, MetricHeapObjects)
	m.HeapStartBytes, m.HeapEndBytes = valueNum(heap, from), valueNum(heap, to)
	if d := float64(m.InflightEnd - m.InflightStart); d >= 1 {
		m.BytesPerCall = Num(float64(m.RSSEndBytes-m.RSSStartBytes) / d)
	}
	return m
}

// valueNum is the series' latest value at or before t; Undefined before
// its first point.
func valueNum(s []rundir.Point, t time.Time) Num {
	if v, ok := rundir.ValueAt(s, t); ok {
		return Num(v)
	}
	return Undefined
}

// peakOver is the series' largest value in (from, to]; Undefined without
// a point there.
func peakOver(s []rundir.Point, from, to time.Time) Num {
	peak := math.Inf(-1)
	for _, p := range s {
		if inRange(p.Time, from, to) && p.Time.After(from) {
			peak = max(peak, p.Value)
		}
	}
	if math.IsInf(peak, -1) {
		return Undefined
	}
	return Num(peak)
}

// slopeOver is the least-squares slope, per second, of the series' points
// in [from, to]; Undefined with fewer than two.
func slopeOver(s []rundir.Point, from, to time.Time) Num {
	var xs, ys []float64
	for _, p := range s {
		if inRange(p.Time, from, to) {
			xs = append(xs, p.Time.Sub(from).Seconds())
			ys = append(ys, p.Value)
		}
	}
	return Num(Slope(xs, ys))
}

// Slope is the least-squares slope of ys over xs; NaN with fewer than
// two points or no spread in xs.
func Slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}
