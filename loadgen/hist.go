package loadgen

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: values in nanoseconds, 1 µs resolution floor, 60 s
// ceiling (larger values are clamped), 3 significant digits. One histogram
// is about 140 KB, so windows reuse them from a free list.
const (
	histLowest  = int64(time.Microsecond)
	histHighest = int64(60 * time.Second)
	histDigits  = 3
)

// quantilePoints are the percentiles (0–100) closed into Quantiles.
var quantilePoints = []float64{50, 90, 99, 99.9}

// hist is an HdrHistogram plus the exact count, sum and maximum, which the
// HdrHistogram only knows to its resolution. Not safe for concurrent use.
type hist struct {
	h              *hdrhistogram.Histogram
	n, sum, max    int64
	startMs, endMs int64
}

func newHist() *hist {
	return &hist{h: hdrhistogram.New(histLowest, histHighest, histDigits)}
}

// timingDigits are the significant digits of a Server-Timing metric's
// histogram: 1 % is finer than the metric's own resolution (a service
// sends its times in milliseconds, often rounded), and the histogram is
// about 20 KB instead of 140 KB (rundata.MaxTimingMetrics of them per
// endpoint and phase).
const timingDigits = 2

func newTimingHist() *hist {
	return &hist{h: hdrhistogram.New(histLowest, histHighest, timingDigits)}
}

// record adds one value in nanoseconds; negative values count as 0.
func (h *hist) record(v int64) {
	if v < 0 {
		v = 0
	}
	h.n++
	h.sum += v
	if v > h.max {
		h.max = v
	}
	if v > histHighest {
		v = histHighest
	}
	_ = h.h.RecordValue(v) // cannot fail: v is within [0, histHighest]
}

func (h *hist) reset() {
	h.h.Reset()
	h.n, h.sum, h.max = 0, 0, 0
}

// quantiles closes the histogram into Quantiles. Quantiles never exceed
// the exact maximum.
func (h *hist) quantiles() Quantiles {
	if h.n == 0 {
		return Quantiles{}
	}
	v := h.h.ValueAtPercentilesSlice(quantilePoints)
	clamp := func(x int64) time.Duration { return time.Duration(min(x, h.max)) }
	return Quantiles{
		Count: h.n,
		P50:   clamp(v[0]),
		P90:   clamp(v[1]),
		P99:   clamp(v[2]),
		P999:  clamp(v[3]),
		Max:   time.Duration(h.max),
		Mean:  time.Duration(h.sum / h.n),
	}
}
