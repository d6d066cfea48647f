package loadgen

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"
)

// piece is one phase of a piecewise schedule in a test table.
type piece struct {
	dur  time.Duration
	rate float64
}

func buildPieces(ps []piece) schedule {
	var starts []int64
	var rates []float64
	var d int64
	for _, p := range ps {
		starts = append(starts, d)
		rates = append(rates, p.rate)
		d += int64(p.dur)
	}
	return newPiecewiseSchedule(starts, rates, d)
}

// oracleTimes lists every due time by stepping through the phases, with
// adjacent equal-rate phases merged: the schedule's contract, computed the
// slow way.
func oracleTimes(ps []piece) []int64 { return oracleTimesPhase(ps, 0) }

var pieceTests = []struct {
	name   string
	pieces []piece
	perPh  []int64 // expected sends per phase
	segs   int
}{
	{"constant", []piece{{time.Second, 3}}, []int64{3}, 1},
	{"constant over phases", []piece{{500 * time.Millisecond, 3}, {500 * time.Millisecond, 3}}, []int64{2, 1}, 1},
	{"month-end burst", []piece{{1500 * time.Millisecond, 1}, {time.Second, 20}, {time.Second, 1}}, []int64{2, 20, 1}, 3},
	{"50 then 150", []piece{{time.Second, 50}, {time.Second, 150}}, []int64{50, 150}, 2},
	{"uneven", []piece{{500 * time.Millisecond, 3}, {500 * time.Millisecond, 7}, {500 * time.Millisecond, 3}}, []int64{2, 4, 2}, 3},
	{"busy doubles", []piece{{time.Second, 100}, {time.Second, 200}, {time.Second, 100}}, []int64{100, 200, 100}, 3},
	{"slow then fast", []piece{{3 * time.Second, 0.5}, {333 * time.Millisecond, 1000.0 / 3}}, []int64{2, 111}, 2},
	{"short phases", []piece{{time.Millisecond, 1000}, {time.Millisecond, 3000}, {time.Millisecond, 1000}}, []int64{1, 3, 1}, 3},
	{"merge after change", []piece{{time.Second, 10}, {time.Second, 30}, {700 * time.Millisecond, 30}, {time.Second, 7}}, []int64{10, 30, 21, 7}, 3},
	{"paused middle", []piece{{time.Second, 10}, {time.Second, 0}, {time.Second, 10}}, []int64{10, 0, 10}, 3},
	{"paused first", []piece{{500 * time.Millisecond, 0}, {time.Second, 4}}, []int64{0, 4}, 2},
	{"paused last", []piece{{time.Second, 3}, {time.Second, 0}}, []int64{3, 0}, 2},
	{"pauses merge", []piece{{time.Second, 0}, {time.Second, 0}, {time.Second, 2}, {time.Second, 0}, {time.Second, 2}}, []int64{0, 0, 2, 0, 2}, 4},
	{"uneven around a pause", []piece{{500 * time.Millisecond, 3}, {300 * time.Millisecond, 0}, {500 * time.Millisecond, 7}}, []int64{2, 0, 4}, 3},
}

func TestPiecewiseScheduleCounts(t *testing.T) {
	for _, tt := range pieceTests {
		s := buildPieces(tt.pieces)
		in := fmt.Sprintf("%s %v", tt.name, tt.pieces)
		if len(s.segs) != tt.segs {
			t.Errorf("%s: %d segments %+v, want %d", in, len(s.segs), s.segs, tt.segs)
		}
		var from, sum int64
		for i, p := range tt.pieces {
			to := from + int64(p.dur)
			if got := s.countIn(from, to); got != tt.perPh[i] {
				t.Errorf("%s: phase %d countIn(%v, %v) = %d, want %d", in, i, time.Duration(from), time.Duration(to), got, tt.perPh[i])
			}
			if got := s.rateAt(from); got != p.rate {
				t.Errorf("%s: rateAt(%v) = %v, want %v", in, time.Duration(from), got, p.rate)
			}
			if got := s.rateAt(to - 1); got != p.rate {
				t.Errorf("%s: rateAt(%v) = %v, want %v", in, time.Duration(to-1), got, p.rate)
			}
			sum += tt.perPh[i]
			from = to
		}
		if s.total != sum || s.countBefore(from) != sum || s.countBefore(from+int64(time.Hour)) != sum {
			t.Errorf("%s: total %d countBefore(end) %d, want %d", in, s.total, s.countBefore(from), sum)
		}
	}
}

// TestPiecewiseScheduleConsistency checks at, countBefore and countIn
// against each other and against the oracle, for every request and for
// random offsets, including every segment boundary.
func TestPiecewiseScheduleConsistency(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, tt := range pieceTests {
		s := buildPieces(tt.pieces)
		in := fmt.Sprintf("%s %v", tt.name, tt.pieces)
		want := oracleTimes(tt.pieces)
		if int64(len(want)) != s.total {
			t.Fatalf("%s: total %d, oracle %d", in, s.total, len(want))
		}
		for n := range s.total {
			at := s.at(n)
			if at != want[n] {
				t.Fatalf("%s: at(%d) = %d, oracle %d", in, n, at, want[n])
			}
			if got := s.countBefore(at); got != n {
				t.Fatalf("%s: countBefore(at(%d)=%d) = %d, want %d", in, n, at, got, n)
			}
			if got := s.countBefore(at + 1); got != n+1 {
				t.Fatalf("%s: countBefore(at(%d)+1=%d) = %d, want %d", in, n, at+1, got, n+1)
			}
			if got := s.countIn(at, at+1); got != 1 {
				t.Fatalf("%s: countIn(at(%d), +1ns) = %d, want 1", in, n, got)
			}
		}
		for _, g := range s.segs {
			// a pause holds no request; the segment after it has the same first
			if g.rate > 0 && g.first < s.total && s.at(g.first) != g.start {
				t.Errorf("%s: segment %+v: first request due at %d, want its start", in, g, s.at(g.first))
			}
			for _, d := range []int64{g.start - 1, g.start, g.start + 1} {
				if got, w := s.countBefore(d), oracleCount(want, d); got != w {
					t.Errorf("%s: countBefore(%d) = %d, oracle %d", in, d, got, w)
				}
			}
		}
		end := int64(0)
		for _, p := range tt.pieces {
			end += int64(p.dur)
		}
		for range 2000 {
			a, b := rng.Int63n(end+2)-1, rng.Int63n(end+2)-1
			if got, w := s.countBefore(a), oracleCount(want, a); got != w {
				t.Fatalf("%s: countBefore(%d) = %d, oracle %d", in, a, got, w)
			}
			if got, w := s.countIn(a, b), max(0, oracleCount(want, b)-oracleCount(want, a)); got != w {
				t.Fatalf("%s: countIn(%d, %d) = %d, oracle %d", in, a, b, got, w)
			}
		}
	}
}

