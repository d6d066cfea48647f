package loadgen

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// rejectingServer rejects each request, independently, with probability
// r (a seeded generator), as the built-in service's bulkhead does; hold is
// how long a rejection takes, retryAfter its Retry-After header ("" none).
func rejectingServer(t *testing.T, r float64, hold time.Duration, retryAfter string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		mu.Lock()
		reject := rng.Float64() < r
		mu.Unlock()
		if !reject {
			w.Write([]byte("ok"))
			return
		}
		time.Sleep(hold)
		w.Header().Set("X-Bulkhead-Reject", "a")
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(s.Close)
	return s, &hits
}

func retryRun(t *testing.T, url string, rate float64, d time.Duration, timeout time.Duration, r *Retry) (*Report, rundata.RetryCounts) {
	t.Helper()
	rep, err := Run(context.Background(), Config{
		Targets: []Target{{Name: "a", URL: url, Rate: rate, Retry: r}},
		Phases:  []Phase{{Name: "fault", Duration: d}},
		Window:  250 * time.Millisecond, Timeout: timeout, LagThreshold: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum rundata.RetryCounts
	for _, w := range rep.Windows {
		sum.Add(w.RetryCounts)
	}
	if ps := rep.Phases[0].RetryCounts; ps != sum {
		t.Errorf("phase counts %+v are not the sum of the windows' %+v", ps, sum)
	}
	return rep, sum
}

// TestRetryAmplification: with every attempt rejected independently with
// probability r and up to 4 attempts, a client sends 1 + r + r² + r³
// attempts per request; its counts agree with what the server saw, and a
// request's final class is its last attempt's.
func TestRetryAmplification(t *testing.T) {
	for _, r := range []float64{0.3, 0.6} {
		srv, hits := rejectingServer(t, r, 0, "")
		rep, c := retryRun(t, srv.URL, 200, 2*time.Second, 2*time.Second, &Retry{Attempts: 4, Backoff: 2 * time.Millisecond, Jitter: 0.5, Seed: 3})
		want := 1 + r + r*r + r*r*r
		got := c.Amplification()
		if math.Abs(got-want)/want > 0.08 {
			t.Errorf("r=%.1f: amplification %.3f, want %.3f ± 8%%", r, got, want)
		}
		if first := c.Attempts - c.Retries; first != 400 {
			t.Errorf("r=%.1f: %d first attempts, want the 400 requests", r, first)
		}
		if c.Attempts != hits.Load() {
			t.Errorf("r=%.1f: client counted %d attempts, server saw %d", r, c.Attempts, hits.Load())
		}
		if s := c.RetryableShare(); math.Abs(s-r) > 0.07 {
			t.Errorf("r=%.1f: retryable share %.3f", r, s)
		}
		ps := rep.Phases[0]
		// a request fails only when all 4 attempts did: r⁴ of them
		if fail := float64(ps.Counts[ClassRejected]) / 400; math.Abs(fail-math.Pow(r, 4)) > 0.06 {
			t.Errorf("r=%.1f: %.3f of the requests ended rejected, want r⁴ = %.3f", r, fail, math.Pow(r, 4))
		}
		if c.Refused != 0 {
			t.Errorf("r=%.1f: %d refusals without a budget", r, c.Refused)
		}
	}
}

// TestRetryLatencyIsTheClientsTotal: a request rejected 4 times with a
// fixed 40 ms backoff took at least the three delays.
func TestRetryLatencyIsTheClientsTotal(t *testing.T) {
	srv, _ := rejectingServer(t, 1, 0, "")
	rep, c := retryRun(t, srv.URL, 50, time.Second, 2*time.Second, &Retry{Attempts: 4, Backoff: 40 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	ps := rep.Phases[0]
	if ps.Counts[ClassRejected] != 50 || c.Attempts != 200 {
		t.Fatalf("counts %v, attempts %d; want 50 rejected after 200 attempts", ps.Counts, c.Attempts)
	}
	if ps.Latency.P50 < 120*time.Millisecond {
		t.Errorf("latency p50 %v: a retried request's latency must include its retries' delays (3 × 40 ms)", ps.Latency.P50)
	}
}

// TestRetryBudgets: a token budget holds retries to its ratio of the
// requests (plus its reserve) however fast the failures come; failsafe-go's
// in-flight budget refuses retries when many are in flight at once.
func TestRetryBudgets(t *testing.T) {
	srv, _ := rejectingServer(t, 1, 0, "")
	_, c := retryRun(t, srv.URL, 200, 2*time.Second, 2*time.Second,
		&Retry{Attempts: 4, Budget: &RetryBudget{Ratio: 0.1, Reserve: 5}})
	if c.Retries > 45 || c.Retries < 35 {
		t.Errorf("token budget 0.1 + 5 over 400 requests: %d retries, want 35–45", c.Retries)
	}
	if c.Refused < 350 {
		t.Errorf("token budget: %d refusals, want most of the 400 requests", c.Refused)
	}
	slow, _ := rejectingServer(t, 1, 50*time.Millisecond, "")
	_, c = retryRun(t, slow.URL, 200, time.Second, 2*time.Second,
		&Retry{Attempts: 4, Budget: &RetryBudget{InFlight: 0.1, MinConcurrency: 1}})
	if c.Refused == 0 || c.Amplification() > 3.5 {
		t.Errorf("in-flight budget: %d refusals, amplification %.2f; want refusals", c.Refused, c.Amplification())
	}
}

// TestRetryAfter: a client that honours Retry-After gives up when it does
// not fit in its deadline, and otherwise waits it out.
func TestRetryAfter(t *testing.T) {
	srv, hits := rejectingServer(t, 1, 0, "1")
	rep, c := retryRun(t, srv.URL, 100, time.Second, 800*time.Millisecond, &Retry{Attempts: 4, HonorRetryAfter: true})
	if c.Retries != 0 || c.Refused != 100 || hits.Load() != 100 || rep.Phases[0].Counts[ClassRejected] != 100 {
		t.Errorf("Retry-After 1 s, deadline 0.8 s: retries %d refused %d hits %d counts %v; want no retry, 100 rejected",
			c.Retries, c.Refused, hits.Load(), rep.Phases[0].Counts)
	}
	_, c = retryRun(t, srv.URL, 100, time.Second, 800*time.Millisecond, &Retry{Attempts: 4})
	if c.Retries != 300 {
		t.Errorf("Retry-After ignored: %d retries, want 300", c.Retries)
	}
	srv2, _ := rejectingServer(t, 1, 0, "1")
	rep, c = retryRun(t, srv2.URL, 20, 500*time.Millisecond, 3*time.Second, &Retry{Attempts: 2, HonorRetryAfter: true})
	if c.Retries != 10 || rep.Phases[0].Latency.P50 < time.Second {
		t.Errorf("Retry-After 1 s within a 3 s deadline: %d retries (want 10), latency p50 %v (want ≥ 1 s)", c.Retries, rep.Phases[0].Latency.P50)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"3", 3 * time.Second, true}, {"0", 0, true}, {"-1", 0, false}, {"", 0, false}, {"soon", 0, false},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0, true},
		{"99999999999999999999", 0, false}} {
		got, ok := retryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		r    Retry
		want string
	}{
		{Retry{Attempts: 1}, "targets[0].retry.attempts"},
		{Retry{Attempts: 11}, "targets[0].retry.attempts"},
		{Retry{Attempts: 2, Jitter: 2}, "targets[0].retry.jitter"},
		{Retry{Attempts: 2, Backoff: time.Second, MaxBackoff: time.Millisecond}, "targets[0].retry.max_backoff"},
		{Retry{Attempts: 2, On: []Class{ClassOK}}, "targets[0].retry.on[0]"},
		{Retry{Attempts: 2, Budget: &RetryBudget{}}, "targets[0].retry.budget"},
		{Retry{Attempts: 2, Budget: &RetryBudget{Ratio: 0.1, InFlight: 0.1}}, "targets[0].retry.budget"},
		{Retry{Attempts: 2, Budget: &RetryBudget{InFlight: 2}}, "targets[0].retry.budget.in_flight"},
	} {
		r := tc.r
		_, err := Run(context.Background(), Config{Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/", Rate: 1, Retry: &r}},
			Phases: []Phase{{Name: "p", Duration: time.Second}}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.r, err, tc.want)
		}
	}
	r := Retry{Attempts: 2}
	if _, err := Run(context.Background(), Config{Targets: []Target{{Name: "c", URL: "http://127.0.0.1:1/", Rate: 1, Canary: true, Retry: &r}},
		Phases: []Phase{{Name: "p", Duration: time.Second}}}); err == nil || !strings.Contains(err.Error(), "canary") {
		t.Errorf("a retrying canary: %v", err)
	}
}
