package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
	"github.com/bulkheadlab/bulkheadlab/internal/sysmon"
)

// isPostgres reports whether the proxy serves the PostgreSQL data plane:
// --protocol postgres, or no --protocol and a postgres:// (or
// postgresql://) upstream.
func (o proxyOptions) isPostgres() bool {
	switch o.protocol {
	case "postgres":
		return true
	case "":
		return hasPostgresScheme(o.upstream)
	}
	return false
}

// hasPostgresScheme reports whether upstream is a postgres:// or
// postgresql:// URL.
func hasPostgresScheme(upstream string) bool {
	_, ok := pgproxy.CutScheme(upstream)
	return ok
}

// parsePG checks the flags of the PostgreSQL data plane; errors name the
// flag and are usage errors. The upstream is host:port or
// postgres://host[:port] (5432 by default), nothing more: the proxy needs
// no user, database or options, the clients send theirs.
func (o proxyOptions) parsePG() (string, []pgproxy.Fault, error) {
	const want = "host:port or postgres://host[:port]"
	if o.upstream == "" {
		return "", nil, usageError(fmt.Errorf("--upstream: required (%s)", want))
	}
	addr := o.upstream
	if hasPostgresScheme(addr) {
		u, err := url.Parse(addr)
		if err != nil || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
			return "", nil, usageError(fmt.Errorf("--upstream: want %s (no user, database or options), got %q", want, redact.URL(o.upstream)))
		}
		addr = u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "5432")
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || strings.Contains(addr, "/") {
		return "", nil, usageError(fmt.Errorf("--upstream: want %s, got %q", want, redact.URL(o.upstream)))
	}
	if !o.allowRemote && !loopback.Host(host) {
		return "", nil, usageError(fmt.Errorf("--upstream %s: %w; pass --allow-remote to send traffic beyond this machine", redact.URL(o.upstream), loopback.ErrRemote))
	}
	listeners := []struct{ flag, addr string }{{"--listen", o.listen}, {"--control", o.control}}
	if o.pprof != "" {
		listeners = append(listeners, struct{ flag, addr string }{"--pprof", o.pprof})
	}
	for _, l := range listeners {
		if err := loopback.CheckListen(l.flag, l.addr, o.allowRemote); err != nil {
			return "", nil, usageError(err)
		}
	}
	if o.grace <= 0 || o.grace > time.Minute {
		return "", nil, usageError(fmt.Errorf("--shutdown-timeout: want within (0, 1m], got %v", o.grace))
	}
	var fs []pgproxy.Fault
	if o.faults != "" {
		if fs, err = pgproxy.ParseFaults(strings.NewReader(o.faults)); err != nil {
			return "", nil, usageError(fmt.Errorf("--faults: %w", err))
		}
	}
	if _, err := o.pgClasses(); err != nil {
		return "", nil, err
	}
	return addr, fs, nil
}

// pgClasses are the --class flags: NAME=RE2 each.
func (o proxyOptions) pgClasses() ([]pgproxy.Class, error) {
	return o.classFlags("RE2", pgproxy.ValidateClasses)
}

// httpClasses are the --class flags of the HTTP plane: NAME=ROUTE each.
func (o proxyOptions) httpClasses() ([]faultproxy.Class, error) {
	return o.classFlags("ROUTE", faultproxy.ValidateClasses)
}

// classFlags parses the --class flags, NAME=EXPR each (expr names EXPR
// in an error), and checks them with validate.
func (o proxyOptions) classFlags(expr string, validate func([]faultproxy.Class) error) ([]faultproxy.Class, error) {
	var cs []faultproxy.Class
	for _, v := range o.classes {
		name, re, ok := strings.Cut(v, "=")
		if !ok {
			return nil, usageError(fmt.Errorf("--class: want NAME=%s, got %q", expr, v))
		}
		cs = append(cs, faultproxy.Class{Name: name, Match: re})
	}
	if err := validate(cs); err != nil {
		return nil, usageError(fmt.Errorf("--class: %w", err))
	}
	return cs, nil
}

// runPGProxy is runProxy for the PostgreSQL data plane: it serves until
// ctx is done or a listener fails, then shuts down within o.grace.
func runPGProxy(ctx context.Context, stdout, stderr io.Writer, o proxyOptions) (err error) {
	addr, fs, err := o.parsePG()
	if err != nil {
		return err
	}
	if o.token, err = controlToken(o.allowRemote); err != nil {
		return err
	}
	if o.tuneRuntime && ctx.Value(reexecKey{}) != nil {
		if err := sysmon.Reexec(); err != nil {
			fmt.Fprintf(stderr, "proxy: --tune-runtime: %v; going on with the Go runtime's defaults\n", err)
		}
	}
	runtime.UnlockOSThread()
	errLog := log.New(stderr, "proxy: ", log.LstdFlags)
	var ledger *faultproxy.Ledger
	if o.ledger != "" {
		file, ferr := os.Create(o.ledger)
		if ferr != nil {
			return usageError(fmt.Errorf("--ledger: %w", ferr))
		}
		ledger = faultproxy.NewLedger(file, 0)
		defer func() { err = errors.Join(err, ledger.Close(), file.Close()) }()
	}
	var pl net.Listener
	if o.pprof != "" {
		if pl, err = net.Listen("tcp", o.pprof); err != nil {
			return usageError(fmt.Errorf("--pprof: %w", err))
		}
		defer pl.Close()
	}
	classes, _ := o.pgClasses() // checked by parsePG
	p, err := pgproxy.New(pgproxy.Config{Upstream: addr, Seed: o.seed, TLSPassthrough: o.tlsPassthrough, Ledger: ledger, ErrorLog: errLog, Token: o.token, Classes: classes})
	if err != nil {
		return usageError(fmt.Errorf("--upstream: %w", err))
	}
	if err := p.SetFaults(fs); err != nil {
		return usageError(fmt.Errorf("--faults: %w", err))
	}
	srv, err := pgproxy.Listen(p, o.listen, o.control, errLog)
	if err != nil {
		return listenUsageError(err)
	}
	if err := announce.Write(stdout, announce.Announcement{Component: "proxy", Name: o.name,
		Addr: srv.Addr(), Control: srv.ControlAddr()}); err != nil {
		_ = srv.Shutdown(context.Background())
		return withCode(ExitError, fmt.Errorf("writing the announcement: %w", err))
	}
	errLog.Printf("relaying postgres %s -> %s, control on %s", srv.Addr(), addr, srv.ControlAddr())
	if pl != nil {
		ps := servePprof(pl, o.token, errLog)
		defer ps.Close()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-srv.Err():
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		errLog.Printf("shutdown cut connections after %v: %v", o.grace, err)
	}
	if serveErr != nil {
		return withCode(ExitError, fmt.Errorf("proxy: serving: %w", serveErr))
	}
	return nil
}
