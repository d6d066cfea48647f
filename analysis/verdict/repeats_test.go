package verdict

import (
	"math"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
)

func TestVerdictClear(t *testing.T) {
	thr := measure.Num(0.25)
	m := func(e measure.Estimate) Measure { return Measure{Name: "x", Value: e, Op: "<=", Threshold: &thr} }
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		outcome Outcome
		e       measure.Estimate
		want    bool
	}{
		{"interval below", Supported, measure.Estimate{Mean: 0.1, Lo: 0.05, Hi: 0.2, N: 3}, true},
		{"interval above", NotSupported, measure.Estimate{Mean: 0.5, Lo: 0.3, Hi: 0.7, N: 3}, true},
		{"interval straddles", Supported, measure.Estimate{Mean: 0.2, Lo: 0.1, Hi: 0.3, N: 3}, false},
		{"no interval yet", Supported, measure.Estimate{Mean: 0.1, Lo: nan, Hi: nan, N: 2}, false},
		{"inconclusive", Inconclusive, measure.Estimate{Mean: 0.1, Lo: 0.05, Hi: 0.2, N: 3}, false},
		{"undefined", Supported, measure.Estimate{Mean: nan, Lo: nan, Hi: nan}, false},
	} {
		v := Verdict{Outcome: tc.outcome, Measures: []Measure{m(tc.e), {Name: "info", Value: measure.Estimate{Mean: nan, Lo: nan, Hi: nan}}}}
		if got := v.Clear(); got != tc.want {
			t.Errorf("%s: Clear() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
