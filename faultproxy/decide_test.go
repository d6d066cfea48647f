package faultproxy

import (
	"math"
	"slices"
	"testing"
	"time"
)

// binomialOK reports whether k successes of n at probability p lie within
// 5 standard deviations of the mean (a false alarm once in ~3.5 million).
func binomialOK(k, n int, p float64) (bool, float64) {
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	return math.Abs(float64(k)-mean) <= 5*sd+0.5, 5 * sd
}

func TestDecidePercent(t *testing.T) {
	const n = 10000
	for _, pct := range []float64{0, 1, 30, 50, 99.5, 100} {
		for _, seed := range []uint64{1, 2, 42} {
			set := newFaultSet([]Fault{{Type: TypeError, Percent: pct}})
			k := 0
			for seq := uint64(1); seq <= n; seq++ {
				if set.decide(seed, seq, allMatched).Terminal == 0 {
					k++
				}
			}
			if ok, bound := binomialOK(k, n, pct/100); !ok {
				t.Errorf("percent %v seed %d: %d of %d fired, want %v ± %.0f", pct, seed, k, n, pct/100*n, bound)
			}
		}
	}
}

func TestDecideReproducible(t *testing.T) {
	set := newFaultSet([]Fault{
		{Type: TypeLatency, Percent: 50, Params: Delay{Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}},
		{Type: TypeError, Percent: 30},
	})
	seqOf := func(seed uint64) []Decision {
		var out []Decision
		for seq := uint64(1); seq <= 200; seq++ {
			out = append(out, set.decide(seed, seq, allMatched))
		}
		return out
	}
	if a, b := seqOf(7), seqOf(7); !slices.Equal(a, b) {
		t.Errorf("seed 7 gave different decisions on two runs")
	}
	if a, b := seqOf(7), seqOf(8); slices.Equal(a, b) {
		t.Errorf("seeds 7 and 8 gave the same 200 decisions")
	}
}

func TestCombinationRule(t *testing.T) {
	lat := func(pct float64, d time.Duration) Fault {
		return Fault{Type: TypeLatency, Percent: pct, Params: Delay{Latency: d}}
	}
	tests := []struct {
		name      string
		faults    []Fault
		wantDelay time.Duration
		wantTerm  int
		wantName  string
	}{
		{"none", nil, 0, -1, "pass"},
		{"latencies add up", []Fault{lat(100, 100*time.Millisecond), lat(100, 50*time.Millisecond)}, 150 * time.Millisecond, -1, "latency"},
		{"latency not fired", []Fault{lat(0, time.Second), lat(100, 5*time.Millisecond)}, 5 * time.Millisecond, -1, "latency"},
		{"first terminal wins", []Fault{{Type: TypeHang, Percent: 100}, {Type: TypeError, Percent: 100}}, 0, 0, "hang"},
		{"terminal not fired skipped", []Fault{{Type: TypeAbort, Percent: 0}, {Type: TypeError, Percent: 100}}, 0, 1, "error"},
		{"delay then terminal whatever the order", []Fault{{Type: TypeError, Percent: 100}, lat(100, 225*time.Millisecond)}, 225 * time.Millisecond, 0, "latency+error"},
	}
	for _, tt := range tests {
		set := newFaultSet(tt.faults)
		for seq := uint64(1); seq <= 20; seq++ {
			d := set.decide(1, seq, allMatched)
			if d.Delay != tt.wantDelay || d.Terminal != tt.wantTerm || d.String() != tt.wantName {
				t.Fatalf("%s: decide(%+v) = %+v (%s), want delay %v terminal %d (%s)",
					tt.name, tt.faults, d, d, tt.wantDelay, tt.wantTerm, tt.wantName)
			}
		}
	}
}

// TestCombinationIndependentRolls: error 10% then abort 10% gives errors on
// 10% and aborts on 9% (10% of the remaining 90%).
func TestCombinationIndependentRolls(t *testing.T) {
	const n = 20000
	set := newFaultSet([]Fault{{Type: TypeError, Percent: 10}, {Type: TypeAbort, Percent: 10}})
	counts := map[string]int{}
	for seq := uint64(1); seq <= n; seq++ {
		counts[set.decide(3, seq, allMatched).String()]++
	}
	for name, p := range map[string]float64{"error": 0.10, "abort": 0.09, "pass": 0.81} {
		if ok, bound := binomialOK(counts[name], n, p); !ok {
			t.Errorf("%s: %d of %d, want %.0f ± %.0f", name, counts[name], n, p*n, bound)
		}
	}
}

func TestSampleDelayBounds(t *testing.T) {
	tests := []Delay{
		{Latency: 225 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: DistUniform},
		{Latency: 10 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: DistUniform},
		{Latency: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: DistPareto},
		{Latency: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: DistPareto, Max: 150 * time.Millisecond},
		{Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, Distribution: DistLognormal},
		{Latency: time.Hour, Jitter: time.Hour, Distribution: DistPareto},
	}
	for _, f := range tests {
		f = f.normalized()
		lo, hi := f.Latency-f.Jitter, f.Latency+f.Jitter
		if f.Distribution == DistPareto {
			lo, hi = f.Latency, f.Max
		}
		if f.Distribution == DistLognormal {
			lo, hi = 1, f.Max
		}
		var ds []time.Duration
		for seq := uint64(1); seq <= 5000; seq++ {
			r := requestRand(1, seq)
			d := sampleDelay(&f, &r)
			if d < lo || d > hi {
				t.Fatalf("sampleDelay(%+v) = %v, outside [%v, %v]", f, d, lo, hi)
			}
			ds = append(ds, d)
		}
		slices.Sort(ds)
		med := ds[len(ds)/2]
		if f.Distribution == DistLognormal && (med < f.Latency*9/10 || med > f.Latency*11/10) {
			t.Errorf("lognormal %+v: median %v, want ≈ %v", f, med, f.Latency)
		}
	}
}
