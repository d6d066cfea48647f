// Package redistest starts a real redis-server for tests: Debian's
// redis-server on a free loopback port, without persistence, stopped when
// the test ends.
package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start starts redis-server on a free 127.0.0.1 port and returns its
// host:port once it answers PING. Without redis-server on PATH the test is
// skipped, except when the environment sets CI (as .ci/run does, after
// installing it), where it fails: a skip there would hide that the server
// is missing.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed; CI must install it (.ci/run does: apt-get install redis-server)")
		}
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server); skipping the Redis test")
	}
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close() // a moment's race for the port; lost, the next attempt takes another
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--loglevel", "warning")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
		}
		if ready(addr, exited) {
			t.Cleanup(stop)
			return addr
		}
		stop()
		if attempt == 3 {
			t.Fatal("redis-server did not start on three free ports")
		}
	}
}

// ready pings addr until it answers (true), or the server exits or 10 s
// pass (false).
func ready(addr string, exited <-chan error) bool {
	rc := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rc.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
