package measure

import (
	"encoding/json"
	"math"
	"testing"
)

// TestEstimateJSONRoundTrip: an estimate read back from summary.json is the
// one written: its interval kept, an undefined mean and a missing interval
// NaN.
func TestEstimateJSONRoundTrip(t *testing.T) {
	for _, e := range []Estimate{{Mean: 0.25, Lo: 0.2, Hi: 0.3, N: 3}, {Mean: 1, Lo: math.NaN(), Hi: math.NaN(), N: 1}, {Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got Estimate
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(got.Mean, e.Mean) || !same(got.Lo, e.Lo) || !same(got.Hi, e.Hi) || got.N != e.N {
			t.Errorf("%+v → %s → %+v", e, b, got)
		}
	}
}
