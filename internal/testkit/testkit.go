// Package testkit holds the helpers the tests of several packages share:
// a fixed loopback address that is free, a bounded wait for a condition,
// and a check that a test leaves no socket open. It is imported by tests
// only.
package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/sockets"
)

// FreeAddr returns a loopback host:port on 127.0.0.1 that nothing listens
// on, for a component that needs its address fixed before it starts (a
// user's service configured with its proxies' addresses, a child that
// cannot announce a port it picked). See FreePort.
func FreeAddr(t testing.TB) string {
	t.Helper()
	p, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// FreePort returns a TCP port on ip that was free a moment ago, chosen at
// random *below* the kernel's ephemeral range. A port the kernel handed
// out for ":0" (the usual trick) is one it hands out again to the next
// listener or outgoing connection of any test running in parallel, so a
// child that binds it a few milliseconds later may find it taken; ports
// below the ephemeral range are never given out by the kernel, only by
// this function, whose random choice makes two callers collide rarely.
func FreePort(ip string) (int, error) {
	lo, hi := belowEphemeral()
	var last error
	for range 64 {
		p := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			last = err
			continue
		}
		ln.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port on %s in [%d, %d) after 64 tries: %v", ip, lo, hi, last)
}

// belowEphemeral is the range FreePort picks from: from 20000 (above the
// registered ports of common servers) up to the start of the ephemeral
// range, or 20000–32767 where the kernel does not say (Linux's default
// range starts at 32768).
func belowEphemeral() (lo, hi int) {
	lo, hi = 20000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start <= 2048 {
		return lo, hi
	}
	if start <= lo+1000 {
		lo = start / 2
	}
	return lo, start
}

// WaitFor polls cond every millisecond until it holds, failing t after
// timeout with what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// CheckSockets fails t if, after the test's cleanups, this process has
// more sockets open than it had when CheckSockets was called (allowing 5 s
// for closes to land), listing the process's descriptors. Call it after
// anything the process keeps for its lifetime has been made.
func CheckSockets(t testing.TB) {
	t.Helper()
	before := sockets.Open()
	t.Cleanup(func() {
		if before < 0 {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for sockets.Open() > before {
			if time.Now().After(deadline) {
				t.Errorf("sockets: %d open after the test, %d before: %v", sockets.Open(), before, descriptors())
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// descriptors lists what this process's descriptors point to (Linux).
func descriptors() []string {
	es, _ := os.ReadDir("/proc/self/fd")
	var ls []string
	for _, e := range es {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		ls = append(ls, l)
	}
	return ls
}
