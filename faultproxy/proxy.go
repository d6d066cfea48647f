package faultproxy

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBadUpstream is returned by New for a missing or unusable upstream URL.
var ErrBadUpstream = errors.New("faultproxy: bad upstream URL")

// Config configures a Proxy. The zero value of every optional field is a
// usable default.
type Config struct {
	// Upstream is the http or https URL requests are forwarded to. Required.
	Upstream *url.URL
	// Seed seeds the per-request fault decisions.
	Seed uint64
	// Transport carries forwarded requests; nil means the proxy's own
	// HTTP/1.1 client for an http upstream (see h1client.go), and
	// NewTransport() for an https one and for protocol upgrades.
	Transport http.RoundTripper
	// Ledger, if set, receives one entry per request. The caller closes it
	// after the proxy has stopped serving.
	Ledger *Ledger
	// ErrorLog receives the reverse proxy's own log lines; nil means the
	// standard logger.
	ErrorLog *log.Logger
	// Token, if set, is the run's secret every control request but GET
	// /healthz must carry as a bearer token (see internal/ctlauth); empty:
	// none is asked. The Host, Origin and Content-Type checks hold anyway.
	Token string
	// Classes are route classes whose requests the proxy counts
	// (faultproxy_class_requests_total{class}…); see Class. Without
	// them (and without a fault's Match) no request's route is looked at.
	Classes []Class
}

// Proxy is the data plane: an http.Handler that injects the current faults
// and forwards the rest to the upstream. Safe for concurrent use; faults
// may be replaced while requests are in flight (each request uses the set
// that was current when it arrived).
type Proxy struct {
	seed      uint64
	set       atomic.Pointer[faultSet]
	seq       atomic.Uint64
	inflight  atomic.Int64
	peak      atomic.Int64  // most in progress at once since the last scrape (enter, scrapePeak)
	capacity  capacityStats // over every set's capacity server
	target    *url.URL
	h1        *h1Client // nil: transport carries the requests
	transport http.RoundTripper
	rp        *httputil.ReverseProxy // for protocol upgrades only
	ledger    *Ledger
	m         *metrics
	classes   *classes // Config.Classes; nil without
	token     string   // the control API's; see Config.Token
	// bodyIdleTimeout bounds each wait for more of a request body on the
	// net/http data plane (idleBody), as the raw plane's bodyIdleTimeout.
	bodyIdleTimeout time.Duration
	stop            chan struct{}
	stopOnce        sync.Once
}

// NewTransport returns the transport a Proxy uses by default: tuned to keep
// up to 1024 idle connections per upstream host, so ~1000 concurrent
// requests reuse connections instead of churning them, with bounded dial
// and TLS handshake times, no environment proxy and no transparent
// compression (bodies pass through unchanged).
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}
}

// New returns a pass-through Proxy for cfg.
func New(cfg Config) (*Proxy, error) {
	u := cfg.Upstream
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: want http(s)://host[:port][/path], got %s", ErrBadUpstream, redactURL(u))
	}
	if err := ValidateClasses(cfg.Classes); err != nil {
		return nil, err
	}
	target := *u
	tr := cfg.Transport
	if tr == nil {
		tr = NewTransport()
	}
	p := &Proxy{seed: cfg.Seed, ledger: cfg.Ledger, token: cfg.Token, stop: make(chan struct{}), target: &target, transport: tr,
		bodyIdleTimeout: rawBodyIdleTimeout}
	if cfg.Transport == nil && target.Scheme == "http" {
		p.h1 = newH1Client(&target)
	}
	p.set.Store(emptySet)
	p.m = newMetrics(p)
	p.classes = newClasses(cfg.Classes, p.m.reg)
	p.rp = &httputil.ReverseProxy{
		Rewrite:      func(pr *httputil.ProxyRequest) { pr.SetURL(&target) },
		Transport:    tr,
		BufferPool:   bufferPool{},
		ErrorHandler: p.upstreamError,
		ErrorLog:     cfg.ErrorLog,
	}
	return p, nil
}

// Faults returns a copy of the current fault set.
func (p *Proxy) Faults() []Fault { return p.set.Load().snapshot() }

// SetFaults validates fs and, if valid, atomically replaces the fault set
// (an empty fs clears it). On error the set is unchanged and the error
// names the field and wraps ErrInvalidFault.
func (p *Proxy) SetFaults(fs []Fault) error {
	if err := ValidateFaults(fs); err != nil {
		return err
	}
	set := newFaultSet(fs)
	if set.capacity != nil {
		set.capacity.stats = &p.capacity // before the set is published
	}
	p.set.Store(set)
	return nil
}

// ClearFaults removes every fault: the proxy passes everything through.
func (p *Proxy) ClearFaults() { p.set.Store(emptySet) }

// Inflight returns the number of data-plane requests in progress.
func (p *Proxy) Inflight() int64 { return p.inflight.Load() }

