package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// Stack is the running system of one run: the components of its plan. Stop
// tears it down; it is idempotent.
type Stack struct {
	// URLs maps a component to its data-plane base URL, "http://host:port".
	URLs map[string]string
	// Controls maps a component with a control plane (a proxy) to its
	// control URL.
	Controls map[string]string
	// Replicas, if set for a proxy component, are its replicas' control
	// planes (a Deployment's pods): every fault switch goes to each of
	// them, and Controls' URL is not used for it.
	Replicas map[string][]Control
	// Samples are the components whose /metrics the sampler scrapes.
	Samples []SampleTarget
	// ControlClient reaches Controls (it sends the run's token); nil means
	// a default client. A Replicas entry has its own Client.
	ControlClient *http.Client
	// stops run in the reverse of the start order.
	stops []func() error
	// died reports components that exited on their own; nil means never.
	died func() []string

	mu sync.Mutex
	// killed are the components the runner killed on purpose (the memory
	// guard): their end is neither a crash nor a teardown error.
	killed map[string]bool
}

// markKilled records that the runner killed component on purpose.
func (s *Stack) markKilled(component string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed == nil {
		s.killed = map[string]bool{}
	}
	s.killed[component] = true
}

// wasKilled reports whether the runner killed component on purpose.
func (s *Stack) wasKilled(component string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed[component]
}

// Control is one proxy replica's control plane.
type Control struct {
	// Name labels the replica in fault events (a pod's name).
	Name string
	URL  string
	// Client reaches URL (through the API server's pod proxy, say); nil
	// means a default client.
	Client *http.Client
}

// NewStack is a Stack of components started elsewhere (a cluster's):
// stop, if set, is its teardown.
func NewStack(urls, controls map[string]string, replicas map[string][]Control, stop func() error) *Stack {
	st := &Stack{URLs: urls, Controls: controls, Replicas: replicas}
	if stop != nil {
		st.stops = append(st.stops, stop)
	}
	return st
}

// ErrComponentDied is wrapped by Died when a component exited during a run.
var ErrComponentDied = errors.New("component exited during the run")

// Died returns an error naming the components that exited on their own
// (crashed) since launch, or nil. Call it before Stop.
func (s *Stack) Died() error {
	if s.died == nil {
		return nil
	}
	if names := s.died(); len(names) > 0 {
		return fmt.Errorf("%w: %s", ErrComponentDied, strings.Join(names, ", "))
	}
	return nil
}

// Stop stops every component, in the reverse of the start order (so no
// request is cut at a proxy or a dependency while the service still serves
// it), and returns the joined errors.
func (s *Stack) Stop() error {
	var errs []error
	for i := len(s.stops) - 1; i >= 0; i-- {
		if err := s.stops[i](); err != nil {
			errs = append(errs, err)
		}
	}
	s.stops = nil
	return errors.Join(errs...)
}

// Launcher starts the components of one run. logPath names the log file of
// a component.
type Launcher interface {
	Launch(ctx context.Context, r plan.Run, logPath func(component string) string) (*Stack, error)
}

// started is one component as a starter started it.
type started struct {
	url     string // data-plane base URL
	control string // control-plane base URL, "" if none
	pid     int    // process id, 0 in process
	stop    func() error
	// done, if set, is closed when the component exits on its own; err then
	// tells why.
	done <-chan struct{}
	err  func() error
}

// StartError is a Launch error: a component did not start (its program
// did not run, exited, or did not become ready in time).
type StartError struct {
	Component string
	// Log is the component's log file.
	Log string
	Err error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("%s: %v (log: %s)", e.Component, e.Err, e.Log)
}

func (e *StartError) Unwrap() error { return e.Err }

// starter starts one resolved component.
type starter func(ctx context.Context, c plan.Component, logPath string) (started, error)

