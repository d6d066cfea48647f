package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bulkheadlab/bulkheadlab/internal/redistest"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// redisService plays a user's service whose dependencies are reached over
// TCP: /a and /b each read a key from Redis, through their own go-redis
// client (to the fault proxy of A, of B) behind a bulkhead of their own
// (at most 4 at once, 250 ms to get a slot: 503 X-Bulkhead-Reject), with a
// 250 ms deadline (504 X-Dependency-Error; another error: 502).
type redisService struct {
	clients map[string]*redis.Client
	slots   map[string]chan struct{}
}

func newRedisService(proxies map[string]string) *redisService {
	s := &redisService{clients: map[string]*redis.Client{}, slots: map[string]chan struct{}{}}
	for ep, addr := range proxies {
		s.clients[ep] = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			PoolSize: 8, DialTimeout: time.Second, ReadTimeout: 250 * time.Millisecond, WriteTimeout: 250 * time.Millisecond,
			ContextTimeoutEnabled: true})
		s.slots[ep] = make(chan struct{}, 4)
	}
	return s
}

func (s *redisService) close() {
	for _, c := range s.clients {
		c.Close()
	}
}

func (s *redisService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep := r.URL.Path[1:]
	if ep == "healthz" {
		return
	}
	c, ok := s.clients[ep]
	if !ok {
		http.NotFound(w, r)
		return
	}
	t := time.NewTimer(250 * time.Millisecond)
	defer t.Stop()
	select {
	case s.slots[ep] <- struct{}{}:
		defer func() { <-s.slots[ep] }()
	case <-t.C:
		w.Header().Set("X-Bulkhead-Reject", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 250*time.Millisecond)
	defer cancel()
	err := c.Get(ctx, "k").Err()
	var ne net.Error
	switch {
	case err == nil || errors.Is(err, redis.Nil):
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("X-Dependency-Error", "timeout")
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		w.Header().Set("X-Dependency-Error", err.Error())
		w.WriteHeader(http.StatusBadGateway)
	}
}

// TestRunExternalTCPRedis: a user's service whose dependencies are a real
// redis-server reached over TCP (tcp:// upstreams) runs an external
// experiment: the slow condition (latency) slows /a's Redis reads through
// A's TCP proxy until its bulkhead rejects, the failing condition (reset)
// makes them fail with a connection error, and /b behind its own bulkhead
// stays ok in both.
func TestRunExternalTCPRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external-mode experiment (~10 s)")
	}
	upstream := redistest.Start(t)
	proxyA, proxyB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	svc := newRedisService(map[string]string{"a": proxyA, "b": proxyB})
	defer svc.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: svc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	tmp := t.TempDir()
	spec := fmt.Sprintf(`name: ext-tcp
seed: 3
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  canary:    "http://%[1]s/healthz"
  upstreams: {A: "tcp://%[2]s", B: "tcp://%[2]s"}
  proxies:   {A: "%[3]s", B: "%[4]s"}
  rules:
    - {status: 503, header: X-Bulkhead-Reject, class: rejected}
    - {status: 504, header: X-Dependency-Error, class: dep_timeout}
    - {status: 502, header: X-Dependency-Error, class: dep_error}
service: {timeout: 250ms, max_wait: 250ms}
load: {rates: {a: 40, b: 40}}
phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 500ms}
conditions: [slow, failing]
modes: [bulkhead]
`, ln.Addr(), upstream, proxyA, proxyB)
	file := filepath.Join(tmp, "ext-tcp.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRunner(t, tmp, "run", file, "--out", tmp, "--no-report")
	if code := r.wait(t, 90*time.Second); code != ExitOK {
		t.Fatalf("run: exit %d; output:\n%s", code, r.out.String())
	}
	dir := resultsDir(tmp, "ext-tcp")
	for _, tc := range []struct {
		run   string
		a     func(p rundata.PhaseStats) bool
		wantA string
	}{
		{"slow-bulkhead-r1", func(p rundata.PhaseStats) bool {
			return p.Counts[loadgen.ClassRejected]+p.Counts[loadgen.ClassDepTimeout] > 0 && (p.LatencyOK.Count == 0 || p.LatencyOK.P50 >= 200*time.Millisecond)
		}, "slowed past its deadline or rejected (latency on its answers)"},
		{"failing-bulkhead-r1", func(p rundata.PhaseStats) bool {
			return p.Counts[loadgen.ClassDepError] > p.Counts.Total()/2
		}, "failing with connection errors (reset)"},
	} {
		m, err := readMeta(dir, tc.run)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != rundata.StatusComplete || len(m.Faults) != 2 {
			t.Errorf("%s: status %q, fault events %+v; want complete with set and clear", tc.run, m.Status, m.Faults)
		}
		phases := readPhases(t, dir, tc.run)
		for _, p := range phases {
			if p.Phase != "fault" {
				continue
			}
			switch {
			case p.Endpoint == "a" && !tc.a(p):
				t.Errorf("%s: /a in the fault phase: %v, ok p50 %s; want it %s", tc.run, p.Counts, p.LatencyOK.P50, tc.wantA)
			case p.Endpoint == "b" && (p.Counts.Total() == 0 || p.Counts.Failed()*20 > p.Counts.Total()):
				// At least 95 %: a shared pool fails most of /b; a
				// failure or two is a stall of a loaded test machine.
				t.Errorf("%s: /b in the fault phase: %v, want at least 95 %% ok behind its bulkhead", tc.run, p.Counts)
			}
		}
	}
}
