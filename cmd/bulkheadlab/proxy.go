package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/bytesize"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
	"github.com/bulkheadlab/bulkheadlab/internal/sysmon"
)

// proxyOptions are the flags of `bulkheadlab proxy`.
type proxyOptions struct {
	listen, control, upstream string
	seed                      uint64
	name, ledger, faults      string
	grace                     time.Duration
	pprof                     string
	allowRemote               bool
	tuneRuntime               bool
	protocol                  string   // "", "http", "tcp" (proxy_tcp.go) or "postgres" (proxy_pg.go)
	tlsPassthrough            bool     // postgres: relay a client's TLS as plain TCP
	classes                   []string // http: route classes, postgres: statement classes; NAME=EXPR each
	delayBuffer               string   // tcp: the bytes latency faults hold per direction
	token                     string   // the control API's and pprof's ($BULKHEADLAB_TOKEN)
}

// newProxyCmd builds the `proxy` command.
func newProxyCmd() *cobra.Command {
	var o proxyOptions
	cmd := &cobra.Command{
		Use:   "proxy --upstream URL | --protocol tcp|postgres --upstream HOST:PORT",
		Short: "Run the fault-injection proxy",
		Long: `proxy forwards HTTP requests to --upstream and injects faults (` + strings.Join(faultproxy.Types(), ", ") + `)
per request with a seeded probability. Faults are read and changed at run
time through a JSON API on the --control listener: GET/PUT/DELETE /faults,
/healthz and Prometheus /metrics. A capacity fault serves at most
"capacity" of the requests it affects at once and queues the rest in
arrival order (at most "queue"; beyond, 503 with X-Dep-Overloaded). A
payload fault answers 200 with a JSON document of "size" bytes instead of
calling the upstream.

With --protocol tcp (or a tcp:// upstream) it relays TCP connections of any
protocol (a database, a cache, a broker) and injects faults per connection
instead: latency, bandwidth, timeout, reset, slow_close, limit_data,
slicer and down (Toxiproxy's names; see docs/tcp-and-postgres.md).

With --protocol postgres (or a postgres:// upstream) it relays PostgreSQL
connections, reads the wire protocol's framing and injects faults per
query: latency (the answer held), error (an ErrorResponse with a chosen
SQLSTATE, without reaching the server) and hang (never answered until the
client's cancel request), each with an optional "match", a regular
expression on the statement text. It answers a client's SSLRequest 'N', so a
client with sslmode=require fails; --tls-passthrough relays TLS sessions to
the server instead, with faults per connection there.

Every listener, and the upstream, must be on loopback unless --allow-remote.

The control API and pprof take commands only from a holder of the token in
$BULKHEADLAB_TOKEN, sent as "Authorization: Bearer …" (the runner sets one
per run); with --allow-remote the token is required. Without one, on
loopback, they answer any local process. Either way a Host or Origin other
than an IP address or localhost is refused, and so is a command whose
Content-Type is not application/json.

The first line on stdout is a JSON announcement with the bound addresses.`,
		Example: `  bulkheadlab proxy --upstream http://127.0.0.1:9000 --listen 127.0.0.1:8081 --control 127.0.0.1:8082
  curl -X PUT -H 'Content-Type: application/json' 127.0.0.1:8082/faults -d '{"faults":[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms"}]}'
  curl -X PUT -H 'Content-Type: application/json' 127.0.0.1:8082/faults -d '{"faults":[{"type":"capacity","capacity":4,"queue":100,"latency":"20ms"}]}'
  bulkheadlab proxy --protocol tcp --upstream 127.0.0.1:6379 --listen 127.0.0.1:6380 --control 127.0.0.1:8083
  curl -X PUT -H 'Content-Type: application/json' 127.0.0.1:8083/faults -d '{"faults":[{"type":"latency","stream":"downstream","latency":"100ms"}]}'
  bulkheadlab proxy --protocol postgres --upstream 127.0.0.1:5432 --listen 127.0.0.1:6432 --control 127.0.0.1:8084
  curl -X PUT -H 'Content-Type: application/json' 127.0.0.1:8084/faults -d '{"faults":[{"type":"latency","latency":"50ms","match":"pg_sleep|analytics"},{"type":"error","percent":5,"code":"57014"}]}'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProxy(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "data-plane listen address (host:port, port 0 = any); loopback unless --allow-remote")
	f.StringVar(&o.control, "control", "127.0.0.1:0", "control API listen address (host:port, port 0 = any); loopback unless --allow-remote")
	f.StringVar(&o.upstream, "upstream", "", "upstream base URL, http(s)://host:port (required); tcp://host:port or postgres://host:port for those planes; loopback unless --allow-remote")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the per-request fault decisions")
	f.StringVar(&o.name, "name", "", "instance name for the announcement, e.g. A")
	f.StringVar(&o.ledger, "ledger", "", "write one JSON line per request (time, request id, decision, delay) to this file")
	f.StringVar(&o.faults, "faults", "", `initial faults, the control API's JSON: {"faults":[...]}`)
	f.DurationVar(&o.grace, "shutdown-timeout", 4*time.Second, "bound on graceful shutdown; hanging requests are cut at once")
	f.StringVar(&o.pprof, "pprof", "", "serve Go's /debug/pprof/ profiles on this address (host:port), for profiling the proxy under load; off if empty; loopback unless --allow-remote")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow listening beyond loopback (other machines can then reach it)")
	f.StringVar(&o.protocol, "protocol", "", "data-plane protocol: http (faults per request), tcp (any TCP protocol, faults per connection) or postgres (PostgreSQL's wire protocol, faults per query); empty: tcp for a tcp:// upstream, postgres for a postgres:// one, else http")
	f.StringVar(&o.delayBuffer, "delay-buffer", "", fmt.Sprintf("tcp: the most bytes latency faults hold per direction of a connection, e.g. 16MiB (%s to %s; default %s): with a latency L a direction carries at most this per L, and a client pipelining more waits for the line", bytesize.Format(minDelayBuffer), bytesize.Format(maxDelayBuffer), bytesize.Format(tcpproxy.DefaultDelayBuffer)))
	f.BoolVar(&o.tlsPassthrough, "tls-passthrough", false, "postgres: pass a client's SSLRequest on to the server and relay the TLS session as plain TCP (faults per connection there) instead of answering it 'N'")
	f.StringArrayVar(&o.classes, "class", nil, "a class NAME=EXPR of the calls, counted on /metrics (calls, in flight, durations, by class); repeatable. http: a route, RE2 on the request's path (without the query), optionally after a method: report='GET ^/reports/' (faultproxy_class_requests_total{class}); postgres: RE2 on the statement's text (faultproxy_pg_class_queries_total{class})")
	f.BoolVar(&o.tuneRuntime, "tune-runtime", true, "keep the Go runtime's monitor thread awake rather than woken on every request: the proxy executes itself once more at start with GODEBUG="+sysmon.Setting+" (unless GODEBUG sets schedtrace), which cuts its CPU per request by about a third; false: the runtime's defaults")
	return cmd
}

// parse checks the flags; errors name the flag and are usage errors.
func (o proxyOptions) parse() (*url.URL, []faultproxy.Fault, error) {
	if o.upstream == "" {
		return nil, nil, usageError(errors.New("--upstream: required (http(s)://host:port)"))
	}
	u, err := url.Parse(o.upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, usageError(fmt.Errorf("--upstream: want http(s)://host[:port], got %q", redact.URL(o.upstream)))
	}
	if err := loopback.CheckURL("--upstream", o.upstream, o.allowRemote); err != nil {
		return nil, nil, usageError(err)
	}
	listeners := []struct{ flag, addr string }{{"--listen", o.listen}, {"--control", o.control}}
	if o.pprof != "" {
		listeners = append(listeners, struct{ flag, addr string }{"--pprof", o.pprof})
	}
	for _, l := range listeners {
		if err := loopback.CheckListen(l.flag, l.addr, o.allowRemote); err != nil {
			return nil, nil, usageError(err)
		}
	}
	if o.grace <= 0 || o.grace > time.Minute {
		return nil, nil, usageError(fmt.Errorf("--shutdown-timeout: want within (0, 1m], got %v", o.grace))
	}
	var fs []faultproxy.Fault
	if o.faults != "" {
		if fs, err = faultproxy.ParseFaults(strings.NewReader(o.faults)); err != nil {
			return nil, nil, usageError(fmt.Errorf("--faults: %w", err))
		}
	}
	return u, fs, nil
}

// runProxy serves until ctx is done or a listener fails, then shuts down
// within o.grace.
func runProxy(ctx context.Context, stdout, stderr io.Writer, o proxyOptions) (err error) {
	if o.delayBuffer != "" {
		if tcp, err := o.isTCP(); o.isPostgres() || err != nil || !tcp {
			return usageError(errors.New("--delay-buffer: only with --protocol tcp (the HTTP and PostgreSQL planes delay whole answers)"))
		}
	}
	if o.isPostgres() {
		return runPGProxy(ctx, stdout, stderr, o)
	}
	if o.tlsPassthrough {
		return usageError(errors.New("--tls-passthrough: only with --protocol postgres"))
	}
	if tcp, err := o.isTCP(); err != nil {
		return err
	} else if tcp {
		if len(o.classes) > 0 {
			return usageError(errors.New("--class: only with --protocol http or postgres (a TCP stream has no requests or statements to class)"))
		}
		return runTCPProxy(ctx, stdout, stderr, o)
	}
	u, fs, err := o.parse()
	if err != nil {
		return err
	}
	classes, err := o.httpClasses()
	if err != nil {
		return err
	}
	if o.token, err = controlToken(o.allowRemote); err != nil {
		return err
	}
	if o.tuneRuntime && ctx.Value(reexecKey{}) != nil {
		// On the main thread (see init in main.go), so that a parent-death
		// signal survives.
		if err := sysmon.Reexec(); err != nil { // returns only if it did not execute
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
		defer func() {
			err = errors.Join(err, ledger.Close(), file.Close())
		}()
	}
	var pl net.Listener
	if o.pprof != "" {
		if pl, err = net.Listen("tcp", o.pprof); err != nil {
			return usageError(fmt.Errorf("--pprof: %w", err))
		}
		defer pl.Close()
	}
	p, err := faultproxy.New(faultproxy.Config{Upstream: u, Seed: o.seed, Ledger: ledger, ErrorLog: errLog, Token: o.token, Classes: classes})
	if err != nil {
		return usageError(fmt.Errorf("--upstream: %w", err))
	}
	if err := p.SetFaults(fs); err != nil {
		return usageError(fmt.Errorf("--faults: %w", err))
	}
	srv, err := faultproxy.Listen(p, o.listen, o.control, errLog)
	if err != nil {
		return listenUsageError(err)
	}
	if err := announce.Write(stdout, announce.Announcement{Component: "proxy", Name: o.name,
		Addr: srv.Addr(), Control: srv.ControlAddr()}); err != nil {
		_ = srv.Shutdown(context.Background())
		return withCode(ExitError, fmt.Errorf("writing the announcement: %w", err))
	}
	errLog.Printf("forwarding %s -> %s, control on %s", srv.Addr(), u.Redacted(), srv.ControlAddr()) // no password in a log
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

// reexecKey marks the context of the program itself (main), in which the
// proxy may execute itself again (--tune-runtime). Commands run in process
// by tests lack it: there the executable is the test binary.
type reexecKey struct{}

// servePprof serves net/http/pprof's handlers on l, behind the control
// API's guard with token (the profiles show the command line and the
// memory), until the returned server is closed.
func servePprof(l net.Listener, token string, errLog *log.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: ctlauth.Guard(mux, token), ReadHeaderTimeout: 5 * time.Second, ErrorLog: errLog}
	go func() { _ = hs.Serve(l) }()
	errLog.Printf("pprof on http://%s/debug/pprof/", l.Addr())
	return hs
}

// listenUsageError names the flag whose address could not be listened on:
// --control when the control listener failed, else --listen. Both data
// planes' proxy commands report a failed Listen this way.
func listenUsageError(err error) error {
	var le *faultproxy.ListenError
	if errors.As(err, &le) && le.Plane == "control" {
		return usageError(fmt.Errorf("--control: %w", err))
	}
	return usageError(fmt.Errorf("--listen: %w", err))
}
