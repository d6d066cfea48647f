package loadgen

import "math"

// schedule is the open-model send schedule of one endpoint: request n
// (0-based, vegeta's Result.Seq) is due at t0 + n/rate, for n < total.
// Offsets are nanoseconds from t0.
type schedule struct {
	rate  float64 // requests per second, > 0
	total int64   // number of requests in the run
}

func newSchedule(rate float64, duration int64) schedule {
	s := schedule{rate: rate, total: math.MaxInt64}
	s.total = s.countBefore(duration)
	return s
}

// at is the intended offset of request n.
func (s schedule) at(n int64) int64 { return int64(float64(n) * 1e9 / s.rate) }

// countBefore is the number of requests n < total with at(n) < d.
func (s schedule) countBefore(d int64) int64 {
	if d <= 0 {
		return 0
	}
	c := int64(math.Ceil(float64(d) * s.rate / 1e9))
	for c > 0 && s.at(c-1) >= d {
		c--
	}
	for s.at(c) < d {
		c++
	}
	return min(c, s.total)
}

// countIn is the number of requests due in [from, to).
func (s schedule) countIn(from, to int64) int64 {
	return max(0, s.countBefore(to)-s.countBefore(from))
}
