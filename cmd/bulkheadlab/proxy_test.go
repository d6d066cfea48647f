package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/sysmon"
)

func TestProxyCmdBadFlags(t *testing.T) {
	tests := []struct {
		args     []string
		wantFlag string
	}{
		{[]string{"proxy"}, "--upstream"},
		{[]string{"proxy", "--upstream", "ftp://x"}, "--upstream"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--faults", `{"faults":[{"type":"x"}]}`}, "--faults"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "nonsense"}, "--listen"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--control", "256.0.0.1:0"}, "--control"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--seed", "-1"}, "seed"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--shutdown-timeout", "0s"}, "--shutdown-timeout"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--ledger", "/nonexistent-dir/x"}, "--ledger"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--pprof", "nonsense"}, "--pprof"},
		// Loopback only, unless --allow-remote.
		{[]string{"proxy", "--upstream", "http://10.1.2.3:80"}, "--upstream http://10.1.2.3:80: not a loopback address; pass --allow-remote"},
		{[]string{"proxy", "--upstream", "https://example.org"}, "--upstream https://example.org: not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", ":0"}, "--listen :0: not a loopback address (every interface); listen on 127.0.0.1, or pass --allow-remote"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0: not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--control", "[::]:0"}, "--control [::]:0: not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--pprof", "10.1.2.3:6060"}, "--pprof 10.1.2.3:6060: not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--allow-remote", "--listen", "nonsense"}, "--listen"},
		// Route classes: NAME=ROUTE, a route; none on the TCP plane.
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--class", "report"}, "--class: want NAME=ROUTE"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--class", "report=get /reports/"}, `--class: faultproxy: route class report: "get" before the space`},
		{[]string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--class", "report=^/r"}, "--class: only with --protocol http or postgres"},
	}
	for _, tt := range tests {
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

// TestProxyCmdAllowRemote: with --allow-remote the flags may name
// addresses beyond loopback (checked only, nothing is bound or dialled).
func TestProxyCmdAllowRemote(t *testing.T) {
	o := proxyOptions{upstream: "http://10.1.2.3:80", listen: "0.0.0.0:8081", control: ":8082", pprof: "[::]:6060",
		grace: time.Second, allowRemote: true}
	if _, _, err := o.parse(); err != nil {
		t.Errorf("parse with --allow-remote: %v", err)
	}
	o.allowRemote = false
	if _, _, err := o.parse(); exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--allow-remote") {
		t.Errorf("parse without --allow-remote = %v, want a usage error pointing to --allow-remote", err)
	}
	// The runner's children: loopback addresses only, no --allow-remote.
	o = proxyOptions{upstream: "http://localhost:9000", listen: "127.0.0.1:0", control: "[::1]:0", pprof: "127.0.0.1:6060", grace: time.Second}
	if _, _, err := o.parse(); err != nil {
		t.Errorf("parse of loopback addresses: %v", err)
	}
}