// launch is the one walk over a run's topology that both launchers share:
// it starts the components in order, resolving each one's addresses from
// those already running, and records what to sample. On error whatever was
// started is stopped.
func launch(ctx context.Context, r plan.Run, logPath func(string) string, token string, start starter) (st *Stack, err error) {
	st = &Stack{URLs: map[string]string{}, Controls: map[string]string{},
		ControlClient: ctlauth.Client(&http.Client{Timeout: 10 * time.Second}, token)}
	stack := st // a failing return sets st to nil before the deferred stop
	var running []started
	var names []string
	defer func() {
		if err != nil {
			_ = stack.Stop()
			st = nil
		}
	}()
	for _, c := range r.Components {
		rc, err := c.Resolve(st.URLs)
		if err != nil {
			return nil, err
		}
		s, err := start(ctx, rc, logPath(c.Name))
		if err != nil {
			return nil, &StartError{Component: c.Name, Log: logPath(c.Name), Err: err}
		}
		running, names = append(running, s), append(names, c.Name)
		name, stop := c.Name, s.stop
		st.stops = append(st.stops, func() error {
			if err := stop(); err != nil && !stack.wasKilled(name) {
				return err
			}
			return nil
		})
		metrics, metricsToken := "", ""
		if s.url != "" { // a user's command has no data plane of ours
			st.URLs[c.Name] = s.url
			if c.Kind != plan.KindPostgres { // a database has no /metrics
				metrics = s.url + "/metrics"
			}
		}
		if s.control != "" {
			st.Controls[c.Name] = s.control
			metrics = s.control + "/metrics" // a proxy's data plane forwards every path
			metricsToken = token
		}
		st.Samples = append(st.Samples, SampleTarget{Component: c.Name, MetricsURL: metrics, Token: metricsToken, PID: s.pid})
	}
	st.died = func() []string {
		var out []string
		for i, s := range running {
			if s.done == nil || stack.wasKilled(names[i]) {
				continue
			}
			select {
			case <-s.done:
				out = append(out, fmt.Sprintf("%s (%v; log: %s)", names[i], s.err(), logPath(names[i])))
			default:
			}
		}
		return out
	}
	return st, nil
}

// DefaultChildNice is the niceness the runner gives its children: the load
// generator is the experiment's clock, and on a small machine the system
// under test would otherwise delay its wake-ups by milliseconds (measured on
// 2 cores: schedule-lag p99 2–5 ms at nice 0, 1.3–2.1 ms at nice 10). The
// children keep equal priority among themselves.
const DefaultChildNice = 10

// NewProcessLauncher is a ProcessLauncher whose children run at
// DefaultChildNice, with a fresh token for their control APIs.
func NewProcessLauncher() *ProcessLauncher {
	return &ProcessLauncher{Supervisor: &Supervisor{Nice: DefaultChildNice, Token: ctlauth.NewToken()}}
}

// ProcessLauncher starts every component as a child process of the same
// binary (docs/design.md §2), so the load generator's CPU and GC do not share a
// runtime with the service under test.
type ProcessLauncher struct {
	Supervisor *Supervisor
	// StopGrace bounds each child's graceful stop (DefaultStopGrace if 0).
	StopGrace time.Duration
}

var _ Launcher = (*ProcessLauncher)(nil)

// Launch implements Launcher. On error, whatever was started is stopped.
// The proxies get the Supervisor's Token.
func (l *ProcessLauncher) Launch(ctx context.Context, r plan.Run, logPath func(string) string) (*Stack, error) {
	return launch(ctx, r, logPath, l.Supervisor.Token, l.start)
}

// start starts one component as a child process: a user's command, or
// this binary's subcommand.
func (l *ProcessLauncher) start(ctx context.Context, c plan.Component, log string) (started, error) {
	if cm := c.Command; cm != nil {
		ch, err := l.Supervisor.StartCommand(ctx, CommandSpec{Name: c.Name, Argv: cm.Argv, Env: cm.Env, Dir: cm.Dir,
			LogPath: log, Ready: cm.Ready, ReadyTimeout: cm.ReadyTimeout})
		if err != nil {
			return started{}, err
		}
		return started{pid: ch.PID(), stop: func() error { return ch.Stop(l.StopGrace) }, done: ch.Done(), err: ch.Err}, nil
	}
	// A PostgreSQL server has no /healthz: it announces itself once it
	// accepts connections and its setup has run.
	ch, err := l.Supervisor.Start(ctx, ChildSpec{Name: c.Name, Args: c.Args(), LogPath: log, NoHealth: c.Kind == plan.KindPostgres,
		Control: c.Kind == plan.KindProxy})
	if err != nil {
		return started{}, err
	}
	return started{url: ch.URL(), control: ch.ControlURL(), pid: ch.PID(),
		stop: func() error { return ch.Stop(l.StopGrace) }, done: ch.Done(), err: ch.Err}, nil
}
