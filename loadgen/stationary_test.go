package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	st := Stationarity{MaxP50Ratio: DefaultMaxP50Ratio, MinP50Diff: DefaultMinP50Diff, MaxSuccessDrop: DefaultMaxSuccessDrop, Advice: "raise phases.warmup (now 1s)"}
	all := func(n int64) []int64 { return []int64{n, n, n, n, n, n} }
	for _, tt := range []struct {
		name string
		p50s []time.Duration
		oks  []int64
		want string
	}{
		{"steady", []time.Duration{10 * ms, 11 * ms, 10 * ms, 10 * ms, 11 * ms, 10 * ms}, all(100), ""},
		{"JIT warming up", []time.Duration{30 * ms, 20 * ms, 12 * ms, 2 * ms, 2 * ms, 2 * ms}, all(100),
			"warm-up too short (baseline not stationary): /a p50 20ms in its first half vs 2ms in its second; raise phases.warmup (now 1s)"},
		{"fast service, tiny difference", []time.Duration{300 * time.Microsecond, 300 * time.Microsecond, 300 * time.Microsecond, 100 * time.Microsecond, 100 * time.Microsecond, 100 * time.Microsecond}, all(100), ""},
		{"errors while warming", []time.Duration{2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms}, []int64{80, 90, 95, 100, 100, 100}, "success 88.3 % in its first half vs 100 % in its second"},
		{"getting worse is not a warm-up", []time.Duration{2 * ms, 2 * ms, 2 * ms, 30 * ms, 30 * ms, 30 * ms}, all(100), ""},
		{"too few windows", []time.Duration{30 * ms, 2 * ms, 2 * ms}, []int64{100, 100, 100}, ""},
	} {
		got := notStationary(statWindows(tt.p50s, tt.oks), st)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
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
	run := func(warmup time.Duration) []string {
		cfg := Config{
			Targets: []Target{{Name: "a", URL: srv.URL + "/", Rate: 40}},
			Phases:  []Phase{{Name: "warmup", Duration: warmup}, {Name: "baseline", Duration: 1200 * time.Millisecond}},
			Window:  100 * time.Millisecond, Timeout: time.Second, LagThreshold: time.Second,
			ExcludeFromValidity: []string{"warmup"},
			Health: &Health{Phases: []string{"baseline"}, MinSuccess: 0.99, MaxUnreachable: 0.01,
				Stationary: &Stationarity{MaxP50Ratio: 1.5, MinP50Diff: time.Millisecond, MaxSuccessDrop: 0.02, Advice: "raise phases.warmup"}},
		}
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range rep.Phases {
			if ps.Phase == "baseline" {
				return ps.Reasons
			}
		}
		return nil
	}
	if rs := run(100 * time.Millisecond); len(rs) == 0 || !strings.Contains(strings.Join(rs, ";"), "warm-up too short (baseline not stationary): /a p50") ||
		!strings.Contains(strings.Join(rs, ";"), "raise phases.warmup") {
		t.Errorf("short warm-up: reasons %q, want warm-up too short naming the field", rs)
	}
	start.Store(0)
	if rs := run(1500 * time.Millisecond); len(rs) != 0 {
		t.Errorf("long warm-up: reasons %q, want none", rs)
	}
}
