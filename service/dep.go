package service

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// DepConfig configures a dependency stub. Errors from NewDep are
// *ConfigError naming the field.
type DepConfig struct {
	// Name labels the stub ("A", "B"); it is echoed in X-Dep-Name.
	Name string
	// Latency is the base delay of every response (zero: answer at once).
	Latency time.Duration
	// Jitter spreads the delay uniformly over [Latency-Jitter,
	// Latency+Jitter], clamped at zero.
	Jitter time.Duration
	// Seed seeds the stub's own random source, so the sequence of delays is
	// reproducible.
	Seed uint64
	// Size is the response body length in bytes.
	Size int
}

// Validate reports the first invalid field.
func (c DepConfig) Validate() error {
	switch {
	case c.Latency < 0:
		return fieldErrorf("latency", "must not be negative, got %v", c.Latency)
	case c.Jitter < 0:
		return fieldErrorf("jitter", "must not be negative, got %v", c.Jitter)
	case c.Size < 0 || c.Size > 64<<20:
		return fieldErrorf("size", "must be between 0 and %d bytes, got %d", 64<<20, c.Size)
	}
	return nil
}

// Dep is a dependency stub: every request other than /healthz and /metrics
// waits Latency±Jitter (returning early, with no body, if the caller goes
// away) and answers 200 with Size bytes, echoing X-Request-Id. It is safe
// for concurrent use.
type Dep struct {
	cfg      DepConfig
	body     []byte
	mu       sync.Mutex
	rng      *rand.Rand // guarded by mu
	registry *prometheus.Registry
	requests prometheus.Counter
	inflight prometheus.Gauge
	handler  http.Handler
}

// NewDep validates cfg and builds the stub and its metrics registry.
func NewDep(cfg DepConfig) (*Dep, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Dep{
		cfg:      cfg,
		body:     bytes.Repeat([]byte("x"), cfg.Size),
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x6465700a)),
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bulkheadlab_dep_requests_total", Help: "Requests received by the stub."}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bulkheadlab_dep_inflight_requests", Help: "Requests being served by the stub."}),
	}
	d.registry.MustRegister(d.requests, d.inflight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), runtimestats.NewCollector())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.registry, promhttp.HandlerOpts{Registry: d.registry}))
	mux.HandleFunc("/", d.serve)
	d.handler = mux
	return d, nil
}

// Handler returns the stub's HTTP handler.
func (d *Dep) Handler() http.Handler { return d.handler }

// Registry returns the stub's own Prometheus registry.
func (d *Dep) Registry() *prometheus.Registry { return d.registry }

// Serve serves the stub on ln until ctx ends, then shuts down gracefully
// within ShutdownTimeout. It returns nil after a ctx-driven shutdown.
func (d *Dep) Serve(ctx context.Context, ln net.Listener) error {
	return serveHTTP(ctx, ln, d.handler, d.cfg.Latency+d.cfg.Jitter+ReadTimeout)
}

// delay draws the next response delay from the seeded source.
func (d *Dep) delay() time.Duration {
	if d.cfg.Jitter == 0 {
		return d.cfg.Latency
	}
	d.mu.Lock()
	off := d.rng.Int64N(2*int64(d.cfg.Jitter)+1) - int64(d.cfg.Jitter)
	d.mu.Unlock()
	return max(0, d.cfg.Latency+time.Duration(off))
}

func (d *Dep) serve(w http.ResponseWriter, r *http.Request) {
	d.requests.Inc()
	d.inflight.Inc()
	defer d.inflight.Dec()
	if delay := d.delay(); delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return // the caller is gone: stop waiting
		}
	}
	if id := r.Header.Get(HeaderRequestID); id != "" {
		w.Header().Set(HeaderRequestID, id)
	}
	if d.cfg.Name != "" {
		w.Header().Set("X-Dep-Name", d.cfg.Name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(d.body)))
	_, _ = w.Write(d.body)
}
