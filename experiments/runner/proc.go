package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// Defaults of Supervisor.
const (
	DefaultAnnounceTimeout = 10 * time.Second
	DefaultHealthTimeout   = 10 * time.Second
	DefaultStopGrace       = 6 * time.Second
)

// ErrChildStart is wrapped by Start errors: the child did not start,
// announce itself or become healthy in time.
var ErrChildStart = errors.New("child process did not start")

// Supervisor starts component processes (`bulkheadlab dep|proxy|serve`) as
// children. The zero value is ready to use; a Supervisor is safe for
// concurrent use once configured.
type Supervisor struct {
	// Executable is the binary to run; empty means os.Executable().
	Executable string
	// Env, if non-nil, is appended to the runner's environment.
	Env []string
	// AnnounceTimeout bounds the wait for the announcement line.
	AnnounceTimeout time.Duration
	// HealthTimeout bounds the wait for GET /healthz to answer 200.
	HealthTimeout time.Duration
	// Client polls /healthz; nil means a client with a 1 s timeout.
	Client *http.Client
	// Nice, when > 0, lowers the children's CPU priority by that much, so
	// that the load generator (the experiment's clock) wakes up on time when
	// the system under test keeps the cores busy.
	Nice int
	// Token is the run's secret (see internal/ctlauth): a child with a
	// control surface (ChildSpec.Control) gets it in its environment,
	// never on its command line. No other child gets it, nor the token
	// the runner's own environment may hold; a user's command
	// (StartCommand) never does.
	Token string
}

// ChildSpec describes one child.
type ChildSpec struct {
	// Name labels the child in errors and logs, e.g. "service", "proxy-A".
	Name string
	// Args are the subcommand and its flags, e.g. ["dep", "--listen", ...].
	Args []string
	// LogPath receives the child's stdout after the announcement line and
	// its stderr; empty discards them.
	LogPath string
	// NoHealth skips the /healthz wait.
	NoHealth bool
	// Control marks a child that serves a control surface (a proxy, a
	// shard): it gets the Supervisor's Token.
	Control bool
}

// Child is a running component. Its methods are safe for concurrent use.
type Child struct {
	Name string
	// Announcement is what the child printed as its first stdout line.
	Announcement announce.Announcement

	cmd      *exec.Cmd
	done     chan struct{} // closed once the child is reaped
	waitErr  error
	stopOnce sync.Once
	stopErr  error
	// group: a user's command, whose process group may hold more than
	// the first process (a shell, npm or a JVM wrapper and what they
	// started); Stop waits for the whole group.
	group bool
}

// Start starts a child, reads its announcement within AnnounceTimeout and
// waits for its /healthz within HealthTimeout. On any failure the child is
// killed and reaped before Start returns. ctx bounds the start only; stop
// the child with Stop.
func (s *Supervisor) Start(ctx context.Context, spec ChildSpec) (*Child, error) {
	exe := s.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
		}
	}
	logw, err := openLog(spec.LogPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
	}
	cmd := exec.Command(exe, spec.Args...)
	cmd.SysProcAttr = childAttr()
	cmd.Stderr = logw
	cmd.Env = append(ctlauth.StripEnv(os.Environ()), ctlauth.StripEnv(s.Env)...)
	if spec.Control && s.Token != "" {
		cmd.Env = append(cmd.Env, ctlauth.EnvToken+"="+s.Token)
	}
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		logw.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
	}
	if s.Nice > 0 {
		_ = setNice(cmd.Process.Pid, s.Nice) // best effort: a failure only costs schedule precision
	}
	c := &Child{Name: spec.Name, cmd: cmd, done: make(chan struct{})}
	annc := make(chan annResult, 1)
	go c.reap(stdout, logw, annc)
	ann, err := awaitAnnouncement(ctx, annc, orDefault(s.AnnounceTimeout, DefaultAnnounceTimeout))
	if err == nil {
		c.Announcement = ann
		if !spec.NoHealth {
			err = s.waitHealthy(ctx, c)
		}
	}
	if err != nil {
		c.kill()
		<-c.done
		return nil, fmt.Errorf("%w: %s: %w", ErrChildStart, spec.Name, err)
	}
	if s.Nice > 0 {
		// Again, for the threads the child's runtime started meanwhile;
		// threads started later inherit it.
		_ = setNice(cmd.Process.Pid, s.Nice)
	}
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// nopWriteCloser discards output when there is no log file.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func openLog(path string) (io.WriteCloser, error) {
	if path == "" {
		return nopWriteCloser{io.Discard}, nil
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

type annResult struct {
	a   announce.Announcement
	err error
}

// awaitAnnouncement waits for the reaper's announcement result.
func awaitAnnouncement(ctx context.Context, ch <-chan annResult, timeout time.Duration) (announce.Announcement, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-ch:
		return res.a, res.err
	case <-t.C:
		return announce.Announcement{}, fmt.Errorf("no announcement within %s", timeout)
	case <-ctx.Done():
		return announce.Announcement{}, ctx.Err()
	}
}

