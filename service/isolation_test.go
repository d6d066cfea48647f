package service

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"
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
			waitFor(t, "/a to saturate its pool", func() bool {
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
