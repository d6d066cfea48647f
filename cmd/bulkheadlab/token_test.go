package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth/ctlauthtest"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
)

// TestAllowRemoteNeedsAToken: beyond loopback a proxy (every plane) and a
// shard refuse to start without the run's token, a shard without its
// run's targets too; a token too short is refused naming the variable.
func TestAllowRemoteNeedsAToken(t *testing.T) {
	good := ctlauth.NewToken()
	tests := []struct {
		name, token, targets string
		args                 []string
		want                 string
	}{
		{"http proxy", "", "", []string{"proxy", "--upstream", "http://127.0.0.1:1", "--allow-remote"}, "$BULKHEADLAB_TOKEN must hold"},
		{"tcp proxy", "", "", []string{"proxy", "--upstream", "tcp://127.0.0.1:1", "--allow-remote"}, "$BULKHEADLAB_TOKEN must hold"},
		{"postgres proxy", "", "", []string{"proxy", "--upstream", "postgres://127.0.0.1:1", "--allow-remote"}, "$BULKHEADLAB_TOKEN must hold"},
		{"shard", "", "http://10.0.0.1:80", []string{"shard", "--listen", "127.0.0.1:0", "--allow-remote"}, "$BULKHEADLAB_TOKEN must hold"},
		{"shard without targets", good, "", []string{"shard", "--listen", "127.0.0.1:0", "--allow-remote"}, "$" + shards.EnvTargets + " must list"},
		{"shard with a bad target", good, "nonsense", []string{"shard", "--listen", "127.0.0.1:0", "--allow-remote"}, "$" + shards.EnvTargets},
		{"a short token", "short", "", []string{"proxy", "--upstream", "http://127.0.0.1:1"}, "$BULKHEADLAB_TOKEN: a token of 5 characters"},
	}
	for _, tt := range tests {
		t.Setenv(ctlauth.EnvToken, tt.token)
		t.Setenv(shards.EnvTargets, tt.targets)
		root := newRootCmd()
		root.SetArgs(tt.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.ExecuteContext(context.Background())
		if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: bulkheadlab %v = %v (exit %d), want exit 2 with %q", tt.name, tt.args, err, exitCode(err), tt.want)
		}
	}
}

// TestProxyControlAndPprofTakeTheToken: a proxy of every plane started
// with a token refuses foreign clients on its control API and its pprof,
// with and without the right Host.
func TestProxyControlAndPprofTakeTheToken(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tok := ctlauth.NewToken()
	t.Setenv(ctlauth.EnvToken, tok)
	for _, upstream := range []string{"http://127.0.0.1:1", "tcp://127.0.0.1:1", "postgres://127.0.0.1:1"} {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		root := newRootCmd()
		pprofAddr := freeLoopbackAddr(t)
		root.SetArgs([]string{"proxy", "--upstream", upstream, "--pprof", pprofAddr, "--tune-runtime=false"})
		root.SetOut(pw)
		root.SetErr(io.Discard)
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
		a, err := announce.Read(pr)
		if err != nil {
			cancel()
			t.Fatalf("%s: announcement: %v", upstream, err)
		}
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		ctlauthtest.Refuses(t, "http://"+a.Control, tok, []ctlauthtest.Command{
			{Method: "PUT", Path: "/faults", Body: `{"faults":[]}`}, {Method: "DELETE", Path: "/faults"}, {Method: "GET", Path: "/faults"}})
		ctlauthtest.Refuses(t, "http://"+pprofAddr, tok, []ctlauthtest.Command{{Method: "GET", Path: "/debug/pprof/cmdline"}})
		if code, _ := ctlauthtest.Do(t, "http://"+pprofAddr, tok, ctlauthtest.Command{Method: "GET", Path: "/debug/pprof/cmdline"}); code != 200 {
			t.Errorf("%s: pprof with the token: %d", upstream, code)
		}
		if code, body := ctlauthtest.Do(t, "http://"+a.Control, tok, ctlauthtest.Command{Method: "DELETE", Path: "/faults"}); code != 200 {
			t.Errorf("%s: DELETE /faults with the token: %d %s", upstream, code, body)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: exit: %v", upstream, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the proxy did not stop", upstream)
		}
	}
}

// TestErrorsKeepNoPassword: a refused URL with a password is named
// without it, on every plane and for a spec's remote targets.
func TestErrorsKeepNoPassword(t *testing.T) {
	const pw = "hunter2pw"
	dir := t.TempDir()
	spec := writeFile(t, dir, "ext.yaml", "name: ext\nmodes: [shared]\nexternal:\n  targets: {a: 'http://u:"+pw+"@10.1.2.3:80/a', b: 'http://127.0.0.1:1/b'}\n"+
		"  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n")
	for _, args := range [][]string{
		{"proxy", "--upstream", "postgres://app:" + pw + "@127.0.0.1:5432"},
		{"proxy", "--upstream", "http://app:" + pw + "@10.0.0.1:80"},
		{"proxy", "--protocol", "http", "--upstream", "tcp://app:" + pw + "@127.0.0.1:1"},
		{"proxy", "--protocol", "tcp", "--upstream", "tcp://app:" + pw + "@127.0.0.1:1"},
		{"proxy", "--upstream", "ftp://app:" + pw + "@127.0.0.1:1"},
		{"run", spec, "--out", dir},
	} {
		t.Setenv(ctlauth.EnvToken, "")
		root := newRootCmd()
		root.SetArgs(args)
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.ExecuteContext(context.Background())
		if err == nil {
			t.Errorf("bulkheadlab %v: no error", args)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(out.String(), pw) {
			t.Errorf("bulkheadlab %v: the password is shown: %v\n%s", args, err, out.String())
		}
	}
}
