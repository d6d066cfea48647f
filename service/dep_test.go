package service

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDepDelaysAreSeededAndBounded(t *testing.T) {
	cfg := DepConfig{Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 7}
	d1, _ := NewDep(cfg)
	d2, _ := NewDep(cfg)
	cfg.Seed = 8
	d3, _ := NewDep(cfg)
	differs := false
	for i := range 200 {
		a, b, c := d1.delay(), d2.delay(), d3.delay()
		if a != b {
			t.Fatalf("draw %d: same seed gave %v and %v", i, a, b)
		}
		if a < 8*time.Millisecond || a > 12*time.Millisecond {
			t.Fatalf("draw %d: %v outside 10ms±2ms", i, a)
		}
		differs = differs || a != c
	}
	if !differs {
		t.Fatal("seeds 7 and 8 gave identical sequences")
	}
}

func TestDepStopsWaitingWhenCallerLeaves(t *testing.T) {
	d, _ := NewDep(DepConfig{Latency: time.Hour, Size: 3})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
	c := testClient(t)
	if _, err := c.Do(req); err == nil {
		t.Fatal("a request to a 1h stub returned before its deadline")
	}
	// srv.Close (deferred) blocks until handlers return: it would hang for
	// an hour if the stub ignored the cancellation.
}

func TestDepConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg   DepConfig
		field string
	}{
		{DepConfig{Latency: -1}, "latency"},
		{DepConfig{Jitter: -1}, "jitter"},
		{DepConfig{Size: -1}, "size"},
		{DepConfig{Capacity: -1}, "capacity"},
		{DepConfig{Capacity: MaxDepCapacity + 1}, "capacity"},
		{DepConfig{Capacity: 1, Queue: -1}, "queue"},
		{DepConfig{Capacity: 1, Queue: MaxDepQueue + 1}, "queue"},
		{DepConfig{Queue: 3}, "queue"}, // no capacity: nobody waits
	} {
		_, err := NewDep(tt.cfg)
		if ce, ok := err.(*ConfigError); !ok || ce.Field != tt.field {
			t.Errorf("NewDep(%+v) = %v, want ConfigError on %q", tt.cfg, err, tt.field)
		}
	}
}

func TestDepPayload(t *testing.T) {
	url := startDep(t, DepConfig{Name: "A", Payload: 4096, Seed: 9, Size: 3})
	r := get(t, testClient(t), url+"/", nil)
	var v []map[string]any
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(r.body), &v) != nil || len(r.body) > 4096 || len(r.body) < 4096-160 {
		t.Fatalf("payload stub answered %d %q, %d bytes; want 200 application/json, a JSON array of about 4096 bytes", r.status, r.header.Get("Content-Type"), len(r.body))
	}
	if _, err := NewDep(DepConfig{Payload: -1}); err == nil || !strings.Contains(err.Error(), "payload") {
		t.Errorf("NewDep(Payload: -1) = %v, want an error naming payload", err)
	}
}
