package loadgen

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestChosen: the choice of the requests given up on is reproducible, a
// share of them, and another seed or target chooses others.
func TestChosen(t *testing.T) {
	for _, share := range []float64{0.01, 0.3, 0.49, 1} {
		a, a2, b := cancelSeed(7, "a"), cancelSeed(7, "a"), cancelSeed(7, "b")
		var n, both, again int
		const total = 100_000
		for seq := range uint64(total) {
			ca := chosen(a, seq, share)
			if ca {
				n++
			}
			if ca && chosen(b, seq, share) {
				both++
			}
			if ca == chosen(a2, seq, share) {
				again++
			}
		}
		if got := float64(n) / total; math.Abs(got-share) > 0.01 {
			t.Errorf("share %v: chose %.4f of %d requests", share, got, total)
		}
		if again != total {
			t.Errorf("share %v: the same seed chose differently for %d requests", share, total-again)
		}
		if want := share * share; share < 1 && math.Abs(float64(both)/total-want) > 0.01 {
			t.Errorf("share %v: targets a and b both chose %.4f, want ≈ %.4f (independent)", share, float64(both)/total, want)
		}
	}
	if cancelSeed(1, "a") == cancelSeed(2, "a") {
		t.Error("seeds 1 and 2 give target a the same stream")
	}
}

func TestConfigCancel(t *testing.T) {
	tests := []struct {
		name   string
		cancel map[string]Cancel
		field  string // "" means valid
	}{
		{"valid", map[string]Cancel{"a": {Share: 0.5, After: 100 * time.Millisecond}}, ""},
		{"all of them", map[string]Cancel{"a": {Share: 1, After: time.Millisecond}}, ""},
		{"unknown target", map[string]Cancel{"zz": {Share: 0.5, After: time.Second}}, `phases[1].cancel.zz: invalid load generator config: phase "fault": "zz"`},
		{"canary", map[string]Cancel{"c": {Share: 0.5, After: time.Second}}, `phases[1].cancel.c: invalid load generator config: phase "fault": target "c" is a canary`},
		{"no share", map[string]Cancel{"a": {After: time.Second}}, `phases[1].cancel.a.share: invalid load generator config: phase "fault", target "a"`},
		{"share above 1", map[string]Cancel{"a": {Share: 1.5, After: time.Second}}, `phases[1].cancel.a.share:`},
		{"NaN share", map[string]Cancel{"a": {Share: math.NaN(), After: time.Second}}, `phases[1].cancel.a.share:`},
		{"negative share", map[string]Cancel{"a": {Share: -0.5, After: time.Second}}, `phases[1].cancel.a.share:`},
		{"no after", map[string]Cancel{"a": {Share: 0.5}}, `phases[1].cancel.a.after: invalid load generator config: phase "fault", target "a"`},
		{"negative after", map[string]Cancel{"a": {Share: 0.5, After: -time.Second}}, `phases[1].cancel.a.after:`},
		{"after the timeout", map[string]Cancel{"a": {Share: 0.5, After: 2 * time.Second}}, `phases[1].cancel.a.after: invalid load generator config: phase "fault", target "a": 2s is not below the client timeout 2s`},
	}
	for _, tt := range tests {
		cfg := Config{
			Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 1},
				{Name: "c", URL: "http://127.0.0.1:1/healthz", Rate: 1, Canary: true}},
			Phases:  []Phase{{Name: "baseline", Duration: time.Second}, {Name: "fault", Duration: time.Second, Cancel: tt.cancel}},
			Timeout: 2 * time.Second,
		}
		_, err := cfg.validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s %v: unexpected error %v", tt.name, tt.cancel, err)
		case tt.field != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field)):
			t.Errorf("%s %v: error %v, want ErrInvalidConfig with %q", tt.name, tt.cancel, err, tt.field)
		}
	}
}

// slowServer holds every request for hold, or until its client goes away,
// and records by X-Vegeta-Seq how long after its arrival each request's
// client went away.
type slowServer struct {
	*httptest.Server
	hold time.Duration
	mu   sync.Mutex
	gone map[uint64]time.Duration
	hits int
}

