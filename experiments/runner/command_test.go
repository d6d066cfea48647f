package runner

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestStartCommand: a user's program starts, is ready once its URL answers
// 2xx (after two 503s), has the given environment, logs to its file and
// stops cleanly on SIGTERM.
func TestStartCommand(t *testing.T) {
	exe, _ := os.Executable()
	addr := freeLoopback(t)
	log := filepath.Join(t.TempDir(), "service.log")
	t.Setenv(ctlauth.EnvToken, strings.Repeat("r", 64)) // the runner's own: not for the user's program either
	s := Supervisor{Token: ctlauth.NewToken()}
	c, err := s.StartCommand(context.Background(), CommandSpec{Name: "service", Argv: []string{exe},
		Env: []string{helperEnv + "=command", "CMD_LISTEN=" + addr, "CMD_WORD=hello"}, LogPath: log,
		Ready: "http://" + addr + "/ready", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c.PID() <= 0 {
		t.Errorf("pid %d", c.PID())
	}
	if err := c.Stop(5 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "word: hello") {
		t.Errorf("log %q, want the program's output with its environment", b)
	}
	if !strings.Contains(string(b), `token: ""`) {
		t.Errorf("log %q: the user's program got a token", b)
	}
}

// TestStartCommandFailures: a program that exits, one that never gets
// ready and one that does not exist are reported, and nothing is left
// running.
func TestStartCommandFailures(t *testing.T) {
	exe, _ := os.Executable()
	addr := freeLoopback(t)
	for _, tt := range []struct {
		name string
		spec CommandSpec
		want string
	}{
		{"exits", CommandSpec{Argv: []string{exe}, Env: []string{helperEnv + "=exit1"}, Ready: "http://" + addr + "/"}, "exited before"},
		{"never ready", CommandSpec{Argv: []string{exe}, Env: []string{helperEnv + "=silent"}, Ready: "http://" + addr + "/",
			ReadyTimeout: 300 * time.Millisecond}, "did not answer 2xx within 300ms"},
		{"missing", CommandSpec{Argv: []string{filepath.Join(t.TempDir(), "no-such-program")}, Ready: "http://" + addr + "/"}, "no such file"},
		{"empty", CommandSpec{Ready: "http://" + addr + "/"}, "empty command"},
	} {
		tt.spec.Name = "service"
		var s Supervisor
		c, err := s.StartCommand(context.Background(), tt.spec)
		if err == nil {
			_ = c.Stop(time.Second)
			t.Errorf("%s: started", tt.name)
			continue
		}
		if !errors.Is(err, ErrChildStart) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want ErrChildStart and %q", tt.name, err, tt.want)
		}
	}
}

// TestStartCommandStopsTheGroup: a wrapper (a shell) that starts the
// service in the background and exits leaves it in the process group;
// Stop ends it too, so the next run's service can bind the address.
func TestStartCommandStopsTheGroup(t *testing.T) {
	exe, _ := os.Executable()
	addr := freeLoopback(t)
	var s Supervisor
	c, err := s.StartCommand(context.Background(), CommandSpec{Name: "service",
		// The shell outlives the child's start (a race-built test binary
		// on a busy machine takes over half a second), then exits.
		Argv: []string{"/bin/sh", "-c", `"$0" & sleep 3`, exe},
		Env:  []string{helperEnv + "=command", "CMD_LISTEN=" + addr}, Ready: "http://" + addr + "/ready", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // the shell has exited; its child serves on
	if err := c.Stop(5 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("after Stop, %s is still taken: %v", addr, err)
	} else {
		ln.Close()
	}
}

// TestStartCommandRefusesABusyAddress: a ready URL that answers before the
// command starts belongs to some other process.
func TestStartCommandRefusesABusyAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var s Supervisor
	_, err := s.StartCommand(context.Background(), CommandSpec{Name: "service", Argv: []string{"/bin/true"}, Ready: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "already answers") {
		t.Fatalf("err %v, want already answers", err)
	}
}

func TestCleanStop(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want bool // nil error
	}{
		{[]string{"/bin/sh", "-c", "kill -TERM $$"}, true},
		{[]string{"/bin/sh", "-c", "exit 143"}, true},
		{[]string{"/bin/sh", "-c", "exit 3"}, false},
	} {
		err := cleanStop(exec.Command(tt.argv[0], tt.argv[1:]...).Run())
		if (err == nil) != tt.want {
			t.Errorf("%v: cleanStop %v, want nil %t", tt.argv, err, tt.want)
		}
	}
}
