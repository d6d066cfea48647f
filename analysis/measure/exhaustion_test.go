package measure

import (
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
)

func TestExhaustedAfter(t *testing.T) {
	fs := time.Unix(1000, 0)
	at := func(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }
	sample := at(1000.25)
	for _, c := range []struct {
		name  string
		since []rundir.Point
		want  time.Duration
	}{
		{"exact mark after fault start", []rundir.Point{{Time: at(1000.1), Value: 1000.09}}, 90 * time.Millisecond},
		{"exhausted before the fault", []rundir.Point{{Time: at(999.9), Value: 999.5}}, 0},
		{"no mark exported: sample time", nil, 250 * time.Millisecond},
		{"pool free at the sample: sample time", []rundir.Point{{Time: at(1000.2), Value: 0}}, 250 * time.Millisecond},
		{"mark after the sample (clock skew): sample time", []rundir.Point{{Time: at(1000.2), Value: 1000.3}}, 250 * time.Millisecond},
	} {
		if got := exhaustedAfter(c.since, sample, fs); got != c.want {
			t.Errorf("%s: since %v → %v, want %v", c.name, c.since, got, c.want)
		}
	}
}
