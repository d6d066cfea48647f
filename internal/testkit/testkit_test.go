package testkit

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestFreePortBelowEphemeral: the ports FreePort gives are free, on the
// asked address and outside the range the kernel hands out for ":0".
func TestFreePortBelowEphemeral(t *testing.T) {
	_, start := belowEphemeral()
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p >= start || p < 1024 {
			t.Fatalf("port %d: want below the ephemeral range (starts at %d)", p, start)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d given as free: %v", p, err)
		}
		ln.Close()
		seen[p] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 calls gave only %d distinct ports: the choice is not spread", len(seen))
	}
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p < start {
			t.Skipf("the kernel gave :0 the port %d below its own range start %d; nothing to compare", p, start)
		}
	}
}

// TestFreePortSkipsTaken: a port in use is never returned.
func TestFreePortSkipsTaken(t *testing.T) {
	lo, hi := belowEphemeral()
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	taken := map[int]bool{}
	for p := lo; p < lo+200 && p < hi; p++ {
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			lns = append(lns, l)
			taken[p] = true
		}
	}
	for range 200 {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if taken[p] {
			t.Fatalf("FreePort gave %d, which this test holds", p)
		}
	}
}

func TestWaitFor(t *testing.T) {
	begin := time.Now()
	n := 0
	WaitFor(t, time.Second, "three polls", func() bool { n++; return n == 3 })
	if time.Since(begin) > 500*time.Millisecond {
		t.Errorf("WaitFor took %s for three polls", time.Since(begin))
	}
}
