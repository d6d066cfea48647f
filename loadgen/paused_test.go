package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// arrivalServer answers ok and records when each request arrived, by path.
type arrivalServer struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals map[string][]time.Time
}

func newArrivalServer(t *testing.T) *arrivalServer {
	t.Helper()
	s := &arrivalServer{arrivals: map[string][]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		s.mu.Lock()
		s.arrivals[r.URL.Path] = append(s.arrivals[r.URL.Path], now)
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *arrivalServer) at(path string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals[path]...)
}

// TestRunPausedPhase: a target at rate 0 in a phase sends nothing in it,
// resumes on time in the next phase, and its paused phase is not judged
// (not even by the health rule that names it), so the run's validity is
// that of the other phases. A canary pauses the same way.
func TestRunPausedPhase(t *testing.T) {
	srv := newArrivalServer(t)
	const ph = 300 * time.Millisecond
	cfg := Config{
		Targets: []Target{{Name: "a", URL: srv.URL + "/a", Rate: 50},
			{Name: "c", URL: srv.URL + "/c", Rate: 10, Canary: true}},
		Phases: []Phase{{Name: "before", Duration: ph},
			{Name: "pause", Duration: ph, Rates: map[string]float64{"a": 0, "c": 0}},
			{Name: "after", Duration: ph}},
		Window: 100 * time.Millisecond, Timeout: time.Second, LagThreshold: 50 * time.Millisecond,
		Health: &Health{Phases: []string{"before", "pause", "after"}, MinSuccess: 0.99, MaxUnreachable: 0.01},
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pauseStart, after := rep.Start.Add(ph), rep.Start.Add(2*ph)
	for _, path := range []string{"/a", "/c"} {
		arr := srv.at(path)
		var first time.Time
		for _, at := range arr {
			// The last request before the pause is due 20 ms before it;
			// one arriving 20 ms into the pause was sent 40 ms late.
			if at.After(pauseStart.Add(20*time.Millisecond)) && at.Before(after) {
				t.Errorf("%s: a request arrived %v into the paused phase", path, at.Sub(pauseStart))
			}
			if !at.Before(after) && first.IsZero() {
				first = at
			}
		}
		if d := first.Sub(after); first.IsZero() || d > 50*time.Millisecond {
			t.Errorf("%s: first request after the pause arrived %v after its start (zero: none of %d), want within 50ms", path, d, len(arr))
		}
	}
	valid := true
	for _, ps := range rep.Phases {
		key := ps.Endpoint + "/" + ps.Phase
		if ps.Phase != "pause" {
			if want := map[string]int64{"a": 15, "c": 3}[ps.Endpoint]; ps.Expected != want || ps.Counts.Total() != want || ps.Paused {
				t.Errorf("%s: expected %d total %d paused %v, want %d results", key, ps.Expected, ps.Counts.Total(), ps.Paused, want)
			}
			if !ps.Valid {
				t.Logf("%s invalid (machine noise?): %v", key, ps.Broken)
			}
			valid = valid && ps.Valid
			continue
		}
		if !ps.Paused || !ps.Excluded || !ps.Valid || len(ps.Broken) != 0 || ps.Expected != 0 || ps.Sent != 0 || ps.Counts.Total() != 0 || ps.TargetRate != 0 {
			t.Errorf("%s: paused %v excluded %v valid %v broken %v expected %d sent %d total %d target %v, want a paused record with nothing due",
				key, ps.Paused, ps.Excluded, ps.Valid, ps.Broken, ps.Expected, ps.Sent, ps.Counts.Total(), ps.TargetRate)
		}
	}
	if rep.Valid != valid {
		t.Errorf("report valid %v, but the judged phases' validity is %v", rep.Valid, valid)
	}
	for _, w := range rep.Windows {
		if w.Phase == "pause" && (w.Expected != 0 || w.Counts.Total() != 0 || w.TargetRate != 0) {
			t.Errorf("window %s/%d in the pause: expected %d total %d target %v, want none", w.Endpoint, w.Index, w.Expected, w.Counts.Total(), w.TargetRate)
		}
	}
}
