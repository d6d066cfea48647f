package loadgen

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
)

// Arrival processes of Arrivals.Process.
const (
	// ArrivalsConstant sends each target's requests evenly spaced, 1/rate
	// apart (the default).
	ArrivalsConstant = "constant"
	// ArrivalsPoisson sends them with seeded exponential inter-arrival times
	// of mean 1/rate: a Poisson process, still open-model (a response never
	// holds back the next request).
	ArrivalsPoisson = "poisson"
)

// MaxPoissonRequests bounds the arrival times a Poisson schedule computes in
// advance (8 bytes each) per target.
const MaxPoissonRequests = 50_000_000

// Arrivals is how each target's requests are spread in time. The zero value
// is the constant process with every target starting at the same instant
// (lock-step: the targets' requests coincide whenever their rates are
// multiples of each other).
type Arrivals struct {
	// Process is ArrivalsConstant ("" too) or ArrivalsPoisson.
	Process string
	// Offset, for the constant process, shifts each target's schedule by a
	// seeded random fraction of its interval (in every phase), so that no
	// two targets are phase-locked: a permit freed by a slow call is not
	// always a tie between the same two streams.
	Offset bool
	// Seed seeds the offsets and the Poisson arrivals; each target derives
	// its own stream from it and its name, so adding a target does not move
	// the others.
	Seed uint64
}

func (a Arrivals) validate() error {
	switch a.Process {
	case "", ArrivalsConstant, ArrivalsPoisson:
		return nil
	}
	return invalid("arrivals.process", "want %q or %q, got %q", ArrivalsConstant, ArrivalsPoisson, a.Process)
}

// rng is the random stream of target name.
func (a Arrivals) rng(name string) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", a.Seed, name)
	return rand.New(rand.NewPCG(a.Seed, h.Sum64()))
}

// schedule builds shard sh's schedule of target name: rates[i] (already
// the shard's share) from starts[i] on. A constant schedule's phase offset
// is drawn once for the target, whatever the shard, and each shard is
// shifted by its index on top (Shard); a Poisson shard draws from a stream
// of its own.
func (a Arrivals) schedule(name string, sh Shard, starts []int64, rates []float64, duration int64) (schedule, error) {
	s := newPiecewiseSchedule(starts, rates, duration)
	if a.Process == ArrivalsPoisson {
		own := a
		own.Seed = sh.seed(a.Seed)
		return poissonTimes(s, duration, own.rng(name))
	}
	phase := 0.0
	if a.Offset {
		phase = a.rng(name).Float64()
	}
	if sh.sharded() {
		phase = (phase + float64(sh.Index)) / float64(sh.Count)
	}
	if phase != 0 {
		s = s.withPhase(phase)
	}
	return s, nil
}

// poissonTimes draws the arrival times of a Poisson process with the rates
// of s's segments over [0, duration). The process is memoryless, so each
// segment starts afresh at its start; a pause (rate 0) has no arrivals.
func poissonTimes(s schedule, duration int64, r *rand.Rand) (schedule, error) {
	var expect float64
	for i, g := range s.segs {
		end := duration
		if i+1 < len(s.segs) {
			end = s.segs[i+1].start
		}
		expect += g.rate * float64(end-g.start) / 1e9
	}
	if expect > MaxPoissonRequests {
		return schedule{}, invalid("arrivals", "a Poisson schedule of ~%.0f requests per target exceeds %d", expect, MaxPoissonRequests)
	}
	times := make([]int64, 0, int(expect+6*math.Sqrt(expect)+16))
	for i, g := range s.segs {
		end := duration
		if i+1 < len(s.segs) {
			end = s.segs[i+1].start
		}
		if g.rate <= 0 {
			continue
		}
		t := float64(g.start)
		for {
			t += r.ExpFloat64() / g.rate * 1e9
			if t >= float64(end) {
				break
			}
			times = append(times, int64(t))
		}
	}
	s.times = times
	s.total = int64(len(times))
	return s, nil
}

// timesBefore is the number of precomputed arrival times before d.
func (s schedule) timesBefore(d int64) int64 {
	return int64(sort.Search(len(s.times), func(i int) bool { return s.times[i] >= d }))
}
