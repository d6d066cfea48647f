package experiments

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Stack is the running system of one run: the service (or the user's own,
// in external mode), the fault proxies in front of the dependencies and
// the dependency stubs. Stop tears it down; it is idempotent.
type Stack struct {
	// Targets maps an endpoint ("a", "b") to the full URL the load hits.
	Targets map[string]string
	// Controls maps a dependency ("A", "B") to its fault proxy's control URL.
	Controls map[string]string
	// Samples are the components whose /metrics the sampler scrapes.
	Samples []SampleTarget
	// stops run in order: the service first, then proxies, then deps.
	stops []func() error
	// died reports components that exited on their own; nil means never.
	died func() []string
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

// Stop stops every component, in order, and returns the joined errors.
func (s *Stack) Stop() error {
	var errs []error
	for _, stop := range s.stops {
		if err := stop(); err != nil {
			errs = append(errs, err)
		}
	}
	s.stops = nil
	return errors.Join(errs...)
}

// Launcher starts the components of one run. logPath names the log file of
// a component ("service", "proxy-A", "dep-A"...).
type Launcher interface {
	Launch(ctx context.Context, s *Spec, r Run, logPath func(component string) string) (*Stack, error)
}

// DefaultChildNice is the niceness the runner gives its children: the load
// generator is the experiment's clock, and on a small machine the system
// under test would otherwise delay its wake-ups by milliseconds (measured on
// 2 cores: schedule-lag p99 2–5 ms at nice 0, 1.3–2.1 ms at nice 10). The
// children keep equal priority among themselves.
const DefaultChildNice = 10

// ProcessLauncher starts every component as a child process of the same
// binary on loopback :0 ports (DESIGN §2), so the load generator's CPU and
// GC do not share a runtime with the service under test.
type ProcessLauncher struct {
	Supervisor *Supervisor
	// StopGrace bounds each child's graceful stop (DefaultStopGrace if 0).
	StopGrace time.Duration
	// ServeArgs are extra flags for `bulkheadlab serve`, e.g. a test defect.
	ServeArgs []string
}

var _ Launcher = (*ProcessLauncher)(nil)

// Launch implements Launcher. On error, whatever was started is stopped.
func (l *ProcessLauncher) Launch(ctx context.Context, s *Spec, r Run, logPath func(string) string) (st *Stack, err error) {
	st = &Stack{Targets: map[string]string{}, Controls: map[string]string{}}
	var started []*Child
	defer func() {
		if err != nil {
			for i := len(started) - 1; i >= 0; i-- {
				_ = started[i].Stop(l.StopGrace)
			}
			st = nil
		}
	}()
	start := func(name string, args ...string) (*Child, error) {
		c, err := l.Supervisor.Start(ctx, ChildSpec{Name: name, Args: args, LogPath: logPath(name)})
		if err != nil {
			return nil, fmt.Errorf("%w (log: %s)", err, logPath(name))
		}
		started = append(started, c)
		st.Samples = append(st.Samples, SampleTarget{Component: name, MetricsURL: c.URL() + "/metrics", PID: c.PID()})
		return c, nil
	}
	upstream := map[string]string{}
	if x := s.External; x != nil {
		upstream["A"], upstream["B"] = x.Upstreams.A, x.Upstreams.B
	} else {
		for _, d := range []string{"A", "B"} {
			c, err := start("dep-"+d, append([]string{"dep", "--listen", "127.0.0.1:0"}, s.DepArgs(d, r.ComponentSeed("dep-"+d))...)...)
			if err != nil {
				return nil, err
			}
			upstream[d] = c.URL()
		}
	}
	proxies := map[string]string{}
	for _, d := range []string{"A", "B"} {
		listen := "127.0.0.1:0"
		if s.External != nil {
			listen = externalProxyAddr(s.External, d)
		}
		c, err := start("proxy-"+d, "proxy", "--listen", listen, "--control", "127.0.0.1:0",
			"--upstream", upstream[d], "--name", d, "--seed", fmt.Sprint(r.ComponentSeed("proxy-"+d)))
		if err != nil {
			return nil, err
		}
		proxies[d] = c.URL()
		st.Controls[d] = c.ControlURL()
		st.Samples[len(st.Samples)-1].MetricsURL = c.ControlURL() + "/metrics"
	}
	if x := s.External; x != nil {
		st.Targets["a"], st.Targets["b"] = x.Targets.A, x.Targets.B
	} else {
		args := append([]string{"serve", "--listen", "127.0.0.1:0"}, s.ServeArgs(r.Mode)...)
		args = append(args, l.ServeArgs...)
		c, err := start("service", append(args, "--dep-a", proxies["A"], "--dep-b", proxies["B"])...)
		if err != nil {
			return nil, err
		}
		st.Targets["a"], st.Targets["b"] = c.URL()+"/a", c.URL()+"/b"
	}
	st.died = func() []string {
		var out []string
		for _, c := range started {
			select {
			case <-c.Done():
				out = append(out, fmt.Sprintf("%s (%v; log: %s)", c.Name, c.Err(), logPath(c.Name)))
			default:
			}
		}
		return out
	}
	// Stop the service first so no request is cut at a proxy or a dep.
	for i := len(started) - 1; i >= 0; i-- {
		c := started[i]
		st.stops = append(st.stops, func() error { return c.Stop(l.StopGrace) })
	}
	return st, nil
}

// externalProxyAddr is the fixed listen address of dependency d's proxy in
// external mode (host:port, or a URL whose host:port is used).
func externalProxyAddr(x *External, d string) string {
	a := x.Proxies.A
	if d == "B" {
		a = x.Proxies.B
	}
	if strings.Contains(a, "://") {
		if u, err := url.Parse(a); err == nil {
			return u.Host
		}
	}
	return a
}