func newSlowServer(t *testing.T, hold time.Duration) *slowServer {
	t.Helper()
	s := &slowServer{hold: hold, gone: map[uint64]time.Duration{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		seq, _ := strconv.ParseUint(r.Header.Get("X-Vegeta-Seq"), 10, 64)
		s.mu.Lock()
		s.hits++
		s.mu.Unlock()
		timer := time.NewTimer(s.hold)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			s.mu.Lock()
			s.gone[seq] = time.Since(start)
			s.mu.Unlock()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRunGiveUp: in the phase with a Cancel, the server sees exactly the
// chosen requests' clients go away, about After after their arrival; they
// are client_timeout and counted as cancelled in windows and phase, and the
// health rule does not hold them against the phase; the other phases are
// untouched.
func TestRunGiveUp(t *testing.T) {
	const after, hold = 80 * time.Millisecond, 250 * time.Millisecond
	srv := newSlowServer(t, hold)
	cfg := Config{
		Targets: []Target{{Name: "a", URL: srv.URL, Rate: 100}},
		Phases: []Phase{{Name: "before", Duration: 100 * time.Millisecond},
			{Name: "fault", Duration: 300 * time.Millisecond, Cancel: map[string]Cancel{"a": {Share: 0.5, After: after}}},
			{Name: "after", Duration: 100 * time.Millisecond}},
		Window: 100 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond, Seed: 11,
		Health: &Health{Phases: []string{"before", "fault", "after"}, MinSuccess: 0.99, MaxUnreachable: 0.01},
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]bool{} // the fault phase's requests are 10..39
	for seq := uint64(10); seq < 40; seq++ {
		if chosen(cancelSeed(11, "a"), seq, 0.5) {
			want[seq] = true
		}
	}
	if n := len(want); n < 7 || n > 23 {
		t.Fatalf("seed 11 chose %d of 30 requests, want about 15", n)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for seq, d := range srv.gone {
		if !want[seq] {
			t.Errorf("request %d: its client went away after %v, but it was not chosen", seq, d)
		} else if d < after-20*time.Millisecond || d > after+100*time.Millisecond {
			t.Errorf("request %d: its client went away %v after its arrival, want ≈ %v", seq, d, after)
		}
	}
	for seq := range want {
		if _, ok := srv.gone[seq]; !ok {
			t.Errorf("request %d was chosen, but its client stayed", seq)
		}
	}
	n := int64(len(want))
	var winCancelled int64
	for _, w := range rep.Windows {
		winCancelled += w.Cancelled
	}
	for _, ps := range rep.Phases {
		wantC, wantOK := int64(0), ps.Expected
		if ps.Phase == "fault" {
			wantC, wantOK = n, 30-n
		}
		if ps.Cancelled != wantC || ps.Counts[ClassClientTimeout] != wantC || ps.Counts[ClassOK] != wantOK || ps.HarnessErrors != 0 {
			t.Errorf("%s: cancelled %d counts %v harness %d, want %d cancelled as client_timeout and %d ok", ps.Phase, ps.Cancelled, ps.Counts, ps.HarnessErrors, wantC, wantOK)
		}
		if hasRule(ps.Broken, rundata.RuleHealth) {
			t.Errorf("%s: %v: the requests given up on made it unhealthy", ps.Phase, ps.Broken)
		}
	}
	if winCancelled != n {
		t.Errorf("windows count %d cancelled, want the phase's %d", winCancelled, n)
	}
}

// TestRunGiveUpRetrying: a retrying client gives up After its first send,
// over all attempts: no request gets through its three attempts.
func TestRunGiveUpRetrying(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("X-Bulkhead-Reject", "a")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	rep, err := Run(context.Background(), Config{
		Targets: []Target{{Name: "a", URL: srv.URL, Rate: 50, Retry: &Retry{Attempts: 3}}},
		Phases:  []Phase{{Name: "fault", Duration: 300 * time.Millisecond, Cancel: map[string]Cancel{"a": {Share: 1, After: 50 * time.Millisecond}}}},
		Timeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := rep.Phases[0]
	if ps.Cancelled != 15 || ps.Counts[ClassClientTimeout] != 15 || ps.Attempts >= 3*15 {
		t.Errorf("cancelled %d counts %v attempts %d, want all 15 given up on before their third attempt", ps.Cancelled, ps.Counts, ps.Attempts)
	}
}
