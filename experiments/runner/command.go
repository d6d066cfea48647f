package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// CommandSpec is a user's program to start as a component: an external
// service started in one configuration by its own command.
type CommandSpec struct {
	// Name labels the child in errors and logs ("service").
	Name string
	// Argv is the program and its arguments (no shell). A program without
	// a slash is looked up in PATH.
	Argv []string
	// Env is added to the runner's environment (NAME=value).
	Env []string
	// Dir is the working directory; empty means the runner's.
	Dir string
	// LogPath receives stdout and stderr; empty discards them.
	LogPath string
	// Ready is polled (GET) until it answers 2xx, within ReadyTimeout
	// (DefaultReadyTimeout if ≤ 0).
	Ready        string
	ReadyTimeout time.Duration
}

// DefaultReadyTimeout bounds the wait for a started command's readiness.
const DefaultReadyTimeout = 30 * time.Second

// StartCommand starts a user's program like the harness's own children —
// in its own process group, killed if the runner dies, at the
// Supervisor's niceness, stopped with Child.Stop — and waits until its
// readiness URL answers 2xx. On failure the program is killed and reaped
// before StartCommand returns; the error says where its log is.
func (s *Supervisor) StartCommand(ctx context.Context, spec CommandSpec) (*Child, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("%w: %s: empty command", ErrChildStart, spec.Name)
	}
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: time.Second}
	}
	// Something already answering there (the previous run's service still
	// exiting, or another program on the port) would pass for this one.
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, spec.Ready, nil); err == nil {
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			return nil, fmt.Errorf("%w: %s: %s already answers (%s) before the command starts: another process serves that address",
				ErrChildStart, spec.Name, spec.Ready, resp.Status)
		}
	}
	path := spec.LogPath
	if path == "" {
		path = os.DevNull
	}
	logw, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.SysProcAttr = childAttr()
	cmd.Dir = spec.Dir
	// A file, not a pipe: the program's children may keep it open after
	// it exits without holding up Wait.
	cmd.Stdout, cmd.Stderr = logw, logw
	// The run's token is the harness's, not the user's program's.
	cmd.Env = append(ctlauth.StripEnv(append(os.Environ(), s.Env...)), spec.Env...)
	if err := cmd.Start(); err != nil {
		logw.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
	}
	if s.Nice > 0 {
		_ = setNice(cmd.Process.Pid, s.Nice)
	}
	c := &Child{Name: spec.Name, cmd: cmd, done: make(chan struct{}), group: true}
	go func() {
		c.waitErr = cmd.Wait()
		logw.Close()
		close(c.done)
	}()
	if err := s.waitReady(ctx, c, spec.Ready, orDefault(spec.ReadyTimeout, DefaultReadyTimeout)); err != nil {
		c.kill()
		_ = c.Stop(time.Second) // reaps the first process and waits for the group
		return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
	}
	if s.Nice > 0 {
		_ = setNice(cmd.Process.Pid, s.Nice) // threads started meanwhile
	}
	return c, nil
}

// waitReady polls url with a growing back-off (5 ms → 200 ms) until it
// answers 2xx, the child exits, or timeout passes.
func (s *Supervisor) waitReady(parent context.Context, c *Child, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: time.Second}
	}
	last := "no answer"
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("ready URL %q: %v", url, err)
		}
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-c.done:
			return fmt.Errorf("exited before %s answered 2xx: %v", url, c.waitErr)
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("stopped while waiting for %s: %w", url, parent.Err())
			}
			return fmt.Errorf("%s did not answer 2xx within %s (last: %s)", url, timeout, last)
		case <-time.After(wait):
		}
	}
}

// stopGroup stops a user's command and everything in its process group:
// SIGTERM to the group (even when the first process has already exited,
// what it started may run on), then, after grace, SIGKILL; it returns once
// the first process is reaped and the group is empty. Death by SIGTERM
// (or exit status 143, a shell's report of it) is a clean stop for a
// program that installs no handler.
func (c *Child) stopGroup(grace time.Duration) error {
	pid := c.cmd.Process.Pid
	_ = signalGroup(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	var killed bool
	for {
		done := false
		select {
		case <-c.done:
			done = true
		default:
		}
		if done && !groupAlive(pid) {
			break
		}
		if !killed && time.Now().After(deadline) {
			_ = signalGroup(pid, syscall.SIGKILL)
			killed = true
			deadline = time.Now().Add(5 * time.Second)
		} else if killed && time.Now().After(deadline) {
			return fmt.Errorf("%s: process group %d still alive after SIGKILL", c.Name, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if killed {
		return fmt.Errorf("%s: killed after %s grace: %v", c.Name, grace, c.waitErr)
	}
	return cleanStop(c.waitErr)
}

// cleanStop maps an exit caused by SIGTERM to nil.
func cleanStop(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
		if ee.ExitCode() == 128+int(syscall.SIGTERM) {
			return nil
		}
	}
	return err
}