// TestProxyCmdLive: the command announces itself, faults switch a live
// stream through the control API, and it exits 0 when its context ends.
func TestProxyCmdLive(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "up")
	}))
	defer up.Close()
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	root := newRootCmd()
	pprofAddr := freeLoopbackAddr(t)
	// With credentials in the URL: the start line must not print them.
	upURL := strings.Replace(up.URL, "http://", "http://user:s3cret@", 1)
	root.SetArgs([]string{"proxy", "--upstream", upURL, "--name", "A", "--seed", "7", "--ledger", ledger, "--pprof", pprofAddr, "--class", "report=GET ^/reports/"})
	root.SetOut(pw)
	var stderr syncBuffer
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()

	a, err := announce.Read(pr)
	if err != nil || a.Component != "proxy" || a.Name != "A" || a.Control == "" {
		t.Fatalf("announcement = %+v, %v; want component proxy, name A, a control address", a, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	ctl := faultproxy.NewClient(a.Control, hc)
	get := func(path string) int {
		resp, err := hc.Get("http://" + a.Addr + path)
		if err != nil {
			t.Fatalf("GET through the proxy: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	steps := []struct {
		faults []faultproxy.Fault
		path   string
		want   int
	}{
		{nil, "/", 200},
		{[]faultproxy.Fault{{Type: faultproxy.TypeLatency, Percent: 100, Params: faultproxy.Delay{Latency: 20 * time.Millisecond}}}, "/", 200},
		{[]faultproxy.Fault{{Type: faultproxy.TypeError, Percent: 100}}, "/", 503},
		{[]faultproxy.Fault{{Type: faultproxy.TypeError, Percent: 100, Match: "^/reports/"}}, "/", 200},
		{[]faultproxy.Fault{{Type: faultproxy.TypeError, Percent: 100, Match: "^/reports/"}}, "/reports/daily", 503},
		{nil, "/reports/daily", 200},
	}
	if resp, err := hc.Get("http://" + pprofAddr + "/debug/pprof/cmdline"); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET --pprof's /debug/pprof/cmdline = %v, %v; want 200", resp, err)
	} else {
		resp.Body.Close()
	}
	for i, s := range steps {
		if err := ctl.Set(ctx, s.faults); err != nil {
			t.Fatalf("step %d: Set: %v", i, err)
		}
		if got := get(s.path); got != s.want {
			t.Errorf("step %d (faults %+v, %s): status %d, want %d", i, s.faults, s.path, got, s.want)
		}
	}
	// --class: the report route's requests counted.
	if resp, err := hc.Get("http://" + a.Control + "/metrics"); err != nil {
		t.Errorf("GET /metrics: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := faultproxy.MetricClassRequests + `{class="report"} 2`; !strings.Contains(string(b), want) {
			t.Errorf("/metrics without %q", want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if exitCode(err) != ExitOK {
			t.Errorf("proxy command ended with %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proxy command did not stop within 10s of cancellation")
	}
	b, err := os.ReadFile(ledger)
	if err != nil || strings.Count(string(b), "\n") != len(steps) {
		t.Errorf("ledger = %q, %v; want %d lines", b, err, len(steps))
	}
	if log := stderr.String(); strings.Contains(log, "s3cret") || !strings.Contains(log, "forwarding") {
		t.Errorf("the proxy's log:\n%s\nwant its start line, without the upstream's password", log)
	}
}

// freeLoopbackAddr returns a loopback host:port that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestProxyTunesRuntime: the proxy binary executes itself once more with
// sysmon kept awake (same PID, so its parent notices nothing; it still
// announces and forwards), unless --tune-runtime=false or GODEBUG already
// sets schedtrace.
func TestProxyTunesRuntime(t *testing.T) {
	bin := binary(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "up") }))
	defer up.Close()
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	tests := []struct {
		name    string
		args    []string
		godebug string // "" = unset
		want    string // the running process's GODEBUG, "" = unset
	}{
		{"default", nil, "", sysmon.Setting},
		{"other settings kept", nil, "gctrace=0", "gctrace=0," + sysmon.Setting},
		{"off", []string{"--tune-runtime=false"}, "", ""},
		{"the user's trace", nil, "schedtrace=3600000", "schedtrace=3600000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"proxy", "--upstream", up.URL}, tt.args...)...)
			cmd.Env = base
			if tt.godebug != "" {
				cmd.Env = append(slices.Clone(base), "GODEBUG="+tt.godebug)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			a, err := announce.Read(out)
			if err != nil || a.PID != cmd.Process.Pid {
				t.Fatalf("announcement = %+v, %v; want one from PID %d", a, err, cmd.Process.Pid)
			}
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", a.PID))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, kv := range strings.Split(string(env), "\x00") {
				if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
					got = v
				}
			}
			if got != tt.want {
				t.Errorf("GODEBUG of the running proxy = %q, want %q", got, tt.want)
			}
			resp, err := http.Get("http://" + a.Addr + "/")
			if err != nil {
				t.Fatalf("GET through the proxy: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "up" {
				t.Errorf("GET through the proxy = %q, want the upstream's", b)
			}
		})
	}
}
