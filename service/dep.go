package service

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/payload"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
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
	// Size is the response body length in bytes (of "x"s, text/plain);
	// ignored when Payload is set.
	Size int
	// Payload, when positive, makes every answer a JSON document of about
	// Payload bytes (payload.JSON: an array of small records, built once
	// from Seed; Content-Type application/json) instead of Size bytes of
	// text, so that a caller that decodes it spends CPU and GC on it. At
	// most payload.Max.
	Payload int
	// Capacity is the most requests the stub serves at once: with
	// Capacity C, a request waits, in arrival order, until fewer than C are
	// being served, and its Latency±Jitter starts only then (an M/G/c
	// server: latency grows with concurrency). Zero means unlimited: every
	// request is served at once.
	Capacity int
	// Queue is the most requests that may wait for a slot; one arriving
	// beyond it is answered 503 with X-Dep-Overloaded at once. Zero means
	// MaxDepQueue. It must be zero when Capacity is.
	Queue int
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
	case c.Payload < 0 || c.Payload > payload.Max:
		return fieldErrorf("payload", "must be between 0 and %d bytes, got %d", payload.Max, c.Payload)
	}
	return c.validateCapacity()
}

// Dep is a dependency stub: every request other than /healthz and /metrics
// waits Latency±Jitter (returning early, with no body, if the caller goes
// away) and answers 200 with Size bytes (or its Payload), echoing
// X-Request-Id. With a
// Capacity, a request first waits for a slot (see DepConfig.Capacity). It
// is safe for concurrent use.
type Dep struct {
	cfg      DepConfig
	body     []byte
	ctype    string
	mu       sync.Mutex
	rng      *rand.Rand // guarded by mu
	registry *prometheus.Registry
	requests prometheus.Counter
	inflight atomic.Int64
	slots    *Pool // nil: unlimited capacity
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
		ctype:    "text/plain; charset=utf-8",
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x6465700a)),
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bulkheadlab_dep_requests_total", Help: "Requests received by the stub."}),
	}
	if cfg.Payload > 0 {
		d.body, d.ctype = payload.JSON(cfg.Payload, cfg.Seed), payload.ContentType
	}
	if cfg.Capacity > 0 {
		slots, err := NewPool("dep", PoolConfig{Size: cfg.Capacity, Queue: cfg.queueLimit(), MaxWait: MaxDepQueueWait})
		if err != nil {
			return nil, err
		}
		d.slots = slots
	}
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bulkheadlab_dep_inflight_requests", Help: "Requests in the stub: waiting for a slot or being served."},
		func() float64 { return float64(d.inflight.Load()) })
	d.registry.MustRegister(d.requests, inflight, newDepCapacityCollector(d),
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
	longest := d.cfg.Latency + d.cfg.Jitter + ReadTimeout
	if d.slots != nil {
		longest += MaxDepQueueWait
	}
	return ServeHTTP(ctx, ln, d.handler, longest)
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
	d.inflight.Add(1)
	defer d.inflight.Add(-1)
	if d.slots != nil {
		pm, err := d.slots.Acquire(r.Context())
		if err != nil {
			overloaded(w, err)
			return
		}
		defer pm.Release() // after the answer is written: serving it is service time
	}
	if delay := d.delay(); delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return // the caller is gone: stop waiting
		}
	}
	if id := r.Header.Get(rundata.HeaderRequestID); id != "" {
		w.Header().Set(rundata.HeaderRequestID, id)
	}
	if d.cfg.Name != "" {
		w.Header().Set(rundata.HeaderDepName, d.cfg.Name)
	}
	w.Header().Set("Content-Type", d.ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(d.body)))
	_, _ = w.Write(d.body)
}
