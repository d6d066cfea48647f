package tcpproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
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

// TestRedisPipelineUnderLatency sends go-redis pipelines of 16 commands
// through a 50ms latency fault on the answers: each takes about 50ms, not
// 50ms per chunk of its answers. 16 GETs of 64 KiB values answer 1 MiB,
// which the proxy reads in some 35 chunks: held one at a time, as they were
// before the delay line, they took 35 × 50ms.
func TestRedisPipelineUnderLatency(t *testing.T) {
	checkFDs(t)
	const lat = 50 * time.Millisecond
	addr := redistest.Start(t)
	e := newEnvTo(t, nil, addr)
	rc := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), DisableIdentity: true, Protocol: 2, MaxRetries: -1,
		PoolSize: 1, DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	defer rc.Close()
	ctx := context.Background()
	value := strings.Repeat("v", 64<<10)
	for i := range 16 {
		if err := rc.Set(ctx, fmt.Sprintf("big%d", i), value, 0).Err(); err != nil {
			t.Fatalf("SET through the proxy: %v", err)
		}
	}
	// A go-redis client's first pipeline takes one more round trip (2 ×
	// the latency, measured): it goes before the fault.
	warm := rc.Pipeline()
	warm.Incr(ctx, "warm")
	if _, err := warm.Exec(ctx); err != nil {
		t.Fatalf("pipeline through the proxy: %v", err)
	}
	e.put(t, `{"faults":[{"type":"latency","stream":"downstream","latency":"50ms"}]}`)
	for _, tc := range []struct {
		name string
		cmds func(redis.Pipeliner) []redis.Cmder
		ok   func(i int, c redis.Cmder) bool
	}{
		{"16 INCR", func(p redis.Pipeliner) (cs []redis.Cmder) {
			for range 16 {
				cs = append(cs, p.Incr(ctx, "n"))
			}
			return cs
		}, func(i int, c redis.Cmder) bool { return c.(*redis.IntCmd).Val() == int64(i+1) }},
		{"16 GET of 64 KiB", func(p redis.Pipeliner) (cs []redis.Cmder) {
			for i := range 16 {
				cs = append(cs, p.Get(ctx, fmt.Sprintf("big%d", i)))
			}
			return cs
		}, func(_ int, c redis.Cmder) bool { return c.(*redis.StringCmd).Val() == value }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pipe := rc.Pipeline()
			cmds := tc.cmds(pipe)
			start := time.Now()
			_, err := pipe.Exec(ctx)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			for i, c := range cmds {
				if !tc.ok(i, c) {
					t.Fatalf("command %d of the pipeline: %v", i, c)
				}
			}
			t.Logf("pipeline of %s under latency %v: %v (%.2f × latency)", tc.name, lat, took, float64(took)/float64(lat))
			if took < lat || took > lat*5/2 {
				t.Errorf("pipeline of %s under latency %v took %v; want at least %v and under %v", tc.name, lat, took, lat, lat*5/2)
			}
		})
	}
	rc.Close()
	testkit.WaitFor(t, 5*time.Second, "the client's connection to end", func() bool { return e.p.Open() == 0 })
}
