package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestDepBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--latency", "-1ms"}, "--latency"},
		{[]string{"--jitter", "-1ms"}, "--jitter"},
		{[]string{"--size", "-1"}, "--size"},
		{[]string{"--seed", "-1"}, "--seed"},
		{[]string{"--capacity", "-1"}, "--capacity"},
		{[]string{"--capacity", "4", "--queue", "-1"}, "--queue"},
		{[]string{"--queue", "5"}, "--queue"},
		{[]string{"--latency", "slow"}, "--latency"},
		{[]string{"--listen", "127.0.0.1"}, "--listen"},
		{[]string{"positional"}, "positional"},
	}
	for _, tt := range tests {
		args := append([]string{"dep"}, tt.args...)
		code, msg := execute(t, args...)
		if code != ExitUsage || !strings.Contains(msg, tt.flag) {
			t.Errorf("bulkheadlab %s: exit %d %q, want exit %d naming %s", strings.Join(args, " "), code, msg, ExitUsage, tt.flag)
		}
	}
}

// TestDepCapacityFlags: --capacity and --queue reach the stub: it serves,
// and its /metrics shows the capacity and the queue.
func TestDepCapacityFlags(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dep, errc := startCmd(t, ctx, "dep", "--name", "A", "--latency", "1ms", "--capacity", "2", "--queue", "3")
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	bodies := map[string]string{}
	for _, path := range []string{"/x", "/metrics"} {
		resp, err := c.Get("http://" + dep.Addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d %q", path, resp.StatusCode, b)
		}
		bodies[path] = string(b)
	}
	for _, want := range []string{"bulkheadlab_dep_capacity 2\n", "bulkheadlab_dep_queue_limit 3\n", "bulkheadlab_dep_queue_wait_seconds_count 1\n"} {
		if !strings.Contains(bodies["/metrics"], want) {
			t.Errorf("/metrics of dep --capacity 2 --queue 3 lacks %q", want)
		}
	}
	tr.CloseIdleConnections()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("dep after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dep did not stop within 10s of cancel")
	}
}
