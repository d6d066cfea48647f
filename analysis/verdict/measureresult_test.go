package verdict

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
)

// A deciding number fails only when its interval lies wholly on the failing
// side; one that passes is uncertain only when a wide interval straddles.
func TestMeasureResultNeedsTheIntervalToFail(t *testing.T) {
	for _, c := range []struct {
		name     string
		e        measure.Estimate
		op       string
		thr, max float64
		want     string
	}{
		{"fails, interval below", measure.Estimate{Mean: 0.8, Lo: 0.75, Hi: 0.85, N: 3}, ">=", 0.9, 1, "fail"},
		{"fails by the mean, interval reaches across", measure.Estimate{Mean: 0.87, Lo: 0.83, Hi: 0.94, N: 3}, ">=", 0.9, 1, "uncertain"},
		{"fails by the mean, narrow interval across", measure.Estimate{Mean: 0.899, Lo: 0.898, Hi: 0.901, N: 3}, ">=", 0.9, 1, "uncertain"},
		{"fails, single run (no interval)", measure.Estimate{Mean: 0.87, Lo: 0.87, Hi: 0.87, N: 1}, ">=", 0.9, 1, "fail"},
		{"fails, <= side", measure.Estimate{Mean: 0.3, Lo: 0.27, Hi: 0.33, N: 3}, "<=", 0.25, 1, "fail"},
		{"fails by the mean on the <= side, across", measure.Estimate{Mean: 0.3, Lo: 0.2, Hi: 0.4, N: 3}, "<=", 0.25, 1, "uncertain"},
		{"passes, interval across but within the spread", measure.Estimate{Mean: 0.93, Lo: 0.85, Hi: 0.97, N: 3}, ">=", 0.9, 1, "pass"},
		{"passes by the mean, interval across and too wide", measure.Estimate{Mean: 0.93, Lo: 0.85, Hi: 0.97, N: 3}, ">=", 0.9, 0.05, "uncertain"},
		{"passes, interval above", measure.Estimate{Mean: 0.95, Lo: 0.93, Hi: 0.97, N: 3}, ">=", 0.9, 0.05, "pass"},
	} {
		if got := measureResult(c.e, c.op, c.thr, c.max); got != c.want {
			t.Errorf("%s: measureResult(%+v, %s %g, spread %g) = %s, want %s", c.name, c.e, c.op, c.thr, c.max, got, c.want)
		}
	}
}
