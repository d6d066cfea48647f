package pgproxy

import (
	"context"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// env is a proxy serving on :0 listeners in front of an upstream.
type env struct {
	p   *Proxy
	srv *Server
	log *syncBuffer
}

// newEnv starts a proxy to upstream (seed 1) with faults fs.
func newEnv(t testing.TB, upstream string, cfg Config, fs ...Fault) *env {
	t.Helper()
	lb := &syncBuffer{}
	cfg.Upstream = upstream
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	cfg.DialTimeout = 2 * time.Second
	cfg.ErrorLog = log.New(lb, "", 0)
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
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &env{p: p, srv: srv, log: lb}
}

// pgEnv starts PostgreSQL (pgtest) and a proxy in front of it.
func pgEnv(t testing.TB, cfg Config, fs ...Fault) (*pgtest.Server, *env) {
	t.Helper()
	pg := pgtest.Start(t)
	return pg, newEnv(t, pg.Addr, cfg, fs...)
}

// connect opens a pgx connection through the proxy (or to addr), closed
// with the test. Its context watcher sends a cancel request when a
// query's context ends (after 10 ms) and gives up on the connection 2 s
// later.
func connect(t testing.TB, addr string, mod ...func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgtest.DSNAt(addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = cancelWatcher
	for _, m := range mod {
		m(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// connectMode opens a pgx connection to addr with sslmode mode (and the
// default context watcher).
func connectMode(ctx context.Context, addr, mode string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, strings.Replace(pgtest.DSNAt(addr), "sslmode=disable", "sslmode="+mode, 1))
}

// simple makes a pgx connection use the simple query protocol.
func simple(cfg *pgx.ConnConfig) { cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol }

// put sets faults through the control API, as a user would.
func (e *env) put(t testing.TB, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+e.srv.ControlAddr()+"/faults", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT /faults %s: %d %s", body, res.StatusCode, b)
	}
}

// checkFDs fails t if the test leaves a socket open. The process's one
// kernel timer (faultproxy.SleepUntil) is made on first use and kept: it is
// made before counting.
func checkFDs(t *testing.T) {
	t.Helper()
	faultproxy.SleepUntil(nil, nil, time.Now().Add(time.Microsecond))
	testkit.CheckSockets(t)
}

// syncBuffer is a log's destination that tests read.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
