package tcpproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bulkheadlab/bulkheadlab/internal/redistest"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// TestRedisThroughProxy puts a real redis-server behind the proxy and a
// go-redis client in front: commands pass; a latency fault slows each
// command by its amount; timeout makes the client time out; reset gives a
// connection error; cleared, commands pass again.
func TestRedisThroughProxy(t *testing.T) {
	checkFDs(t)
	addr := redistest.Start(t)
	e := newEnvTo(t, nil, addr)
	// RESP2: a new connection's first command is the command itself. With
	// RESP3 go-redis opens with HELLO, and when HELLO is reset it reports
	// the connection's later EOF, not the reset.
	rc := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), DisableIdentity: true, Protocol: 2, MaxRetries: -1,
		PoolSize: 1, DialTimeout: 2 * time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: time.Second})
	defer rc.Close()
	ctx := context.Background()
	timed := func(f func() error) (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	}
	get := func() error {
		v, err := rc.Get(ctx, "k").Result()
		if err == nil && v != "v" {
			return fmt.Errorf("GET k = %q, want v", v)
		}
		return err
	}

	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	var base time.Duration
	for range 5 {
		d, err := timed(get)
		if err != nil {
			t.Fatalf("GET through the proxy: %v", err)
		}
		base = max(base, d)
	}

	e.put(t, `{"faults":[{"type":"latency","stream":"downstream","latency":"150ms"}]}`)
	for i := range 5 {
		d, err := timed(get)
		if err != nil {
			t.Fatalf("GET %d under latency: %v", i, err)
		}
		if d < 150*time.Millisecond || d > 150*time.Millisecond+base+250*time.Millisecond {
			t.Errorf("GET %d under a 150ms latency fault took %v (slowest without: %v)", i, d, base)
		}
	}

	e.put(t, `{"faults":[{"type":"timeout","stream":"both","timeout":0}]}`)
	d, err := timed(get)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("GET under timeout: %v after %v; want the client's read time-out", err, d)
	} else if d < 500*time.Millisecond {
		t.Errorf("GET under timeout failed after %v, before the client's 500ms read time-out", d)
	}

	e.put(t, `{"faults":[{"type":"reset","stream":"upstream","timeout":0}]}`)
	for i := range 2 { // on the pooled connection, then on a new one
		if err := get(); !isReset(err) {
			t.Errorf("GET %d under reset: %v; want a connection reset", i, err)
		}
	}

	e.put(t, `{"faults":[]}`)
	if err := get(); err != nil {
		t.Errorf("GET after the faults were cleared: %v", err)
	}
	rc.Close()
	testkit.WaitFor(t, 5*time.Second, "the client's connections to end", func() bool { return e.p.Open() == 0 })
}
