package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func statWindows(p50s []time.Duration, oks []int64) []Window {
	var ws []Window
	for i, p := range p50s {
		w := Window{Endpoint: "a", Phase: "baseline", Index: i}
		w.Counts[ClassOK] = oks[i]
		w.Counts[ClassRejected] = 100 - oks[i]
		w.Latency.P50 = p
		ws = append(ws, w)
	}
	return ws
}

func TestNotStationary(t *testing.T) {
	ms := time.Millisecond
	st := Stationarity{MaxP50Ratio: DefaultMaxP50Ratio, MinP50Diff: DefaultMinP50Diff, MaxSuccessDrop: DefaultMaxSuccessDrop, Warmup: time.Second}
	all := func(n int64) []int64 { return []int64{n, n, n, n, n, n} }
	broke := func(first, second float64, unit rundata.Unit) *rundata.Broken {
		return &rundata.Broken{Rule: rundata.RuleStationary, Endpoint: "a", Phase: "baseline", Measured: first, Limit: second, Unit: unit, Warmup: time.Second}
	}
	for _, tt := range []struct {
		name string
		p50s []time.Duration
		oks  []int64
		want *rundata.Broken // nil: steady
	}{
		{"steady", []time.Duration{10 * ms, 11 * ms, 10 * ms, 10 * ms, 11 * ms, 10 * ms}, all(100), nil},
		{"JIT warming up", []time.Duration{30 * ms, 20 * ms, 12 * ms, 2 * ms, 2 * ms, 2 * ms}, all(100), broke(float64(20*ms), float64(2*ms), rundata.UnitNanos)},
		{"fast service, tiny difference", []time.Duration{300 * time.Microsecond, 300 * time.Microsecond, 300 * time.Microsecond, 100 * time.Microsecond, 100 * time.Microsecond, 100 * time.Microsecond}, all(100), nil},
		{"errors while warming", []time.Duration{2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms}, []int64{80, 90, 95, 100, 100, 100}, broke(100*(265.0/300), 100, rundata.UnitPercent)},
		{"getting worse is not a warm-up", []time.Duration{2 * ms, 2 * ms, 2 * ms, 30 * ms, 30 * ms, 30 * ms}, all(100), nil},
		{"too few windows", []time.Duration{30 * ms, 2 * ms, 2 * ms}, []int64{100, 100, 100}, nil},
	} {
		got, broken := notStationary(statWindows(tt.p50s, tt.oks), st)
		if broken != (tt.want != nil) || broken && !reflect.DeepEqual(got, *tt.want) {
			t.Errorf("%s: %+v (%v), want %+v", tt.name, got, broken, tt.want)
		}
	}
}

// TestRunWarmupTooShort: a service that answers its first 0.7 s slowly
// (as a JIT runtime does) makes a baseline that starts too early INVALID,
// naming the field to raise; after a long enough warm-up it is valid.
func TestRunWarmupTooShort(t *testing.T) {
	var start atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start.CompareAndSwap(0, time.Now().UnixNano())
		if time.Since(time.Unix(0, start.Load())) < 700*time.Millisecond {
			time.Sleep(15 * time.Millisecond)
		}
	}))
	defer srv.Close()
	run := func(warmup time.Duration) []rundata.Broken {
		cfg := Config{
			Targets: []Target{{Name: "a", URL: srv.URL + "/", Rate: 40}},
			Phases:  []Phase{{Name: "warmup", Duration: warmup}, {Name: "baseline", Duration: 1200 * time.Millisecond}},
			Window:  100 * time.Millisecond, Timeout: time.Second, LagThreshold: time.Second,
			ExcludeFromValidity: []string{"warmup"},
			Health: &Health{Phases: []string{"baseline"}, MinSuccess: 0.99, MaxUnreachable: 0.01,
				Stationary: &Stationarity{MaxP50Ratio: 1.5, MinP50Diff: time.Millisecond, MaxSuccessDrop: 0.02, Warmup: warmup}},
		}
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range rep.Phases {
			if ps.Phase == "baseline" {
				return ps.Broken
			}
		}
		return nil
	}
	if bs := run(100 * time.Millisecond); !slices.ContainsFunc(bs, func(b rundata.Broken) bool {
		return b.Rule == rundata.RuleStationary && b.Endpoint == "a" && b.Unit == rundata.UnitNanos && b.Measured > b.Limit && b.Warmup == 100*time.Millisecond
	}) {
		t.Errorf("short warm-up: broken %+v, want the baseline's p50 not stationary after the warm-up of 100ms", bs)
	}
	start.Store(0)
	if bs := run(1500 * time.Millisecond); len(bs) != 0 {
		t.Errorf("long warm-up: broken %+v, want none", bs)
	}
}
