package tcpproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// ErrBadUpstream is returned by New for a missing or unusable upstream.
var ErrBadUpstream = errors.New("tcpproxy: bad upstream address")

// DefaultDialTimeout bounds the dial of the upstream for one connection.
const DefaultDialTimeout = 5 * time.Second

// DefaultHalfOpenTimeout is how long a connection one peer has closed
// (its FIN passed on) stays open while the other direction carries
// nothing.
const DefaultHalfOpenTimeout = time.Minute

// Config configures a Proxy. The zero value of every optional field is a
// usable default.
type Config struct {
	// Upstream is the host:port connections are relayed to. Required.
	Upstream string
	// Seed seeds the per-connection fault decisions.
	Seed uint64
	// DialTimeout bounds the upstream dial; zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// HalfOpenTimeout: once one peer has closed its side, the connection
	// is closed when the other direction has carried nothing for this
	// long (a peer that closed may be gone, and one that never reads or
	// closes would hold both descriptors for ever); zero means
	// DefaultHalfOpenTimeout.
	HalfOpenTimeout time.Duration
	// Ledger, if set, receives one entry per connection, when it ends; its
	// Decision lists what each fault set it followed decided, in order,
	// comma-separated ("pass,latency").
	// The caller closes it after the proxy has stopped serving.
	Ledger *faultproxy.Ledger
	// ErrorLog receives accept errors; nil means the standard logger.
	ErrorLog *log.Logger
	// Token, if set, is the run's secret every control request but GET
	// /healthz must carry as a bearer token (see internal/ctlauth); empty:
	// none is asked. The Host, Origin and Content-Type checks hold anyway.
	Token string
	// DelayBuffer bounds the bytes latency faults hold for one direction of
	// a connection (chunks read, waiting for their delay): past it the
	// proxy stops reading that direction until the oldest have been
	// written, so the sender meets TCP's backpressure, and a stream's
	// throughput under a latency L is at most DelayBuffer per L. Zero
	// means DefaultDelayBuffer.
	DelayBuffer int
	// MaxConns bounds the client connections served at once: beyond it
	// new clients wait in the listener's queue until one ends, so that the
	// connections leave file descriptors to the control API. 0 means
	// faultproxy.ConnBudget() (as the HTTP plane's); negative, no bound.
	MaxConns int
}

// Proxy relays TCP connections to one upstream and injects the current
// faults into them. Safe for concurrent use; faults may be replaced while
// connections are open (each open connection rolls the new set at once,
// see SetFaults).
type Proxy struct {
	upstream string
	seed     uint64
	dialer   net.Dialer
	halfOpen time.Duration
	ledger   *faultproxy.Ledger
	errLog   *log.Logger
	token    string // the control API's; see Config.Token
	maxConns int    // Config.MaxConns
	set      atomic.Pointer[faultSet]
	gen      atomic.Uint64
	seq      atomic.Uint64
	open     atomic.Int64
	peak     atomic.Int64
	m        *metrics
	ctx      context.Context // done when the proxy is closed
	cancel   context.CancelFunc

	// delayBuffer is Config.DelayBuffer; delayed the bytes every delay
	// line holds, delayPeak the most one line has held.
	delayBuffer int64
	delayed     atomic.Int64
	delayPeak   atomic.Int64

	mu    sync.Mutex // guards conns
	conns map[*conn]struct{}
	setMu sync.Mutex // serialises SetFaults (taken before mu)
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
	ho := cfg.HalfOpenTimeout
	if ho <= 0 {
		ho = DefaultHalfOpenTimeout
	}
	errLog := cfg.ErrorLog
	if errLog == nil {
		errLog = log.Default()
	}
	db := int64(cfg.DelayBuffer)
	if db <= 0 {
		db = DefaultDelayBuffer
	}
	p := &Proxy{upstream: cfg.Upstream, seed: cfg.Seed, dialer: net.Dialer{Timeout: dt}, halfOpen: ho,
		ledger: cfg.Ledger, errLog: errLog, token: cfg.Token, maxConns: cfg.MaxConns, delayBuffer: db,
		conns: map[*conn]struct{}{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.set.Store(&faultSet{})
	p.m = newMetrics(p)
	return p, nil
}

// Upstream is the address connections are relayed to.
func (p *Proxy) Upstream() string { return p.upstream }

// Faults returns a copy of the current fault set.
func (p *Proxy) Faults() []Fault { return p.set.Load().snapshot() }

// SetFaults validates fs and, if valid, replaces the fault set (an empty
// fs clears it). New connections roll the new set; so does every open
// connection, at once: its streams act on their next chunk by the new set
// (and its timeout's clock starts now), and a fault of the old set that
// it was waiting in finishes its wait. Down acts on new connections only.
// On error nothing changes and the error names the field and wraps
// ErrInvalidFault.
func (p *Proxy) SetFaults(fs []Fault) error {
	if err := ValidateFaults(fs); err != nil {
		return err
	}
	set := &faultSet{faults: make([]Fault, len(fs))}
	for i, f := range fs {
		set.faults[i] = f.normalized()
	}
	p.setMu.Lock()
	defer p.setMu.Unlock()
	set.gen = p.gen.Add(1)
	p.set.Store(set)
	p.mu.Lock()
	open := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		c.replan(set)
	}
	return nil
}

// ClearFaults removes every fault: connections pass through.
func (p *Proxy) ClearFaults() { _ = p.SetFaults(nil) }

// Open returns the number of connections open (accepted and not yet
// ended).
func (p *Proxy) Open() int64 { return p.open.Load() }

// Close makes every connection waiting in a fault (a delay, a bandwidth
// pause, a reset's time-out) end at once, and every new one be refused,
// so that a shutdown is not held up by them. Idempotent.
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
		c.close(outcomeStopped, false)
	}
}

func (p *Proxy) register(c *conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	n := p.open.Add(1)
	for peak := p.peak.Load(); n > peak; peak = p.peak.Load() {
		if p.peak.CompareAndSwap(peak, n) {
			break
		}
	}
}

func (p *Proxy) unregister(c *conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.open.Add(-1)
}

// scrapePeak returns the most connections open at once since its previous
// call and starts the next interval at the count open.
func (p *Proxy) scrapePeak() int64 {
	peak := p.peak.Swap(p.open.Load())
	for n, old := p.open.Load(), p.peak.Load(); n > old; old = p.peak.Load() {
		if p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return peak
}

// noteDelayed counts delta bytes into or out of a delay line, which now
// holds held bytes (0: unknown, when it lets bytes go).
func (p *Proxy) noteDelayed(delta, held int64) {
	p.delayed.Add(delta)
	for peak := p.delayPeak.Load(); held > peak; peak = p.delayPeak.Load() {
		if p.delayPeak.CompareAndSwap(peak, held) {
			break
		}
	}
}

func (p *Proxy) ledgerDropped() uint64 {
	if p.ledger == nil {
		return 0
	}
	return p.ledger.Dropped()
}
