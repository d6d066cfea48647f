package analysis

import (
	"testing"
	"time"
)

func TestExhaustedAfter(t *testing.T) {
	fs := time.Unix(1000, 0)
	at := func(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }
	sample := at(1000.25)
	for _, c := range []struct {
		name  string
		since []point
		want  time.Duration
	}{
		{"exact mark after fault start", []point{{at(1000.1), 1000.09}}, 90 * time.Millisecond},
		{"exhausted before the fault", []point{{at(999.9), 999.5}}, 0},
		{"no mark exported: sample time", nil, 250 * time.Millisecond},
		{"pool free at the sample: sample time", []point{{at(1000.2), 0}}, 250 * time.Millisecond},
		{"mark after the sample (clock skew): sample time", []point{{at(1000.2), 1000.3}}, 250 * time.Millisecond},
	} {
		if got := exhaustedAfter(c.since, sample, fs); got != c.want {
			t.Errorf("%s: since %v → %v, want %v", c.name, c.since, got, c.want)
		}
	}
}
