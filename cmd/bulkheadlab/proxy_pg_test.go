package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
)

func TestProxyCmdPGBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		wantFlag string
	}{
		{[]string{"proxy", "--protocol", "postgres"}, "--upstream: required"},
		{[]string{"proxy", "--protocol", "postgres", "--upstream", "127.0.0.1"}, "--upstream: want host:port"},
		{[]string{"proxy", "--upstream", "postgres://u@127.0.0.1:5432/db"}, "--upstream: want host:port or postgres://host[:port] (no user"},
		{[]string{"proxy", "--upstream", "postgres://10.1.2.3:5432"}, "--upstream postgres://10.1.2.3:5432: not a loopback address"},
		{[]string{"proxy", "--protocol", "http", "--upstream", "postgres://127.0.0.1:5432"}, "--upstream"},
		{[]string{"proxy", "--upstream", "postgres://127.0.0.1", "--control", "0.0.0.0:0"}, "--control 0.0.0.0:0: not a loopback address"},
		{[]string{"proxy", "--upstream", "postgres://127.0.0.1", "--faults", `{"faults":[{"type":"reset"}]}`}, "--faults: faults[0].type"},
		{[]string{"proxy", "--upstream", "postgres://127.0.0.1", "--faults", `{"faults":[{"type":"hang","match":"("}]}`}, "--faults: faults[0].match"},
		{[]string{"proxy", "--protocol", "tcp", "--upstream", "127.0.0.1:1", "--tls-passthrough"}, "--tls-passthrough: only with --protocol postgres"},
	} {
		root := newRootCmd()
		root.SetArgs(tt.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.ExecuteContext(context.Background())
		if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.wantFlag) {
			t.Errorf("bulkheadlab %v = %v (exit %d), want exit 2 naming %s", tt.args, err, exitCode(err), tt.wantFlag)
		}
	}
}

// TestProxyCmdPGLive: proxy with a postgres:// upstream relays a pgx
// client to a real PostgreSQL; an error fault put through its control API
// fails the next matching query on the same connection with its SQLSTATE
// while another passes; the ledger has an entry per query; it exits 0
// when its context ends.
func TestProxyCmdPGLive(t *testing.T) {
	pg := pgtest.Start(t) // its waiter goroutine lives until the test's cleanup
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs([]string{"proxy", "--upstream", "postgres://" + pg.Addr, "--ledger", ledger})
	root.SetOut(pw)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	a, err := announce.Read(pr)
	if err != nil || a.Control == "" {
		t.Fatalf("announcement = %+v, %v", a, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	qctx, qcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer qcancel()
	c, err := pgx.Connect(qctx, pgtest.DSNAt(a.Addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(qctx, "SELECT 1"); err != nil {
		t.Fatalf("SELECT 1 through the proxy: %v", err)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPut, "http://"+a.Control+"/faults",
		strings.NewReader(`{"faults":[{"type":"error","code":"53300","match":"analytics"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if res, err := hc.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("PUT /faults: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	_, err = c.Exec(qctx, "SELECT 1 AS analytics")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Errorf("a matching query under the error fault: %v; want SQLSTATE 53300", err)
	}
	if _, err := c.Exec(qctx, "SELECT 2"); err != nil {
		t.Errorf("a query the fault does not match: %v", err)
	}
	_ = c.Close(qctx)
	cancel()
	select {
	case err := <-done:
		if exitCode(err) != ExitOK {
			t.Errorf("proxy command ended with %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proxy command did not stop within 10s of cancellation")
	}
	if b, err := os.ReadFile(ledger); err != nil || strings.Count(string(b), "\n") < 3 || !strings.Contains(string(b), `"decision":"error"`) {
		t.Errorf("ledger = %q, %v; want an entry per query, one of them the error", b, err)
	}
}
