package tcpproxy

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(runHolder())
	}
	goleak.VerifyTestMain(m)
}

// upstream is a real TCP server on 127.0.0.1:0 that runs handle on every
// connection, each in a goroutine it owns.
type upstream struct {
	l        net.Listener
	wg       sync.WaitGroup
	accepted atomic.Int64
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

func newUpstream(t testing.TB, handle func(net.Conn)) *upstream {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{l: l, conns: map[net.Conn]struct{}{}}
	u.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u.accepted.Add(1)
			u.mu.Lock()
			u.conns[c] = struct{}{}
			u.mu.Unlock()
			u.wg.Go(func() {
				defer func() {
					c.Close()
					u.mu.Lock()
					delete(u.conns, c)
					u.mu.Unlock()
				}()
				handle(c)
			})
		}
	})
	t.Cleanup(u.close)
	return u
}

func (u *upstream) addr() string { return u.l.Addr().String() }

func (u *upstream) close() {
	u.l.Close()
	u.mu.Lock()
	for c := range u.conns {
		c.Close()
	}
	u.mu.Unlock()
	u.wg.Wait()
}

// echo writes back what it reads until EOF, then closes its write side.
// It copies with read and write (io.Copy between two TCP connections would
// splice through pipes that the runtime caches, which the descriptor
// check would count).
func echo(c net.Conn) {
	_, _ = io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 32<<10))
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// env is an upstream, a proxy to it serving on :0 listeners, and the
// control API's address.
type env struct {
	up  *upstream
	p   *Proxy
	srv *Server
}

func newEnv(t testing.TB, handle func(net.Conn), fs ...Fault) *env {
	t.Helper()
	up := newUpstream(t, handle)
	return newEnvTo(t, up, up.addr(), fs...)
}

func newEnvTo(t testing.TB, up *upstream, addr string, fs ...Fault) *env {
	t.Helper()
	return newEnvConfig(t, up, Config{Upstream: addr}, fs...)
}

// newEnvConfig is newEnvTo with cfg's other fields (its Upstream is the
// address).
func newEnvConfig(t testing.TB, up *upstream, cfg Config, fs ...Fault) *env {
	t.Helper()
	cfg.Seed, cfg.DialTimeout, cfg.HalfOpenTimeout, cfg.ErrorLog = 1, 2*time.Second, 300*time.Millisecond, log.New(io.Discard, "", 0)
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetFaults(fs); err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &env{up: up, p: p, srv: srv}
}

func (e *env) dial(t testing.TB) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.srv.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// put sets faults through the control API, as a user would.
func (e *env) put(t testing.TB, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+e.srv.ControlAddr()+"/faults", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT /faults %s: %d %s", body, res.StatusCode, b)
	}
}

// exchange writes msg and reads as many bytes back, returning how long it
// took.
func exchange(t testing.TB, c net.Conn, msg []byte) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(got) != string(msg) {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
	return time.Since(start)
}

// checkFDs fails t if the test leaves a socket open. The process's one
// kernel timer (faultproxy.SleepUntil) is made on first use and kept: it is
// made before counting.
func checkFDs(t *testing.T) {
	t.Helper()
	faultproxy.SleepUntil(nil, nil, time.Now().Add(time.Microsecond))
	testkit.CheckSockets(t)
}

func isReset(err error) bool {
	return err != nil && (errors.Is(err, errConnReset) || strings.Contains(err.Error(), "connection reset"))
}
