package service

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// TestIsolation is the acceptance test: dependency A slowed to
// 0.9·T, 3×P concurrent requests on /a, then requests to /b. With bulkheads
// /b answers 200 quickly; with a shared pool (or the deliberately broken
// bulkhead) /b is rejected or slow.
func TestIsolation(t *testing.T) {
	const (
		p       = 4
		timeout = 400 * time.Millisecond
		bCalls  = 4
	)
	slowA := startDep(t, DepConfig{Name: "A", Latency: timeout * 9 / 10})
	fastB := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond})
	tests := []struct {
		mode     Mode
		broken   bool
		isolated bool
	}{
		{ModeBulkhead, false, true},
		{ModeShared, false, false},
		{ModeBulkhead, true, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+map[bool]string{true: "-broken"}[tt.broken], func(t *testing.T) {
			cfg := Config{
				Layout: LayoutConfig{Mode: tt.mode, PoolSize: p, Queue: p, MaxWait: timeout,
					BrokenSharedBulkhead: tt.broken},
				Timeout: timeout, Endpoints: TwoEndpoints(slowA, fastB),
			}
			svc, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(svc.Handler())
			defer func() { srv.Close(); svc.Close() }()
			c := testClient(t)

			var wg sync.WaitGroup
			for range 3 * p {
				wg.Go(func() { get(t, c, srv.URL+"/a", nil) })
			}
			poolA := svc.Layout().Pool(EndpointA)
			testkit.WaitFor(t, 10*time.Second, "/a to saturate its pool", func() bool {
				s := poolA.Snapshot()
				return s.InUse == s.Limit && s.Waiting == s.QueueLimit
			})
			var b []reply
			for range bCalls {
				b = append(b, get(t, c, srv.URL+"/b", nil))
			}
			wg.Wait()

			for i, r := range b {
				fast := r.status == 200 && r.elapsed < timeout/2
				degraded := r.status == 503 || r.elapsed >= timeout/2
				switch {
				case tt.isolated && !fast:
					t.Errorf("%+v: /b call %d: %d in %v, want 200 in < %v", tt, i, r.status, r.elapsed, timeout/2)
				case !tt.isolated && !degraded:
					t.Errorf("%+v: /b call %d: %d in %v, want rejected (503) or slow (>= %v)", tt, i, r.status, r.elapsed, timeout/2)
				}
			}
			if tt.isolated {
				if s := poolA.Snapshot(); s.Rejected.Full == 0 {
					t.Errorf("%+v: pool a rejected nothing under 3×P load: %+v", tt, s)
				}
			}
		})
	}
}

// TestGroupIsolation: with a pool group {a, b} and c alone, calls held on
// a's dependency fill the group's pool, so /b is rejected at once (the
// pool is full, no queue) while /c, in a pool of its own, is served.
// Without the group /b has its own pool and is served too: the control.
func TestGroupIsolation(t *testing.T) {
	const perPool = 2
	for _, tt := range []struct {
		name    string
		groups  map[string][]string
		bShared bool // /b draws from a's pool
	}{
		{"group", map[string][]string{"ab": {"a", "b"}}, true},
		{"no group", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			heldA := startHeldDep(t, perPool)
			fastB := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond, Size: 2})
			fastC := startDep(t, DepConfig{Name: "C", Latency: time.Millisecond, Size: 3})
			endpoints := append(TwoEndpoints(heldA.url, fastB), Endpoint{Name: "c", URL: fastC})
			pools := 3 - len(tt.groups)
			svc, url := startService(t, Config{
				Layout:  LayoutConfig{Mode: ModeBulkhead, PoolSize: perPool * pools, Queue: 0, MaxWait: time.Second, Groups: tt.groups},
				Timeout: 30 * time.Second, Endpoints: endpoints,
			})
			if n := len(svc.Layout().Pools()); n != pools {
				t.Fatalf("%d pools, want %d", n, pools)
			}
			poolA := svc.Layout().Pool(EndpointA)
			if s := poolA.Snapshot(); s.Limit != perPool {
				t.Fatalf("a's pool %s: limit %d, want %d (the total split among the pools)", poolA.Name(), s.Limit, perPool)
			}
			c := testClient(t)
			var held sync.WaitGroup
			for range perPool {
				held.Go(func() { get(t, c, url+"/a", nil) })
			}
			heldA.awaitArrivals(t, perPool)
			testkit.WaitFor(t, 10*time.Second, "a's calls to hold every permit of its pool", func() bool { return poolA.Snapshot().InUse == perPool })

			b, cc := get(t, c, url+"/b", nil), get(t, c, url+"/c", nil)
			heldA.release()
			held.Wait()

			if cc.status != http.StatusOK || cc.body != "xxx" {
				t.Errorf("/c while A holds a's pool: %d %q, want 200 xxx", cc.status, cc.body)
			}
			switch {
			case tt.bShared && (b.status != http.StatusServiceUnavailable || b.header.Get(rundata.HeaderBulkheadReject) != "full" || !strings.Contains(b.body, `"pool":"ab"`)):
				t.Errorf("/b while A holds the group's pool: %d %s %q, want 503 full from pool ab", b.status, b.header.Get(rundata.HeaderBulkheadReject), b.body)
			case !tt.bShared && (b.status != http.StatusOK || b.body != "xx"):
				t.Errorf("/b in its own pool while A holds a's: %d %q, want 200 xx", b.status, b.body)
			}
			if s := poolA.Snapshot(); tt.bShared && s.Rejected.Full != 1 {
				t.Errorf("pool %s rejected %d calls as full, want 1 (/b's)", poolA.Name(), s.Rejected.Full)
			}
		})
	}
}
