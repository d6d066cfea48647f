package loadgen

import "math"

// segment is a stretch of a schedule at one constant rate. Offsets are
// nanoseconds from t0.
type segment struct {
	start int64   // offset of the segment's first request
	rate  float64 // requests per second, ≥ 0; 0 is a pause: no requests
	first int64   // number of requests due before start: the first one's index
}

// schedule is the open-model send schedule of one endpoint: a
// piecewise-constant rate, one segment per phase (adjacent phases at the
// same rate share a segment). Request n (0-based, vegeta's Result.Seq) of
// the segment that holds it is due at start + (n-first)/rate, for
// n < total: each segment restarts its sequence at its start, so a phase
// with its own rate has a request due exactly at its start, and a
// constant-rate run is due at t0 + n/rate as before. A phase offset
// (Arrivals.Offset) shifts every request by the same fraction of its
// interval; a Poisson schedule holds its arrival times instead.
//
// A segment at rate 0 is a pause: it holds no request, and the next
// segment restarts the sequence at its own start as any change of rate
// does.
//
// A schedule is immutable after construction and safe for concurrent use;
// at, countBefore and rateAt do not allocate and cost O(log segments)
// (O(log requests) for a Poisson schedule).
type schedule struct {
	segs  []segment // by start; segs[0].start == 0
	total int64     // number of requests in the run
	// phase shifts every request by this fraction of its segment's
	// interval, in [0, 1): request k of a segment is due at
	// start + (k+phase)/rate (Arrivals.Offset).
	phase float64
	// times, if set, are the precomputed arrival times of a random process
	// (Arrivals.Process poisson), sorted; they replace the segments' even
	// spacing, which then only tells the scheduled rate.
	times []int64
	dur   int64 // the duration the schedule was built for
}

// counts is what the aggregator reads of a schedule: a schedule, or the
// sum of the shards' schedules of a merged load (shardSum).
type counts interface {
	countIn(from, to int64) int64
	countBefore(d int64) int64
	rateAt(d int64) float64
}

var _ counts = schedule{}

// shardSum is the schedule of a load sent by shards: the sum of theirs.
type shardSum []schedule

func (s shardSum) countIn(from, to int64) int64 {
	var n int64
	for _, x := range s {
		n += x.countIn(from, to)
	}
	return n
}

func (s shardSum) countBefore(d int64) int64 {
	var n int64
	for _, x := range s {
		n += x.countBefore(d)
	}
	return n
}

func (s shardSum) rateAt(d int64) float64 {
	var r float64
	for _, x := range s {
		r += x.rateAt(d)
	}
	return r
}

// newSchedule is a constant-rate schedule over [0, duration).
func newSchedule(rate float64, duration int64) schedule {
	return newPiecewiseSchedule([]int64{0}, []float64{rate}, duration)
}

// newPiecewiseSchedule is the schedule with rates[i] from starts[i] to
// starts[i+1] (the last one to duration). starts must begin at 0 and
// increase; every rate must be ≥ 0 (validated by Config), 0 pausing the
// schedule.
func newPiecewiseSchedule(starts []int64, rates []float64, duration int64) schedule {
	var s schedule
	for i, st := range starts {
		if n := len(s.segs); n > 0 && s.segs[n-1].rate == rates[i] {
			continue // same rate: the sequence runs on through the boundary
		}
		first := int64(0)
		if n := len(s.segs); n > 0 {
			prev := s.segs[n-1]
			first = prev.first + localCount(prev.rate, st-prev.start)
		}
		s.segs = append(s.segs, segment{start: st, rate: rates[i], first: first})
	}
	last := s.segs[len(s.segs)-1]
	s.total = last.first + localCount(last.rate, duration-last.start)
	s.dur = duration
	return s
}

// withPhase returns s with every request shifted by phase (in [0, 1)) of
// its segment's interval; counts are recomputed, so a request shifted past
// its segment's end belongs to the next segment's count no more.
func (s schedule) withPhase(phase float64) schedule {
	out := schedule{segs: make([]segment, len(s.segs)), phase: phase, dur: s.dur}
	copy(out.segs, s.segs)
	for i := 1; i < len(out.segs); i++ {
		prev := out.segs[i-1]
		out.segs[i].first = prev.first + localCountPhase(prev.rate, out.segs[i].start-prev.start, phase)
	}
	last := out.segs[len(out.segs)-1]
	out.total = last.first + localCountPhase(last.rate, s.end()-last.start, phase)
	return out
}

// end is the end of the schedule: the offset after its last request, as
// built (the duration).
func (s schedule) end() int64 { return s.dur }

// localAt is the offset of request k from the start of a segment at rate.
func localAt(rate float64, k int64) int64 { return int64(float64(k) * 1e9 / rate) }

// localAtPhase is localAt shifted by phase of an interval.
func localAtPhase(rate float64, k int64, phase float64) int64 {
	if phase == 0 {
		return localAt(rate, k)
	}
	return int64((float64(k) + phase) * 1e9 / rate)
}

// localCount is the number of k ≥ 0 with localAt(rate, k) < d.
func localCount(rate float64, d int64) int64 { return localCountPhase(rate, d, 0) }

// localCountPhase is the number of k ≥ 0 with localAtPhase(rate, k, phase) < d;
// 0 for a pause (rate 0).
func localCountPhase(rate float64, d int64, phase float64) int64 {
	if d <= 0 || rate <= 0 {
		return 0
	}
	c := max(0, int64(math.Ceil(float64(d)*rate/1e9-phase)))
	for c > 0 && localAtPhase(rate, c-1, phase) >= d {
		c--
	}
	for localAtPhase(rate, c, phase) < d {
		c++
	}
	return c
}

// segByIndex returns the segment holding request n (the last with first ≤ n:
// never a pause, which shares its first with the segment after it, for
// n < total).
func (s schedule) segByIndex(n int64) segment {
	lo, hi := 0, len(s.segs) // invariant: segs[lo].first ≤ n (lo = 0 by convention)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if s.segs[m].first <= n {
			lo = m
		} else {
			hi = m
		}
	}
	return s.segs[lo]
}

// segByOffset returns the segment in effect at offset d (the last with
// start ≤ d; the first one for d < 0).
func (s schedule) segByOffset(d int64) segment {
	lo, hi := 0, len(s.segs)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if s.segs[m].start <= d {
			lo = m
		} else {
			hi = m
		}
	}
	return s.segs[lo]
}

// at is the intended offset of request n.
func (s schedule) at(n int64) int64 {
	if s.times != nil {
		return s.times[n]
	}
	if len(s.segs) == 1 {
		return localAtPhase(s.segs[0].rate, n, s.phase)
	}
	g := s.segByIndex(n)
	return g.start + localAtPhase(g.rate, n-g.first, s.phase)
}

// rateAt is the scheduled rate at offset d.
func (s schedule) rateAt(d int64) float64 { return s.segByOffset(d).rate }

// maxRate is the highest rate of the schedule.
func (s schedule) maxRate() float64 {
	r := 0.0
	for _, g := range s.segs {
		r = max(r, g.rate)
	}
	return r
}

// countBefore is the number of requests n < total with at(n) < d.
func (s schedule) countBefore(d int64) int64 {
	if d <= 0 {
		return 0
	}
	if s.times != nil {
		return s.timesBefore(d)
	}
	g := s.segByOffset(d)
	return min(g.first+localCountPhase(g.rate, d-g.start, s.phase), s.total)
}

// countIn is the number of requests due in [from, to).
func (s schedule) countIn(from, to int64) int64 {
	return max(0, s.countBefore(to)-s.countBefore(from))
}
