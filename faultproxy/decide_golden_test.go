package faultproxy

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The decision path was rewritten to allocate nothing. These tests hold it
// to the decisions it made before: oldDecide is the earlier code verbatim
// (a rand.Rand over a heap PCG), and goldenDecisions were printed by it.

func oldRequestRand(seed, seq uint64) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix(seed^splitmix(seq)), splitmix(seq+0x632be59bd9b4e019)))
}

func oldSampleDelay(f Delay, r *rand.Rand) time.Duration {
	lat, jit := float64(f.Latency), float64(f.Jitter)
	var d float64
	switch f.Distribution {
	case DistPareto:
		u := 1 - r.Float64()
		d = lat + jit*(math.Pow(u, -1/ParetoShape)-1)
	case DistLognormal:
		d = lat * math.Exp(math.Log1p(jit/lat)*r.NormFloat64())
	default:
		return f.Latency + time.Duration((2*r.Float64()-1)*jit)
	}
	if f.Max > 0 && !(d <= float64(f.Max)) {
		return f.Max
	}
	return time.Duration(d)
}

func oldDecide(s *faultSet, seed, seq uint64) Decision {
	d := Decision{Terminal: -1}
	if len(s.faults) == 0 {
		return d
	}
	r := oldRequestRand(seed, seq)
	for i, f := range s.faults {
		if !(r.Float64()*100 < f.Percent) {
			continue
		}
		if f.Type == TypeLatency {
			d.Delay += oldSampleDelay(params[Delay](&f), r)
			d.Latencies++
			continue
		}
		if d.Terminal < 0 {
			d.Terminal, d.TerminalType = i, f.Type
		}
	}
	return d
}

// goldenSet exercises every distribution and every terminal type.
var goldenSet = []Fault{
	{Type: TypeLatency, Percent: 60, Params: Delay{Latency: 100 * time.Millisecond, Jitter: 20 * time.Millisecond}},
	{Type: TypeLatency, Percent: 40, Params: Delay{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: DistPareto}},
	{Type: TypeLatency, Percent: 40, Params: Delay{Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond, Distribution: DistLognormal}},
	{Type: TypeError, Percent: 20},
	{Type: TypeAbort, Percent: 15},
	{Type: TypeHang, Percent: 10},
}

func TestDecideSameAsBefore(t *testing.T) {
	set := newFaultSet(goldenSet)
	for _, seed := range []uint64{0, 1, 7, 42, math.MaxUint64} {
		for seq := uint64(1); seq <= 20000; seq++ {
			if got, want := set.decide(seed, seq, allMatched), oldDecide(set, seed, seq); got != want {
				t.Fatalf("seed %d seq %d: decide = %+v, the earlier code decided %+v", seed, seq, got, want)
			}
		}
	}
}

func TestRequestRandSameStream(t *testing.T) {
	for seq := uint64(1); seq <= 1000; seq++ {
		r, old := requestRand(3, seq), oldRequestRand(3, seq)
		for i := 0; i < 8; i++ {
			if i%3 == 2 {
				if a, b := r.NormFloat64(), old.NormFloat64(); a != b {
					t.Fatalf("seq %d draw %d: NormFloat64 %v, rand.Rand %v", seq, i, a, b)
				}
				continue
			}
			if a, b := r.Float64(), old.Float64(); a != b {
				t.Fatalf("seq %d draw %d: Float64 %v, rand.Rand %v", seq, i, a, b)
			}
		}
	}
}

// goldenDecisions are oldDecide's for goldenSet, seed 7, seq 1–8.
var goldenDecisions = []Decision{
	{Delay: 155160588, Latencies: 2, Terminal: 3, TerminalType: "error"},
	{Delay: 165181494, Latencies: 2, Terminal: 3, TerminalType: "error"},
	{Delay: 96347712, Latencies: 1, Terminal: -1, TerminalType: ""},
	{Delay: 18288648, Latencies: 1, Terminal: 3, TerminalType: "error"},
	{Delay: 51692156, Latencies: 1, Terminal: -1, TerminalType: ""},
	{Delay: 0, Latencies: 0, Terminal: 4, TerminalType: "abort"},
	{Delay: 84812321, Latencies: 1, Terminal: 3, TerminalType: "error"},
	{Delay: 213941539, Latencies: 3, Terminal: 3, TerminalType: "error"},
}

func TestDecideGolden(t *testing.T) {
	set := newFaultSet(goldenSet)
	for i, want := range goldenDecisions {
		if got := set.decide(7, uint64(i+1), allMatched); got != want {
			t.Errorf("seed 7 seq %d: decide = %#v, want %#v", i+1, got, want)
		}
	}
}

func TestDecideAllocs(t *testing.T) {
	set := newFaultSet(goldenSet[:1])
	var seq uint64
	if n := testing.AllocsPerRun(1000, func() { seq++; _ = set.decide(1, seq, allMatched) }); n != 0 {
		t.Errorf("decide allocates %v times per call, want 0", n)
	}
	d := Decision{Latencies: 1, Terminal: 3, TerminalType: TypeError}
	if n := testing.AllocsPerRun(100, func() { _ = d.String() }); n != 0 || d.String() != "latency+error" {
		t.Errorf("Decision.String = %q with %v allocations, want latency+error and none", d.String(), n)
	}
}