func oracleCount(times []int64, d int64) int64 {
	return int64(sort.Search(len(times), func(i int) bool { return times[i] >= d }))
}

// TestConstantScheduleUnchanged: a single rate over several phases gives
// the schedule of one constant rate, n/rate from t0.
func TestConstantScheduleUnchanged(t *testing.T) {
	for _, rate := range []float64{0.5, 3, 7, 100, 1000.0 / 3, 1e7} {
		s := buildPieces([]piece{{333 * time.Millisecond, rate}, {667 * time.Millisecond, rate}, {2 * time.Second, rate}})
		for _, n := range []int64{0, 1, 2, 3, 99, s.total - 1} {
			if n < 0 {
				continue
			}
			if got, want := s.at(n), int64(float64(n)*1e9/rate); got != want {
				t.Errorf("rate %v: at(%d) = %d, want %d", rate, n, got, want)
			}
		}
	}
}

func TestPacerRate(t *testing.T) {
	s := buildPieces([]piece{{time.Second, 1}, {time.Second, 20}})
	p := newPacer(time.Now(), s, time.Now(), nil)
	for _, tt := range []struct {
		el   time.Duration
		want float64
	}{{-time.Millisecond, 1}, {0, 1}, {999 * time.Millisecond, 1}, {time.Second, 20}, {5 * time.Second, 20}} {
		if got := p.Rate(tt.el); got != tt.want {
			t.Errorf("Rate(%v) = %v, want %v", tt.el, got, tt.want)
		}
	}
	if got := s.maxRate(); got != 20 {
		t.Errorf("maxRate = %v, want 20", got)
	}
}

// TestAggregatorPerPhaseRates: windows and phases follow the piecewise
// schedule, including a window that straddles the change of rate.
func TestAggregatorPerPhaseRates(t *testing.T) {
	phases := []phaseSpan{{"base", 0, int64(1500 * time.Millisecond)}, {"burst", int64(1500 * time.Millisecond), int64(2500 * time.Millisecond)}}
	a := testAgg(2500*time.Millisecond, time.Second, phases, 1)
	s := newPiecewiseSchedule([]int64{0, int64(1500 * time.Millisecond)}, []float64{1, 20}, int64(2500*time.Millisecond))
	a.eps[0].sched = s
	for n := range s.total {
		a.add(sample{intended: s.at(n), actual: s.at(n), latency: int64(time.Millisecond), class: ClassOK})
	}
	a.flush(int64(2500 * time.Millisecond))
	wantWin := []struct {
		expected int64
		rate     float64
	}{{1, 1}, {1 + 10, 1}, {10, 20}}
	if len(a.windows) != len(wantWin) {
		t.Fatalf("windows = %d, want %d", len(a.windows), len(wantWin))
	}
	for i, w := range a.windows {
		if w.Expected != wantWin[i].expected || w.Counts.Total() != w.Expected || w.TargetRate != wantWin[i].rate || w.Partial {
			t.Errorf("window %d: expected %d total %d target %v partial %v, want %+v", i, w.Expected, w.Counts.Total(), w.TargetRate, w.Partial, wantWin[i])
		}
	}
	ps := a.phaseStats(int64(2500*time.Millisecond), []int64{s.total}, Config{})
	wantPh := []struct {
		n    int64
		rate float64
	}{{2, 1}, {20, 20}}
	for i, p := range ps {
		if p.Expected != wantPh[i].n || p.Sent != wantPh[i].n || p.Counts.Total() != wantPh[i].n || p.TargetRate != wantPh[i].rate || !p.Valid {
			t.Errorf("phase %s: expected %d sent %d total %d target %v valid %v %v, want %+v",
				p.Phase, p.Expected, p.Sent, p.Counts.Total(), p.TargetRate, p.Valid, p.Broken, wantPh[i])
		}
		if want := float64(p.Expected) / p.End.Sub(p.Start).Seconds(); p.AchievedRate != want {
			t.Errorf("phase %s: achieved %v, want %v", p.Phase, p.AchievedRate, want)
		}
	}
}

// BenchmarkScheduleAt is the per-result cost of the intended send time.
func BenchmarkScheduleAt(b *testing.B) {
	for _, segs := range []int{1, 4} {
		ps := make([]piece, segs)
		for i := range ps {
			ps[i] = piece{time.Minute, float64(1000 * (i + 1))}
		}
		s := buildPieces(ps)
		b.Run(fmt.Sprintf("segments=%d", segs), func(b *testing.B) {
			b.ReportAllocs()
			var sink int64
			for i := range int64(b.N) {
				sink += s.at(i % s.total)
			}
			_ = sink
		})
	}
}
