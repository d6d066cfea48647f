package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"
)

// oracleTimesPhase is oracleTimes with every request shifted by phase of
// its segment's interval; a pause (rate 0) has none.
func oracleTimesPhase(ps []piece, phase float64) []int64 {
	var out []int64
	var start, end int64
	for i := 0; i < len(ps); {
		rate := ps[i].rate
		end = start
		for ; i < len(ps) && ps[i].rate == rate; i++ {
			end += int64(ps[i].dur)
		}
		for k := int64(0); rate > 0; k++ {
			t := start + int64((float64(k)+phase)*1e9/rate)
			if t >= end {
				break
			}
			out = append(out, t)
		}
		start = end
	}
	return out
}

func piecesOf(ps []piece) (starts []int64, rates []float64, d int64) {
	for _, p := range ps {
		starts = append(starts, d)
		rates = append(rates, p.rate)
		d += int64(p.dur)
	}
	return
}

// checkAgainst holds a schedule's at, countBefore and countIn to a list of
// due times, for every request and random offsets.
func checkAgainst(t *testing.T, in string, s schedule, want []int64, end int64) {
	t.Helper()
	if int64(len(want)) != s.total {
		t.Fatalf("%s: total %d, oracle %d", in, s.total, len(want))
	}
	for n := range s.total {
		at := s.at(n)
		if at != want[n] {
			t.Fatalf("%s: at(%d) = %d, oracle %d", in, n, at, want[n])
		}
		if at < 0 || at >= end {
			t.Fatalf("%s: at(%d) = %d outside [0, %d)", in, n, at, end)
		}
		if got := s.countBefore(at); got != oracleCount(want, at) {
			t.Fatalf("%s: countBefore(at(%d)) = %d, oracle %d", in, n, got, oracleCount(want, at))
		}
	}
	rng := rand.New(rand.NewSource(3))
	for range 2000 {
		a, b := rng.Int63n(end+2)-1, rng.Int63n(end+2)-1
		if got, w := s.countIn(a, b), max(0, oracleCount(want, b)-oracleCount(want, a)); got != w {
			t.Fatalf("%s: countIn(%d, %d) = %d, oracle %d", in, a, b, got, w)
		}
	}
}

// TestOffsetSchedule: a phase offset shifts every request of every segment
// by the same fraction of its interval, and the counts follow.
func TestOffsetSchedule(t *testing.T) {
	for _, tt := range pieceTests {
		for _, phase := range []float64{0, 1e-9, 0.25, 0.5, 0.999999} {
			starts, rates, end := piecesOf(tt.pieces)
			s := newPiecewiseSchedule(starts, rates, end).withPhase(phase)
			checkAgainst(t, fmt.Sprintf("%s %v phase %v", tt.name, tt.pieces, phase), s, oracleTimesPhase(tt.pieces, phase), end)
		}
	}
}

