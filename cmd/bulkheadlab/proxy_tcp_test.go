package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
)

func TestProxyCmdTCPBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		wantFlag string
	}{
		{[]string{"proxy", "--protocol", "udp", "--upstream", "127.0.0.1:1"}, "--protocol: want http or tcp"},
		{[]string{"proxy", "--protocol", "http", "--upstream", "tcp://127.0.0.1:1"}, "--upstream"},
		{[]string{"proxy", "--protocol", "tcp"}, "--upstream: required"},
		{[]string{"proxy", "--protocol", "tcp", "--upstream", "127.0.0.1"}, "--upstream: want host:port"},
		{[]string{"proxy", "--upstream", "tcp://10.1.2.3:5432"}, "--upstream tcp://10.1.2.3:5432: not a loopback address"},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--listen", ":0"}, "--listen :0: not a loopback address"},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--faults", `{"faults":[{"type":"error"}]}`}, "--faults: faults[0].type"},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--faults", `{"faults":[{"type":"latency","stream":"up"}]}`}, "--faults: faults[0].stream"},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--delay-buffer", "lots"}, `--delay-buffer: invalid size "lots"`},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--delay-buffer", "1KiB"}, "--delay-buffer: want 64KiB to 1GiB, got 1KiB"},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--delay-buffer", "2GiB"}, "--delay-buffer: want 64KiB to 1GiB, got 2GiB"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--delay-buffer", "1MiB"}, "--delay-buffer: only with --protocol tcp"},
		{[]string{"proxy", "--upstream", "postgres://127.0.0.1:1", "--delay-buffer", "1MiB"}, "--delay-buffer: only with --protocol tcp"},
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

// TestProxyCmdTCPLive: proxy --protocol tcp relays an echo server, a
// latency fault put through its control API slows the next exchange on
// the same connection, --delay-buffer bounds what the fault holds (512 KiB
// through a line of 64 KiB under 100 ms takes at least 8 latencies one way,
// where the default line carries it in about one), and it exits 0 when its
// context ends.
func TestProxyCmdTCPLive(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 4096))
	}()
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs([]string{"proxy", "--protocol", "tcp", "--upstream", l.Addr().String(), "--ledger", ledger, "--delay-buffer", "64KiB"})
	root.SetOut(pw)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	a, err := announce.Read(pr)
	if err != nil || a.Control == "" {
		t.Fatalf("announcement = %+v, %v", a, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	c, err := net.Dial("tcp", a.Addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	rtt := func() time.Duration {
		start := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	rtt()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPut, "http://"+a.Control+"/faults",
		strings.NewReader(`{"faults":[{"type":"latency","latency":"100ms"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if res, err := hc.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("PUT /faults: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if d := rtt(); d < 100*time.Millisecond {
		t.Errorf("exchange under a 100ms latency fault took %v", d)
	}
	big, back := make([]byte, 512<<10), make([]byte, 512<<10)
	start := time.Now()
	go func() { _, _ = c.Write(big) }()
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("512 KiB through a delay line of 64 KiB under a 100ms latency took %v, want ≥ 500ms (the flag bounds the line)", d)
	}
	c.Close()
	cancel()
	select {
	case err := <-done:
		if exitCode(err) != ExitOK {
			t.Errorf("proxy command ended with %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proxy command did not stop within 10s of cancellation")
	}
	if b, err := os.ReadFile(ledger); err != nil || !strings.Contains(string(b), `"decision":"pass,latency"`) {
		t.Errorf("ledger = %q, %v; want the connection's entry", b, err)
	}
}
