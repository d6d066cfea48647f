package main

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoServer serves an in-process echo on a loopback port until the test
// ends (and its connections have closed).
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 4096))
			})
		}
	})
	return l.Addr().String()
}

// TestTCPAttackEcho runs a short attack on an in-process echo server: every
// exchange is answered and timed, and none is left running.
func TestTCPAttackEcho(t *testing.T) {
	addr := echoServer(t)
	c, err := tcpAttack(context.Background(), "echo", addr, 0, 500, 4, 200*time.Millisecond, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.sent != 100 || c.ok != 100 || len(c.lat) != 100 || len(c.errs) != 0 || !c.held() {
		t.Errorf("cell %d sent, %d ok, %d timed, errors %v, held %v; want 100 answered", c.sent, c.ok, len(c.lat), c.errs, c.held())
	}
}

// TestPipelineTrialEcho times both pipelined shapes on an in-process echo
// server: every answer comes back, quickly, and the writer is done.
func TestPipelineTrialEcho(t *testing.T) {
	addr := echoServer(t)
	for _, sh := range pipelineShapes {
		d, err := pipelineTrial(addr, pipelineN, sh.size, sh.gap, 2*time.Second)
		if err != nil || d <= 0 || d > time.Second {
			t.Errorf("%s: %v, %v; want the answers within a second", sh.name, d, err)
		}
	}
}

func TestTCPCellHeld(t *testing.T) {
	for _, tc := range []struct {
		c    tcpCell
		want bool
	}{
		{tcpCell{rate: 1000, sent: 1000, ok: 1000, elapsed: time.Second}, true},
		{tcpCell{rate: 1000, sent: 1000, ok: 998, elapsed: time.Second}, false},
		{tcpCell{rate: 1000, sent: 1000, ok: 1000, elapsed: 1100 * time.Millisecond}, false},
		{tcpCell{rate: 1000}, false},
	} {
		if got := tc.c.held(); got != tc.want {
			t.Errorf("%+v held = %v, want %v", tc.c, got, tc.want)
		}
	}
}
