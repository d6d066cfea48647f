package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/bytesize"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
	"github.com/bulkheadlab/bulkheadlab/internal/sysmon"
)

// isTCP reports whether the proxy serves the TCP data plane: --protocol
// tcp, or no --protocol and a tcp:// upstream (runProxy has sent the
// PostgreSQL plane's to runPGProxy before).
func (o proxyOptions) isTCP() (bool, error) {
	switch o.protocol {
	case "tcp":
		return true, nil
	case "":
		return strings.HasPrefix(o.upstream, "tcp://"), nil
	case "http":
		if strings.HasPrefix(o.upstream, "tcp://") || hasPostgresScheme(o.upstream) {
			return false, usageError(fmt.Errorf("--upstream: %q is not an HTTP URL; use --protocol tcp or postgres (or leave --protocol out)", redact.URL(o.upstream)))
		}
		return false, nil
	}
	return false, usageError(fmt.Errorf("--protocol: want http or tcp or postgres, got %q", o.protocol))
}

// The bounds of --delay-buffer: at least two of the plane's largest
// chunks, at most what a spec's sizes allow.
const (
	minDelayBuffer = 64 << 10
	maxDelayBuffer = 1 << 30
)

// parseDelayBuffer reads --delay-buffer (0 when not given: the plane's
// default).
func (o proxyOptions) parseDelayBuffer() (int, error) {
	if o.delayBuffer == "" {
		return 0, nil
	}
	n, err := bytesize.Parse(o.delayBuffer)
	if err != nil {
		return 0, usageError(fmt.Errorf("--delay-buffer: %w", err))
	}
	if n < minDelayBuffer || n > maxDelayBuffer {
		return 0, usageError(fmt.Errorf("--delay-buffer: want %s to %s, got %s", bytesize.Format(minDelayBuffer), bytesize.Format(maxDelayBuffer), o.delayBuffer))
	}
	return int(n), nil
}

// parseTCP checks the flags of the TCP data plane; errors name the flag
// and are usage errors.
func (o proxyOptions) parseTCP() (string, []tcpproxy.Fault, error) {
	if o.upstream == "" {
		return "", nil, usageError(errors.New("--upstream: required (host:port or tcp://host:port)"))
	}
	addr := strings.TrimPrefix(o.upstream, "tcp://")
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || strings.Contains(addr, "/") {
		return "", nil, usageError(fmt.Errorf("--upstream: want host:port or tcp://host:port, got %q", redact.URL(o.upstream)))
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
	var fs []tcpproxy.Fault
	if o.faults != "" {
		if fs, err = tcpproxy.ParseFaults(strings.NewReader(o.faults)); err != nil {
			return "", nil, usageError(fmt.Errorf("--faults: %w", err))
		}
	}
	return addr, fs, nil
}

// runTCPProxy is runProxy for the TCP data plane: it serves until ctx is
// done or a listener fails, then shuts down within o.grace.
func runTCPProxy(ctx context.Context, stdout, stderr io.Writer, o proxyOptions) (err error) {
	addr, fs, err := o.parseTCP()
	if err != nil {
		return err
	}
	delayBuffer, err := o.parseDelayBuffer()
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
	p, err := tcpproxy.New(tcpproxy.Config{Upstream: addr, Seed: o.seed, Ledger: ledger, ErrorLog: errLog, Token: o.token, DelayBuffer: delayBuffer})
	if err != nil {
		return usageError(fmt.Errorf("--upstream: %w", err))
	}
	if err := p.SetFaults(fs); err != nil {
		return usageError(fmt.Errorf("--faults: %w", err))
	}
	srv, err := tcpproxy.Listen(p, o.listen, o.control, errLog)
	if err != nil {
		return listenUsageError(err)
	}
	if err := announce.Write(stdout, announce.Announcement{Component: "proxy", Name: o.name,
		Addr: srv.Addr(), Control: srv.ControlAddr()}); err != nil {
		_ = srv.Shutdown(context.Background())
		return withCode(ExitError, fmt.Errorf("writing the announcement: %w", err))
	}
	errLog.Printf("relaying tcp %s -> %s, control on %s", srv.Addr(), addr, srv.ControlAddr())
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
