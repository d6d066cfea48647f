package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
)

// TestFleetPrediction: Little's law for a fleet, below and above the
// dependency's capacity and with unlimited capacity.
func TestFleetPrediction(t *testing.T) {
	for _, tc := range []struct {
		nl, lambda, s, c float64
		k, w             float64
	}{
		{3, 150, 0.04, 4, 3, 0.04},            // the bulkhead fills, below capacity
		{6, 150, 0.04, 4, 6, 0.06},            // above capacity: queueing, W = K·s/C
		{12, 150, 0.04, 4, 12, 0.12},          // past T (not capped here)
		{12, 150, 0.04, 16, 6, 0.04},          // capacity enough: demand λ·s
		{12, 50, 0.04, 4, 2, 0.04},            // demand below both
		{12, 150, 0.04, math.NaN(), 6, 0.04},  // unlimited
		{4, 150, 0.04, 4, 4, 0.04},            // the budget: exactly C
		{12, 120, 0.04, 4, 12, 0.04 * 12 / 4}, // λ·s = 4.8 > C: saturated
	} {
		k, w := fleetPrediction(tc.nl, tc.lambda, tc.s, tc.c)
		if math.Abs(k-tc.k) > 1e-9 || math.Abs(w-tc.w) > 1e-9 {
			t.Errorf("N·L %v, λ %v, s %v, C %v: K %v W %v, want %v and %v", tc.nl, tc.lambda, tc.s, tc.c, k, w, tc.k, tc.w)
		}
	}
}

// TestSEOver: the standard error of a gauge's mean from from to to: the
// samples' standard deviation over √n, undefined with fewer than two.
func TestSEOver(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s []rundir.Point
	for i, v := range []float64{9, 2, 3, 3, 2, 9} { // the 9s fall outside
		s = append(s, rundir.Point{Time: t0.Add(time.Duration(i) * 250 * time.Millisecond), Value: v})
	}
	from, to := t0.Add(250*time.Millisecond), t0.Add(time.Second)
	if got, want := float64(seOver(s, from, to)), math.Sqrt(1.0/3)/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("seOver = %v, want %v", got, want)
	}
	if got := float64(meanOver(s, from, to)); got != 2.5 {
		t.Errorf("meanOver = %v, want 2.5", got)
	}
	if got := float64(seOver(s, from, from)); !math.IsNaN(got) {
		t.Errorf("seOver of one sample = %v, want undefined", got)
	}
}
