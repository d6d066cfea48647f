package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// InProcessLauncher starts every component in this process with the same
// constructors the subcommands use, on loopback :0 listeners. It is for
// tests and quick trials: the load generator then shares a runtime (CPU,
// GC) with the system under test, which the process launcher avoids.
// External mode is not supported.
type InProcessLauncher struct {
	// BrokenSharedBulkhead starts the service with the deliberate test fault
	// of service.LayoutConfig.BrokenSharedBulkhead.
	BrokenSharedBulkhead bool
}

var _ Launcher = (*InProcessLauncher)(nil)

// stopTimeout bounds an in-process component's graceful stop.
const stopTimeout = 5 * time.Second

// Launch implements Launcher.
func (l *InProcessLauncher) Launch(ctx context.Context, s *Spec, r Run, _ func(string) string) (st *Stack, err error) {
	if s.External != nil {
		return nil, errors.New("in-process launcher: external mode needs the process launcher")
	}
	st = &Stack{Targets: map[string]string{}, Controls: map[string]string{}}
	defer func() {
		if err != nil {
			_ = st.Stop()
			st = nil
		}
	}()
	deps := map[string]string{}
	for _, d := range []string{"A", "B"} {
		dc := s.Dependencies.A
		if d == "B" {
			dc = s.Dependencies.B
		}
		dep, err := service.NewDep(service.DepConfig{Name: d, Latency: dc.Latency.D, Jitter: dc.Jitter.D,
			Seed: uint64(r.ComponentSeed("dep-" + d)), Size: dc.Size})
		if err != nil {
			return nil, fmt.Errorf("dep-%s: %w", d, err)
		}
		addr, err := st.serve(dep.Serve)
		if err != nil {
			return nil, err
		}
		deps[d] = "http://" + addr
	}
	proxies := map[string]string{}
	for _, d := range []string{"A", "B"} {
		u, _ := url.Parse(deps[d])
		p, err := faultproxy.New(faultproxy.Config{Upstream: u, Seed: uint64(r.ComponentSeed("proxy-" + d)),
			ErrorLog: log.New(io.Discard, "", 0)})
		if err != nil {
			return nil, fmt.Errorf("proxy-%s: %w", d, err)
		}
		srv, err := faultproxy.Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
		if err != nil {
			return nil, fmt.Errorf("proxy-%s: %w", d, err)
		}
		st.stops = append([]func() error{func() error {
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			err := srv.Shutdown(ctx)
			p.Close()
			return err
		}}, st.stops...)
		proxies[d] = "http://" + srv.Addr()
		st.Controls[d] = "http://" + srv.ControlAddr()
		st.Samples = append(st.Samples, SampleTarget{Component: "proxy-" + d, MetricsURL: st.Controls[d] + "/metrics"})
	}
	svc, err := service.New(s.serviceConfig(r.Mode, proxies["A"], proxies["B"], l.BrokenSharedBulkhead))
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	addr, err := st.serve(svc.Serve)
	if err != nil {
		return nil, err
	}
	st.Targets["a"], st.Targets["b"] = "http://"+addr+"/a", "http://"+addr+"/b"
	st.Samples = append(st.Samples, SampleTarget{Component: "service", MetricsURL: "http://" + addr + "/metrics"})
	return st, nil
}

// serve runs fn on a new loopback listener until the stack stops, and puts
// its stop first in line (components stop in the reverse of start order).
func (st *Stack) serve(fn func(context.Context, net.Listener) error) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx, ln) }()
	st.stops = append([]func() error{func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(stopTimeout + time.Second):
			return errors.New("in-process component did not stop")
		}
	}}, st.stops...)
	return ln.Addr().String(), nil
}