// enter counts a data-plane request in progress (its caller decrements
// p.inflight when it ends) and raises the peak to the new count if it is
// higher: one load and compare, a compare-and-swap only when higher.
func (p *Proxy) enter() {
	n := p.inflight.Add(1)
	for peak := p.peak.Load(); n > peak; peak = p.peak.Load() {
		if p.peak.CompareAndSwap(peak, n) {
			return
		}
	}
}

// scrapePeak returns the most data-plane requests in progress at once
// since its previous call, and starts the next interval at the count in
// progress.
func (p *Proxy) scrapePeak() int64 {
	peak := p.peak.Swap(p.inflight.Load())
	// A request that entered between the load and the swap, against the
	// old peak, is counted now.
	for n, old := p.inflight.Load(), p.peak.Load(); n > old; old = p.peak.Load() {
		if p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return peak
}

// Close makes every hanging or delayed request, now and later, abort its
// connection at once, so that a server shutdown is not held up by them.
// Forwarded requests are not affected. Idempotent; it does not close the
// Ledger.
func (p *Proxy) Close() {
	p.stopOnce.Do(func() { close(p.stop) })
}

// closeIdleConnections closes the transport's idle upstream connections.
func (p *Proxy) closeIdleConnections() {
	if p.h1 != nil {
		p.h1.closeIdle()
	}
	if c, ok := p.transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (p *Proxy) ledgerDropped() uint64 {
	if p.ledger == nil {
		return 0
	}
	return p.ledger.Dropped()
}

// ServeHTTP decides the request's faults (see the package doc for the
// combination rule), injects them and forwards the request if no terminal
// fault fired.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	ctx := r.Context()
	p.enter()
	defer p.inflight.Add(-1)
	target := r.RequestURI
	if target == "" { // a request built by hand
		target = r.URL.RequestURI()
	}
	set, d, e, cls := p.begin(arrived, &reqLine{smethod: r.Method, starget: target})
	if cls != 0 {
		defer p.classes.leave(cls, arrived)
	}
	start := arrived // of the request's service
	if d.Capacity {
		res, at := p.admit(set.capacity, ctx.Done, arrived, &e)
		switch res {
		case admitFull:
			p.record(r, d, e)
			writeError(w, overloaded)
			return
		case admitCancelled:
			p.record(r, d, e)
			return
		case admitStopped:
			p.record(r, d, e)
			abort()
		}
		defer set.capacity.release() // also when a fault aborts (panics)
		start = at
	}
	if d.Latencies > 0 || d.Delay > 0 {
		if !p.delay(ctx, r, start, d, &e) {
			return
		}
	}
	if d.Terminal < 0 {
		p.record(r, d, e)
		p.forward(p.shapeHTTP(set, d, w, r), r, ctx)
		return
	}
	p.m.injected[d.TerminalType].Inc()
	e.Outcome = d.TerminalType
	set.answers[d.Terminal].answerHTTP(p, w, r, answer{set: set, d: d, e: e})
}

// begin counts a request and decides its faults; the ledger entry starts
// as "forwarded" (its Decision is rendered only for a ledger). It returns
// the route classes l is of, counted in flight from now (the caller ends
// them with p.classes.leave). Both data planes start here. l's route is
// looked at only when the proxy has classes or a fault a Match.
func (p *Proxy) begin(arrived time.Time, l *reqLine) (*faultSet, Decision, LedgerEntry, uint64) {
	p.m.requests.Inc()
	seq := p.seq.Add(1)
	set := p.set.Load()
	var cls uint64
	if p.classes != nil {
		if cls = p.classes.match(l); cls != 0 {
			p.classes.enter(cls)
		}
	}
	d := set.decide(p.seed, seq, set.matched(l))
	return set, d, LedgerEntry{Time: arrived, Seq: seq, Outcome: "forwarded"}, cls
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (p *Proxy) record(r *http.Request, d Decision, e LedgerEntry) {
	if p.ledger == nil {
		return
	}
	e.Decision = d.String()
	e.RequestID = r.Header.Get("X-Request-Id")
	p.ledger.Record(e)
}

// upstreamError answers 502 when the upstream call failed. A failure caused
// by the caller going away is counted as a cancellation, not an upstream
// error.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		p.m.cancelled.Inc()
	} else {
		p.m.upstreamErrors.Inc()
	}
	w.Header().Set("X-Faultproxy-Error", "upstream")
	http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
}

// bufferPool lends the reverse proxy (upgrades) the forwarding path's
// pooled 32 KiB copy buffers.
type bufferPool struct{}

func (bufferPool) Get() []byte  { return *(copyBuffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }

// redactURL is u without its password, "<nil>" for none.
func redactURL(u *url.URL) string {
	if u == nil {
		return "<nil>"
	}
	return u.Redacted()
}
