package measure

import (
	"math"
	"testing"
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