// TestArrivalsOffsetsDiffer: with Offset, targets of one seed get
// different offsets, the same target the same one under the same seed.
func TestArrivalsOffsetsDiffer(t *testing.T) {
	a := Arrivals{Offset: true, Seed: 42}
	starts, rates := []int64{0}, []float64{100}
	first := map[string]int64{}
	for _, name := range []string{"a", "b", "c", "_canary"} {
		s, err := a.schedule(name, Shard{}, starts, rates, int64(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := a.schedule(name, Shard{}, starts, rates, int64(time.Second))
		if s.at(0) != again.at(0) {
			t.Errorf("%s: offset %d then %d under one seed", name, s.at(0), again.at(0))
		}
		if s.at(0) < 0 || s.at(0) >= int64(10*time.Millisecond) {
			t.Errorf("%s: first request at %v, want within the first interval (10ms)", name, time.Duration(s.at(0)))
		}
		first[name] = s.at(0)
	}
	if first["a"] == first["b"] && first["b"] == first["c"] {
		t.Errorf("every target starts at %v: still in lock-step", time.Duration(first["a"]))
	}
	none, _ := Arrivals{}.schedule("a", Shard{}, starts, rates, int64(time.Second))
	if none.at(0) != 0 || none.at(1) != int64(10*time.Millisecond) {
		t.Errorf("zero Arrivals: at(0), at(1) = %d, %d, want 0 and 10ms", none.at(0), none.at(1))
	}
}

// TestPoissonSchedule: sorted times inside the run; per phase, counts
// within 5 standard deviations of rate × duration and mean inter-arrival
// time within 10 % of 1/rate (standard deviation within 20 %: exponential); seeded.
func TestPoissonSchedule(t *testing.T) {
	ps := []piece{{2 * time.Second, 500}, {2 * time.Second, 2000}, {2 * time.Second, 500}}
	starts, rates, end := piecesOf(ps)
	a := Arrivals{Process: ArrivalsPoisson, Seed: 9}
	s, err := a.schedule("a", Shard{}, starts, rates, end)
	if err != nil {
		t.Fatal(err)
	}
	if !sort.SliceIsSorted(s.times, func(i, j int) bool { return s.times[i] < s.times[j] }) {
		t.Fatal("times not sorted")
	}
	checkAgainst(t, "poisson", s, s.times, end)
	for i, p := range ps {
		from, to := starts[i], starts[i]+int64(p.dur)
		n := s.countIn(from, to)
		want := p.rate * p.dur.Seconds()
		if math.Abs(float64(n)-want) > 5*math.Sqrt(want) {
			t.Errorf("phase %d: %d arrivals, want %.0f ± %.0f", i, n, want, 5*math.Sqrt(want))
		}
		if got := s.rateAt(from); got != p.rate {
			t.Errorf("phase %d: rateAt = %v, want %v", i, got, p.rate)
		}
		lo, hi := s.countBefore(from), s.countBefore(to)
		var gaps []float64
		for k := lo + 1; k < hi; k++ {
			gaps = append(gaps, float64(s.at(k)-s.at(k-1)))
		}
		mean, sd := meanSD(gaps)
		if w := 1e9 / p.rate; math.Abs(mean-w) > 0.1*w || math.Abs(sd-w) > 0.2*w {
			t.Errorf("phase %d: inter-arrival mean %.0f ns sd %.0f ns, want both ≈ %.0f ns (exponential)", i, mean, sd, w)
		}
	}
	again, _ := a.schedule("a", Shard{}, starts, rates, end)
	other, _ := Arrivals{Process: ArrivalsPoisson, Seed: 10}.schedule("a", Shard{}, starts, rates, end)
	if again.total != s.total || again.at(5) != s.at(5) {
		t.Error("same seed, different arrivals")
	}
	if other.total == s.total && other.at(5) == s.at(5) {
		t.Error("different seeds, same arrivals")
	}
}

// TestPoissonSchedulePaused: a Poisson schedule has no arrivals in a
// paused phase and resumes in the phase after it.
func TestPoissonSchedulePaused(t *testing.T) {
	ps := []piece{{time.Second, 200}, {time.Second, 0}, {time.Second, 200}}
	starts, rates, end := piecesOf(ps)
	s, err := Arrivals{Process: ArrivalsPoisson, Seed: 9}.schedule("a", Shard{}, starts, rates, end)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, "poisson paused", s, s.times, end)
	if n := s.countIn(starts[1], starts[2]); n != 0 || s.rateAt(starts[1]) != 0 {
		t.Errorf("paused phase %v: %d arrivals at rate %v, want none at 0", ps, n, s.rateAt(starts[1]))
	}
	if a, b := s.countIn(0, starts[1]), s.countIn(starts[2], end); a < 100 || b < 100 {
		t.Errorf("phases around the pause %v: %d and %d arrivals, want ≈ 200 each", ps, a, b)
	}
}

func meanSD(xs []float64) (float64, float64) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(len(xs))
	for _, x := range xs {
		sq += (x - m) * (x - m)
	}
	return m, math.Sqrt(sq / float64(len(xs)-1))
}

func TestArrivalsValidate(t *testing.T) {
	cfg := Config{Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/", Rate: 10}},
		Phases: []Phase{{Name: "p", Duration: time.Second}}, Arrivals: Arrivals{Process: "uniform"}}
	if _, err := cfg.validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("process uniform: err %v, want ErrInvalidConfig", err)
	}
	cfg.Arrivals = Arrivals{Process: ArrivalsPoisson}
	cfg.Targets[0].Rate = 1e7
	cfg.Phases[0].Duration = time.Hour
	if _, err := cfg.validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("poisson 1e7/s for an hour: err %v, want ErrInvalidConfig (too many to precompute)", err)
	}
}
