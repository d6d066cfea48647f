package analysis

import (
	"math"
	"testing"
)

func TestVerdictClear(t *testing.T) {
	thr := Num(0.25)
	m := func(e Estimate) Measure { return Measure{Name: "x", Value: e, Op: "<=", Threshold: &thr} }
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		outcome Outcome
		e       Estimate
		want    bool
	}{
		{"interval below", Supported, Estimate{Mean: 0.1, Lo: 0.05, Hi: 0.2, N: 3}, true},
		{"interval above", NotSupported, Estimate{Mean: 0.5, Lo: 0.3, Hi: 0.7, N: 3}, true},
		{"interval straddles", Supported, Estimate{Mean: 0.2, Lo: 0.1, Hi: 0.3, N: 3}, false},
		{"no interval yet", Supported, Estimate{Mean: 0.1, Lo: nan, Hi: nan, N: 2}, false},
		{"inconclusive", Inconclusive, Estimate{Mean: 0.1, Lo: 0.05, Hi: 0.2, N: 3}, false},
		{"undefined", Supported, Estimate{Mean: nan, Lo: nan, Hi: nan}, false},
	} {
		v := Verdict{Outcome: tc.outcome, Measures: []Measure{m(tc.e), {Name: "info", Value: Estimate{Mean: nan, Lo: nan, Hi: nan}}}}
		if got := v.Clear(); got != tc.want {
			t.Errorf("%s: Clear() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
