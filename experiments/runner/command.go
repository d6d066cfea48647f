package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"
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
	logw, err := openLog(spec.LogPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrChildStart, spec.Name, err)
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.SysProcAttr = childAttr()
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = logw, logw
	cmd.Env = append(os.Environ(), spec.Env...)
	if err := cmd.Start(); err != nil {
		logw.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrChildStart, spec.Name, err)
	}
	if s.Nice > 0 {
		_ = setNice(cmd.Process.Pid, s.Nice)
	}
	c := &Child{Name: spec.Name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		logw.Close()
		close(c.done)
	}()
	if err := s.waitReady(ctx, c, spec.Ready, orDefault(spec.ReadyTimeout, DefaultReadyTimeout)); err != nil {
		c.kill()
		<-c.done
		return nil, fmt.Errorf("%w: %s: %v", ErrChildStart, spec.Name, err)
	}
	if s.Nice > 0 {
		_ = setNice(cmd.Process.Pid, s.Nice) // threads started meanwhile
	}
	return c, nil
}

// waitReady polls url with a growing back-off (5 ms → 200 ms) until it
// answers 2xx, the child exits, or timeout passes.
func (s *Supervisor) waitReady(ctx context.Context, c *Child, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
			return fmt.Errorf("%s did not answer 2xx within %s (last: %s)", url, timeout, last)
		case <-time.After(wait):
		}
	}
}
