package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
)

// execute runs the root command with args and returns its exit code and
// message: the error's text, then what it wrote to stderr.
func execute(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRootCmd()
	root.SetArgs(args)
	var stderr bytes.Buffer
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return exitCode(err), strings.TrimSpace(msg + "\n" + stderr.String())
}

func TestServeBadFlags(t *testing.T) {
	deps := []string{"--dep-a", "http://127.0.0.1:1", "--dep-b", "http://127.0.0.1:2"}
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--pool-size", "0"}, "--pool-size"},
		{[]string{"--pool-size", "1"}, "--pool-size"},
		{[]string{"--pool-size", "-3", "--mode", "shared"}, "--pool-size"},
		{[]string{"--pool-sizes", "a=1"}, "--pool-sizes"},
		{[]string{"--pool-sizes", "a=0,b=2"}, "--pool-sizes"},
		{[]string{"--pool-sizes", "a=1,b=1", "--mode", "shared"}, "--pool-sizes"},
		{[]string{"--queues", "a=1,c=1"}, "--queues"},
		{[]string{"--pool-group", "ab=a,c"}, "--pool-group"},
		{[]string{"--pool-group", "ab=a,b", "--mode", "shared"}, "--pool-group"},
		{[]string{"--pool-group", "ab"}, "--pool-group"},
		{[]string{"--queue", "-1"}, "--queue"},
		{[]string{"--timeout", "0s"}, "--timeout"},
		{[]string{"--max-wait", "0s"}, "--max-wait"},
		{[]string{"--conns", "0"}, "--conns"},
		{[]string{"--conns-layout", "pooled"}, "--conns-layout"},
		{[]string{"--conns-layout", "shared", "--conns", "0"}, "--conns"},
		{[]string{"--mode", "pooled"}, "--mode"},
		{[]string{"--dep-a", "localhost:80"}, "--dep-a"},
		{[]string{"--dep-b", "http://"}, "--dep-b"},
		{[]string{"--dep-b", ""}, "--dep-b"},
		{[]string{"--listen", "nowhere"}, "--listen"},
		{[]string{"--timeout", "soon"}, "--timeout"},
	}
	for _, tt := range tests {
		args := append(append([]string{"serve"}, deps...), tt.args...)
		code, msg := execute(t, args...)
		if code != ExitUsage || !strings.Contains(msg, tt.flag) {
			t.Errorf("bulkheadlab %s: exit %d %q, want exit %d naming %s", strings.Join(args, " "), code, msg, ExitUsage, tt.flag)
		}
	}
}

// startCmd runs `bulkheadlab args...` in-process until ctx ends and returns
// its announcement and a channel with the command's error.
func startCmd(t *testing.T, ctx context.Context, args ...string) (announce.Announcement, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(pw)
	root.SetErr(io.Discard)
	errc := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		pw.CloseWithError(io.EOF)
		errc <- err
	}()
	a, err := announce.Read(pr)
	if err != nil {
		t.Fatalf("bulkheadlab %v: %v", args, err)
	}
	return a, errc
}

func TestServeAndDepEndToEnd(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	depA, errA := startCmd(t, ctx, "dep", "--name", "A", "--latency", "1ms", "--size", "7")
	depB, errB := startCmd(t, ctx, "dep", "--name", "B", "--latency", "1ms")
	svc, errS := startCmd(t, ctx, "serve", "--mode", "shared", "--pool-size", "4",
		"--dep-a", "http://"+depA.Addr, "--dep-b", "http://"+depB.Addr)
	if depA.Component != "dep" || depA.Name != "A" || svc.Component != "service" {
		t.Errorf("announcements %+v %+v", depA, svc)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, path := range []string{"/a", "/b", "/healthz", "/metrics"} {
		resp, err := c.Get("http://" + svc.Addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (path == "/a" && string(body) != "xxxxxxx") {
			t.Errorf("GET %s = %d %q", path, resp.StatusCode, body)
		}
	}
	tr.CloseIdleConnections()
	cancel()
	for name, errc := range map[string]<-chan error{"dep A": errA, "dep B": errB, "serve": errS} {
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("%s after cancel: %v, want nil (exit 0)", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not stop within 10s of cancel", name)
		}
	}
}