// reap is the one reader of the child's stdout: it reads the announcement
// line and hands it over on annc, copies the rest of stdout to the log,
// then waits for the process and closes done. It ends when the child (and
// everything holding its stdout) exits.
func (c *Child) reap(stdout io.Reader, logw io.WriteCloser, annc chan<- annResult) {
	a, err := announce.Read(stdout)
	annc <- annResult{a, err}
	_, _ = io.Copy(logw, stdout)
	c.waitErr = c.cmd.Wait()
	logw.Close()
	close(c.done)
}

// waitHealthy polls GET /healthz (on the control plane if there is one) with a growing back-off (5 ms → 100 ms)
// until it answers 200, the child exits, or the deadline passes.
func (s *Supervisor) waitHealthy(ctx context.Context, c *Child) error {
	timeout := orDefault(s.HealthTimeout, DefaultHealthTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: time.Second}
	}
	// A component with a control plane (the proxy) reports health there:
	// its data plane forwards every path, /healthz included, upstream.
	base := c.URL()
	if cu := c.ControlURL(); cu != "" {
		base = cu
	}
	url := base + "/healthz"
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("exited before healthy: %v", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not healthy at %s within %s", url, timeout)
		case <-time.After(wait):
		}
	}
}

// URL is the child's data-plane base URL, "http://127.0.0.1:port".
func (c *Child) URL() string { return "http://" + c.Announcement.Addr }

// ControlURL is the child's control-plane base URL, or "" if it has none.
func (c *Child) ControlURL() string {
	if c.Announcement.Control == "" {
		return ""
	}
	return "http://" + c.Announcement.Control
}

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is the child's exit error; valid after Done is closed.
func (c *Child) Err() error {
	<-c.done
	return c.waitErr
}

func (c *Child) kill() { _ = signalGroup(c.cmd.Process.Pid, syscall.SIGKILL) }

// Stop sends SIGTERM to the child's process group, waits up to grace
// (DefaultStopGrace if ≤ 0) for it to exit, then sends SIGKILL, and
// returns once the child is reaped. It returns the exit error of a child
// that did not exit cleanly on SIGTERM. Stop is idempotent.
func (c *Child) Stop(grace time.Duration) error {
	c.stopOnce.Do(func() {
		if c.group {
			c.stopErr = c.stopGroup(orDefault(grace, DefaultStopGrace))
			return
		}
		select {
		case <-c.done:
			c.stopErr = c.waitErr
			return
		default:
		}
		_ = signalGroup(c.cmd.Process.Pid, syscall.SIGTERM)
		t := time.NewTimer(orDefault(grace, DefaultStopGrace))
		defer t.Stop()
		select {
		case <-c.done:
			c.stopErr = c.waitErr
		case <-t.C:
			c.kill()
			<-c.done
			c.stopErr = fmt.Errorf("%s: killed after %s grace: %v", c.Name, orDefault(grace, DefaultStopGrace), c.waitErr)
		}
	})
	return c.stopErr
}
