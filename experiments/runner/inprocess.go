package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/pgserver"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// InProcessLauncher starts every component in this process with the same
// constructors the subcommands use, on loopback listeners. It is for tests
// and quick trials: the load generator then shares a runtime (CPU, GC) with
// the system under test, which the process launcher avoids.
type InProcessLauncher struct {
	// Token, if set, guards the proxies' control APIs (see
	// internal/ctlauth).
	Token string
}

var _ Launcher = (*InProcessLauncher)(nil)

// stopTimeout bounds an in-process component's graceful stop.
const stopTimeout = 5 * time.Second

// Launch implements Launcher.
func (l *InProcessLauncher) Launch(ctx context.Context, r plan.Run, logPath func(string) string) (*Stack, error) {
	return launch(ctx, r, logPath, l.Token, func(ctx context.Context, c plan.Component, log string) (started, error) {
		return startInProcess(ctx, c, l.Token)
	})
}

func startInProcess(_ context.Context, c plan.Component, token string) (started, error) {
	switch c.Kind {
	case plan.KindDep:
		d, err := service.NewDep(*c.Dep)
		if err != nil {
			return started{}, err
		}
		return serveInProcess(c.Listen, d.Serve)
	case plan.KindPostgres:
		return startPostgres(c)
	case plan.KindService:
		svc, err := service.New(c.Service.Config)
		if err != nil {
			return started{}, err
		}
		return serveInProcess(c.Listen, svc.Serve)
	case plan.KindProxy:
		if addr, ok := strings.CutPrefix(c.Proxy.Upstream.URL, "tcp://"); ok {
			return startTCPProxy(c, addr, token)
		}
		if addr, ok := strings.CutPrefix(c.Proxy.Upstream.URL, "postgres://"); ok {
			return startPostgresProxy(c, addr, token)
		}
		u, err := url.Parse(c.Proxy.Upstream.URL)
		if err != nil {
			return started{}, err
		}
		quiet := log.New(io.Discard, "", 0)
		p, err := faultproxy.New(faultproxy.Config{Upstream: u, Seed: c.Proxy.Seed, ErrorLog: quiet, Token: token, Classes: c.Proxy.Classes})
		if err != nil {
			return started{}, err
		}
		srv, err := faultproxy.Listen(p, c.Listen, c.Proxy.Control, quiet)
		if err != nil {
			return started{}, err
		}
		return started{url: "http://" + srv.Addr(), control: "http://" + srv.ControlAddr(), stop: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			err := srv.Shutdown(ctx)
			p.Close()
			return err
		}}, nil
	}
	return started{}, fmt.Errorf("unknown component kind %q", c.Kind)
}

// startTCPProxy starts the TCP data plane of the fault proxy for a tcp://
// upstream.
func startTCPProxy(c plan.Component, addr, token string) (started, error) {
	quiet := log.New(io.Discard, "", 0)
	p, err := tcpproxy.New(tcpproxy.Config{Upstream: addr, Seed: c.Proxy.Seed, ErrorLog: quiet, Token: token})
	if err != nil {
		return started{}, err
	}
	srv, err := tcpproxy.Listen(p, c.Listen, c.Proxy.Control, quiet)
	if err != nil {
		return started{}, err
	}
	return started{url: "tcp://" + srv.Addr(), control: "http://" + srv.ControlAddr(), stop: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		return srv.Shutdown(ctx)
	}}, nil
}

// startPostgresProxy starts the PostgreSQL data plane of the fault proxy
// for a postgres:// upstream.
func startPostgresProxy(c plan.Component, addr, token string) (started, error) {
	quiet := log.New(io.Discard, "", 0)
	p, err := pgproxy.New(pgproxy.Config{Upstream: addr, Seed: c.Proxy.Seed, ErrorLog: quiet, Token: token, Classes: c.Proxy.Classes})
	if err != nil {
		return started{}, err
	}
	srv, err := pgproxy.Listen(p, c.Listen, c.Proxy.Control, quiet)
	if err != nil {
		return started{}, err
	}
	return started{url: "postgres://" + srv.Addr(), control: "http://" + srv.ControlAddr(), stop: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		return srv.Shutdown(ctx)
	}}, nil
}

// startPostgres starts a PostgreSQL server (a process of its own, as
// PostgreSQL is) and runs its setup SQL.
func startPostgres(c plan.Component) (started, error) {
	_, portStr, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return started{}, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return started{}, err
	}
	s, err := pgserver.Start(pgserver.Options{Port: port, MaxConnections: c.Postgres.MaxConnections, Setup: c.Postgres.Setup})
	if err != nil {
		return started{}, err
	}
	return started{url: "postgres://" + s.Addr, pid: s.PID, stop: func() error { s.Stop(); return nil }}, nil
}

// serveInProcess runs fn on a new listener until stopped.
func serveInProcess(addr string, fn func(context.Context, net.Listener) error) (started, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return started{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx, ln) }()
	return started{url: "http://" + ln.Addr().String(), stop: func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(stopTimeout + time.Second):
			return errors.New("in-process component did not stop")
		}
	}}, nil
}
