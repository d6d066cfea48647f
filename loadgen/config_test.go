package loadgen

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestConfigPhaseRates(t *testing.T) {
	base := func() Config {
		return Config{
			Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 1}, {Name: "b", URL: "http://127.0.0.1:1/b", Rate: 5}},
			Phases: []Phase{{Name: "baseline", Duration: time.Second},
				{Name: "fault", Duration: time.Second, Rates: map[string]float64{"a": 20}}},
		}
	}
	tests := []struct {
		name  string
		rates map[string]float64
		field string // "" means valid
	}{
		{"valid", map[string]float64{"a": 20, "b": 0.5}, ""},
		{"empty map", map[string]float64{}, ""},
		{"unknown target", map[string]float64{"a": 20, "zz": 3}, "phases[1].rates.zz"},
		{"zero pauses", map[string]float64{"a": 0}, ""},
		{"negative", map[string]float64{"b": -1}, "phases[1].rates.b"},
		{"NaN", map[string]float64{"a": math.NaN()}, "phases[1].rates.a"},
		{"too high", map[string]float64{"a": 2e7}, "phases[1].rates.a"},
		{"infinite", map[string]float64{"b": math.Inf(1)}, "phases[1].rates.b"},
		{"first bad name wins", map[string]float64{"b": 0, "a": -1}, "phases[1].rates.a"},
	}
	for _, tt := range tests {
		cfg := base()
		cfg.Phases[1].Rates = tt.rates
		_, err := cfg.validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s %v: unexpected error %v", tt.name, tt.rates, err)
		case tt.field != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field+":")):
			t.Errorf("%s %v: error %v, want ErrInvalidConfig naming %s", tt.name, tt.rates, err, tt.field)
		}
	}
}

func TestConfigBuildsSchedules(t *testing.T) {
	cfg := Config{
		Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 1}, {Name: "b", URL: "http://127.0.0.1:1/b", Rate: 5}},
		Phases: []Phase{{Name: "baseline", Duration: time.Second},
			{Name: "fault", Duration: 500 * time.Millisecond, Rates: map[string]float64{"a": 20, "b": 5}},
			{Name: "recovery", Duration: time.Second}},
	}
	p, err := cfg.validate()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		segs  int
		total int64
		max   float64
	}{{3, 1 + 10 + 1, 20}, {1, 13, 5}} // b: one segment, 2.5 s at 5/s: due at 0, 0.2 … 2.4 s
	for i, w := range want {
		s := p.schedules[i]
		if len(s.segs) != w.segs || s.total != w.total || s.maxRate() != w.max {
			t.Errorf("target %d: %d segments %+v total %d max %v, want %+v", i, len(s.segs), s.segs, s.total, s.maxRate(), w)
		}
	}
}

// TestConfigPausedTargets: a rate of 0 pauses a target where it applies,
// but a target paused in every phase is an error naming it.
func TestConfigPausedTargets(t *testing.T) {
	tests := []struct {
		name   string
		rate   float64            // target b's Rate
		phases map[string]float64 // b's rate per phase, by phase name
		field  string             // "" means valid
	}{
		{"paused in one phase", 5, map[string]float64{"fault": 0}, ""},
		{"sends in one phase only", 0, map[string]float64{"fault": 3}, ""},
		{"zero everywhere by default", 0, nil, `targets[1]: invalid load generator config: target "b" sends nothing`},
		{"zero everywhere by phase", 5, map[string]float64{"baseline": 0, "fault": 0}, `targets[1]: invalid load generator config: target "b" sends nothing`},
		{"negative default", -1, map[string]float64{"fault": 3}, "targets[1].rate:"},
	}
	for _, tt := range tests {
		cfg := Config{
			Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 1}, {Name: "b", URL: "http://127.0.0.1:1/b", Rate: tt.rate}},
			Phases:  []Phase{{Name: "baseline", Duration: time.Second}, {Name: "fault", Duration: time.Second}},
		}
		for i, ph := range cfg.Phases {
			if r, ok := tt.phases[ph.Name]; ok {
				cfg.Phases[i].Rates = map[string]float64{"b": r}
			}
		}
		_, err := cfg.validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s (rate %v, phases %v): unexpected error %v", tt.name, tt.rate, tt.phases, err)
		case tt.field != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field)):
			t.Errorf("%s (rate %v, phases %v): error %v, want ErrInvalidConfig with %q", tt.name, tt.rate, tt.phases, err, tt.field)
		}
	}
}
