package pgproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// ErrBadUpstream is returned by New for a missing or unusable upstream.
var ErrBadUpstream = errors.New("pgproxy: bad upstream address")

// DefaultDialTimeout bounds the dial of the upstream for one connection.
const DefaultDialTimeout = 5 * time.Second

// DefaultStartupTimeout bounds how long a new connection may take to send
// its startup packet (after any SSLRequest or GSSENCRequest), as the
// server's authentication_timeout bounds the whole log-in.
const DefaultStartupTimeout = 10 * time.Second

// Config configures a Proxy. The zero value of every optional field is a
// usable default.
type Config struct {
	// Upstream is the PostgreSQL server's host:port. Required.
	Upstream string
	// Seed seeds the per-query fault decisions.
	Seed uint64
	// DialTimeout bounds the upstream dial; zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// StartupTimeout bounds the wait for a connection's startup packet;
	// zero means DefaultStartupTimeout.
	StartupTimeout time.Duration
	// TLSPassthrough: a client's SSLRequest (or a direct TLS handshake) is
	// passed on to the upstream and the connection relayed as plain TCP,
	// its bytes unread, so that a client that requires TLS can connect;
	// faults then act on such a connection as a whole (see the package
	// doc). False: the proxy answers an SSLRequest 'N' (no TLS), a client
	// with sslmode=prefer goes on in plain text and one with
	// sslmode=require fails.
	TLSPassthrough bool
	// Ledger, if set, receives one entry per query (and one per relayed
	// TLS connection), when it ends. The caller closes it after the proxy
	// has stopped serving.
	Ledger *faultproxy.Ledger
	// ErrorLog receives accept errors and warnings; nil means the standard
	// logger.
	ErrorLog *log.Logger
	// Token, if set, is the run's secret every control request but GET
	// /healthz must carry as a bearer token (see internal/ctlauth); empty:
	// none is asked. The Host, Origin and Content-Type checks hold anyway.
	Token string
	// MaxConns bounds the client connections served at once: beyond it
	// new clients wait in the listener's queue until one ends, so that the
	// connections leave file descriptors to the control API. 0 means
	// faultproxy.ConnBudget() (as the HTTP plane's); negative, no bound.
	MaxConns int
	// Classes are statement classes whose queries the proxy counts
	// (faultproxy_pg_class_queries_total{class}); see Class.
	Classes []Class
}

// Proxy relays PostgreSQL connections to one upstream and injects the
// current faults into their queries. Safe for concurrent use; faults may
// be replaced while connections are open (the next query of each follows
// the new set).
type Proxy struct {
	upstream       string
	seed           uint64
	dialer         net.Dialer
	startupTimeout time.Duration
	tlsPassthrough bool
	tlsWarn        sync.Once
	ledger         *faultproxy.Ledger
	errLog         *log.Logger
	token          string // the control API's; see Config.Token
	maxConns       int    // Config.MaxConns
	set            atomic.Pointer[faultSet]
	qseq           atomic.Uint64 // queries
	cseq           atomic.Uint64 // connections
	open           atomic.Int64
	inflight       atomic.Int64
	peak           atomic.Int64
	m              *metrics
	classes        classes         // Config.Classes
	ctx            context.Context // done when the proxy is closed
	cancel         context.CancelFunc

	mu    sync.Mutex // guards conns, keys
	conns map[*conn]struct{}
	keys  map[string]*conn // BackendKeyData (process ID and key) → connection
}

// New returns a pass-through Proxy for cfg.
func New(cfg Config) (*Proxy, error) {
	host, port, err := net.SplitHostPort(cfg.Upstream)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("%w: want host:port, got %q", ErrBadUpstream, cfg.Upstream)
	}
	dt := cfg.DialTimeout
	if dt <= 0 {
		dt = DefaultDialTimeout
	}
	st := cfg.StartupTimeout
	if st <= 0 {
		st = DefaultStartupTimeout
	}
	if err := ValidateClasses(cfg.Classes); err != nil {
		return nil, err
	}
	errLog := cfg.ErrorLog
	if errLog == nil {
		errLog = log.Default()
	}
	p := &Proxy{upstream: cfg.Upstream, seed: cfg.Seed, dialer: net.Dialer{Timeout: dt}, startupTimeout: st,
		tlsPassthrough: cfg.TLSPassthrough, ledger: cfg.Ledger, errLog: errLog, token: cfg.Token, maxConns: cfg.MaxConns,
		conns: map[*conn]struct{}{}, keys: map[string]*conn{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.set.Store(newFaultSet(nil))
	p.m = newMetrics(p)
	p.classes = newClasses(cfg.Classes, p.m.reg)
	return p, nil
}

// Upstream is the address connections are relayed to.
func (p *Proxy) Upstream() string { return p.upstream }

// Faults returns a copy of the current fault set.
func (p *Proxy) Faults() []Fault { return p.set.Load().snapshot() }

// SetFaults validates fs and, if valid, replaces the fault set (an empty
// fs clears it). Every query decided afterwards follows it, on new and
// open connections alike; a query already decided keeps its decision (a
// hang stays hung). On error nothing changes and the error names the
// field and wraps ErrInvalidFault.
func (p *Proxy) SetFaults(fs []Fault) error {
	if err := ValidateFaults(fs); err != nil {
		return err
	}
	p.set.Store(newFaultSet(fs))
	return nil
}

// ClearFaults removes every fault: queries pass through.
func (p *Proxy) ClearFaults() { _ = p.SetFaults(nil) }

// Open returns the number of client connections open.
func (p *Proxy) Open() int64 { return p.open.Load() }

// Inflight returns the number of queries in flight: received from a
// client and not yet answered to it whole (held, hung, or at the server).
func (p *Proxy) Inflight() int64 { return p.inflight.Load() }

// Close makes every wait of a fault (a delay, a hang) end at once and
// every new connection be refused, so that a shutdown is not held up by
// them. Idempotent.
func (p *Proxy) Close() { p.cancel() }

// closeAll closes every open connection.
func (p *Proxy) closeAll() {
	p.mu.Lock()
	open := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		c.close()
	}
}

func (p *Proxy) register(c *conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	p.open.Add(1)
}

func (p *Proxy) unregister(c *conn) {
	p.mu.Lock()
	delete(p.conns, c)
	if c.key != "" && p.keys[c.key] == c {
		delete(p.keys, c.key)
	}
	p.mu.Unlock()
	p.open.Add(-1)
}

// queryStarted and queryEnded keep the in-flight count and its peak.
func (p *Proxy) queryStarted() {
	n := p.inflight.Add(1)
	for peak := p.peak.Load(); n > peak; peak = p.peak.Load() {
		if p.peak.CompareAndSwap(peak, n) {
			break
		}
	}
}

func (p *Proxy) queryEnded() { p.inflight.Add(-1) }

// scrapePeak returns the most queries in flight at once since its
// previous call and starts the next interval at the count in flight.
func (p *Proxy) scrapePeak() int64 {
	peak := p.peak.Swap(p.inflight.Load())
	for n, old := p.inflight.Load(), p.peak.Load(); n > old; old = p.peak.Load() {
		if p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return peak
}

func (p *Proxy) ledgerDropped() uint64 {
	if p.ledger == nil {
		return 0
	}
	return p.ledger.Dropped()
}

// CutScheme reports whether raw is a PostgreSQL URL (postgres:// or
// postgresql://), and returns what follows the scheme.
func CutScheme(raw string) (rest string, ok bool) {
	for _, p := range []string{"postgres://", "postgresql://"} {
		if rest, ok := strings.CutPrefix(raw, p); ok {
			return rest, true
		}
	}
	return raw, false
}
