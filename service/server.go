package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// Defaults of the service (docs/design.md §5), used by the serve command and by
// experiment specs for every setting they leave out.
const (
	DefaultTimeout      = 250 * time.Millisecond
	DefaultPoolSize     = 20
	DefaultQueue        = 20
	DefaultConns        = 64
	DefaultMaxBodyBytes = 1 << 20
)

// Endpoint is one endpoint of the service: GET /<Name> calls the dependency
// at URL, holding a permit of its pool for the whole call.
type Endpoint struct {
	// Name is the path segment and, in bulkhead mode, the pool name (unless
	// the endpoint is in a pool group: LayoutConfig.Groups).
	Name string
	// URL is the absolute http(s) URL of the dependency, called with GET;
	// with Query, a PostgreSQL connection URL (postgres://...).
	URL string
	// Query, when set, makes the dependency a database: each call runs it
	// at URL through database/sql with the pgx driver and reads every row
	// (see dbdependency.go).
	Query string
}

// TwoEndpoints returns the default endpoints: /a calls depA and /b calls depB.
func TwoEndpoints(depA, depB string) []Endpoint {
	return []Endpoint{{Name: EndpointA, URL: depA}, {Name: EndpointB, URL: depB}}
}

// endpointNameRE is what an endpoint name may be: it is a URL path segment,
// a pool name and a metric label value.
var endpointNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// ValidateEndpointName reports whether name can name an endpoint: it is a
// URL path segment, a pool name and a metric label value.
func ValidateEndpointName(name string) error { return validateName("endpoint", name) }

// validateName applies the rules of an endpoint's name to a name of the
// given kind ("endpoint", "pool group"): a pool group's name is a pool name
// and a metric label value too.
func validateName(kind, name string) error {
	switch {
	case !endpointNameRE.MatchString(name):
		return fmt.Errorf("%s name %q: use 1–32 of a-z, 0-9, '_', '-', starting with a letter or digit", kind, name)
	case name == "healthz" || name == "metrics":
		return fmt.Errorf("%s name %q is reserved", kind, name)
	}
	return nil
}

// Config configures the service. Errors from New and Validate are
// *ConfigError naming the field.
type Config struct {
	// Layout is the pool layout (shared or bulkhead).
	Layout LayoutConfig
	// Timeout is T, the deadline of each dependency call (required).
	Timeout time.Duration
	// ConnsLayout is how the dependencies' connections are pooled; the
	// zero value means ConnsPerDependency.
	ConnsLayout ConnsLayout
	// Conns bounds the connection pools: each dependency's with
	// ConnsPerDependency, all dependencies together with ConnsShared. A
	// call holds a slot from sending its request until the response body is
	// closed; each dependency's http.Transport keeps up to Conns
	// connections (MaxConnsPerHost, MaxIdleConnsPerHost). Zero means
	// DefaultConns.
	Conns int
	// Endpoints are the service's endpoints, in order (at least one).
	Endpoints []Endpoint
	// MaxBodyBytes caps a dependency's body: a longer one fails the call
	// (502, ErrBodyTooLarge) instead of being truncated. Zero means
	// DefaultMaxBodyBytes. A JSON body (application/json or +json) is
	// decoded and answered with a small summary; any other is relayed.
	MaxBodyBytes int64

	// Policies are the policy stacks of the endpoints that have one, keyed
	// by endpoint name (see PolicyConfig); an endpoint without one holds a
	// permit of its pool for the call under T, as it always did.
	Policies map[string]PolicyConfig

	// GOMAXPROCS, when positive, is how many CPUs the service's process may
	// run Go code on at once: the serve command sets runtime.GOMAXPROCS to
	// it before serving, so that the service's CPU, not the machine's, is
	// the bounded resource. A service built in-process (tests) does not
	// change its host process's setting. Zero leaves the runtime's default.
	GOMAXPROCS int

	// BurnCPU is a deliberate TEST FAULT, never for real use: Serve keeps
	// this many goroutines spinning, so the service (and the machine) is
	// starved and a run against it must come out INVALID, not as evidence.
	BurnCPU int

	// Tenants, when set, is the tenant stage: which tenant a request is of
	// (a header) and how much of the service one tenant may hold (shared,
	// partitioned or a fair share with a cap). Nil: no tenant stage.
	Tenants *TenantConfig
	// Priority, when set, is the priority stage: each request's class
	// (critical or sheddable) and the permits of each pool reserved for
	// critical calls. Nil: no priority stage.
	Priority *PriorityConfig
	// Jobs, when set, is the in-process job queue (POST /jobs) and where
	// its jobs run: on the request pools or on workers of their own. Nil:
	// no job queue.
	Jobs *JobsConfig

	// RequestStateBytes is the state each dependency call holds from its
	// start to its return (a request's memory while it awaits its
	// dependency), allocated and written so that it is resident. Zero:
	// none. At most MaxRequestStateBytes.
	RequestStateBytes int
	// MaxHeapBytes, when positive, is a hard ceiling on the service's heap:
	// at or past it every request is refused at once (503,
	// X-Bulkhead-Reject: heap) rather than allocate more. Zero: none.
	MaxHeapBytes int64

	// Defects are deliberate TEST DEFECTS, never for real use: bugs of the
	// kind a real service has (a permit leaked on an error path, a pool
	// counter that is not atomic), so that the harness's detectors can be
	// shown to fail against them. See Defect for where each acts. Each may
	// be given once; none is the correct service.
	Defects []Defect
}

// EndpointNames returns the names of c's endpoints in order.
func (c Config) EndpointNames() []string {
	out := make([]string, len(c.Endpoints))
	for i, e := range c.Endpoints {
		out[i] = e.Name
	}
	return out
}

// Validate reports the first invalid field of c, layout included, as a
// *ConfigError.
func (c Config) Validate() error {
	switch {
	case c.Timeout <= 0:
		return fieldErrorf("timeout", "must be positive, got %v", c.Timeout)
	case c.Conns < 0:
		return fieldErrorf("conns", "must be positive, got %d", c.Conns)
	case c.MaxBodyBytes < 0:
		return fieldErrorf("max_body_bytes", "must not be negative, got %d", c.MaxBodyBytes)
	case len(c.Endpoints) == 0:
		return fieldErrorf("endpoints", "at least one endpoint is required")
	case c.GOMAXPROCS < 0 || c.GOMAXPROCS > 1024:
		return fieldErrorf("gomaxprocs", "must be between 0 and 1024, got %d", c.GOMAXPROCS)
	case c.BurnCPU < 0 || c.BurnCPU > 64:
		return fieldErrorf("burn_cpu", "must be between 0 and 64, got %d", c.BurnCPU)
	case c.RequestStateBytes < 0 || c.RequestStateBytes > MaxRequestStateBytes:
		return fieldErrorf("request_state_bytes", "must be between 0 and %d, got %d", MaxRequestStateBytes, c.RequestStateBytes)
	case c.MaxHeapBytes < 0:
		return fieldErrorf("max_heap", "must not be negative, got %d", c.MaxHeapBytes)
	}
	if c.ConnsLayout != "" {
		if _, err := ParseConnsLayout(string(c.ConnsLayout)); err != nil {
			return err
		}
	}
	if err := validateDefects(c.Defects); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range c.Endpoints {
		field := "endpoints." + e.Name
		if err := ValidateEndpointName(e.Name); err != nil {
			return fieldErrorf("endpoints", "%v", err)
		}
		if seen[e.Name] {
			return fieldErrorf(field, "duplicate endpoint")
		}
		seen[e.Name] = true
		validate := ValidateURL
		if e.Query != "" {
			validate = ValidateDatabaseURL
		}
		if err := validate(e.URL); err != nil {
			return fieldErrorf(field, "%v", err)
		}
	}
	pools, err := c.Layout.Pools(c.EndpointNames())
	if err != nil {
		return err
	}
	if c.Tenants != nil {
		if err := c.Tenants.validate(pools); err != nil {
			return err
		}
	}
	if c.Priority != nil {
		if err := c.Priority.validate(c.EndpointNames(), pools); err != nil {
			return err
		}
	}
	if c.Jobs != nil {
		if err := c.Jobs.validate(c.EndpointNames(), pools); err != nil {
			return err
		}
	}
	return c.validatePolicies()
}

// ValidateURL checks that s is an absolute http or https URL with a host.
func ValidateURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return errors.New("URL is required")
	case err != nil:
		return fmt.Errorf("malformed URL %q: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("URL %q must start with http:// or https://", s)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("URL %q has no host", s)
	}
	return nil
}

// Service is the system under test: each endpoint calls its dependency,
// holding a permit from its pool for the whole call (by default /a calls
// dependency A and /b calls B). It is safe for
// concurrent use. Build it with New, serve it with Handler or Serve, and
// Close it when done.
type Service struct {
	cfg       Config
	layout    *Layout
	connPools []*connPool
	deps      map[string]*dependency
	registry  *prometheus.Registry
	handler   http.Handler
	metrics   serviceMetrics
	stacks    map[string]*stack
	tenants   *tenantStage
	priority  *priorityStage
	heapGuard *heapGuard
	jobs      *jobRunner
	defects   defectSet
	idPrefix  string
	nextID    atomic.Uint64
}

// New validates cfg and builds the service, its pools, transports and
// metrics registry. It starts no goroutines (job workers start as jobs are
// queued, and end when the queue is empty).
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Conns == 0 {
		cfg.Conns = DefaultConns
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	layout, err := NewLayout(cfg.Layout, cfg.EndpointNames())
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg:      cfg,
		layout:   layout,
		registry: prometheus.NewRegistry(),
		metrics:  newServiceMetrics(),
		defects:  newDefectSet(cfg.Defects),
		idPrefix: strconv.FormatInt(time.Now().UnixNano(), 36),
	}
	if s.defects.racyCounter {
		for _, p := range layout.Pools() {
			p.racy = true // TEST DEFECT, before any use
		}
	}
	pools, connsOf := newConnPools(cfg.ConnsLayout, cfg.Conns, cfg.EndpointNames())
	s.connPools = pools
	connWait, decode := newConnWaitMetrics(), newDecodeMetrics()
	s.deps = map[string]*dependency{}
	mem := &callMemory{stateBytes: cfg.RequestStateBytes, inState: s.metrics.stateBytes}
	for _, e := range cfg.Endpoints {
		d := newDependency(e.Name, e.URL, cfg.Conns, connsOf[e.Name], connWait, decode)
		d.inflight, d.mem = s.metrics.depInflight.WithLabelValues(e.Name), mem
		if e.Query != "" {
			if d.db, err = openDB(e.URL, cfg.Conns); err != nil {
				s.Shutdown()
				return nil, fieldErrorf("endpoints."+e.Name, "%v", err)
			}
			d.query = e.Query
			s.registry.MustRegister(collectors.NewDBStatsCollector(d.db, e.Name))
		}
		s.deps[e.Name] = d
	}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), runtimestats.NewCollector())
	s.metrics.register(s.registry, cfg.EndpointNames())
	connWait.register(s.registry, cfg.EndpointNames())
	decode.register(s.registry, cfg.EndpointNames())
	for _, p := range pools {
		s.registry.MustRegister(p)
	}
	s.buildStacks()
	if cfg.Tenants != nil {
		s.tenants = newTenantStage(*cfg.Tenants, s.registry)
	}
	if cfg.Layout.Mode == ModeRateLimit {
		s.registry.MustRegister(newRateMetrics(layout, cfg.EndpointNames()))
	}
	if cfg.MaxHeapBytes > 0 {
		s.heapGuard = newHeapGuard(cfg.MaxHeapBytes, s.registry)
	} else {
		s.registry.MustRegister(heapObjectsGauge()) // the guard exports it with its ceiling
	}
	if cfg.Priority != nil {
		s.priority = newPriorityStage(*cfg.Priority, layout, cfg.EndpointNames(), s.registry)
	}
	mux := http.NewServeMux()
	for _, e := range cfg.Endpoints {
		mux.Handle("GET /"+e.Name, s.endpoint(e.Name))
	}
	if cfg.Jobs != nil {
		s.jobs = newJobRunner(s, *cfg.Jobs, s.registry)
		mux.HandleFunc("POST /jobs", s.jobs.handle)
	}
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	s.handler = mux
	return s, nil
}

// Handler returns the service's HTTP handler (one path per endpoint,
// /healthz, /metrics).
func (s *Service) Handler() http.Handler { return s.handler }

// Layout returns the service's pools.
func (s *Service) Layout() *Layout { return s.layout }

// Registry returns the service's own Prometheus registry.
func (s *Service) Registry() *prometheus.Registry { return s.registry }

// Serve serves the service on ln until ctx ends, then shuts down
// gracefully within ShutdownTimeout and closes the dependency transports'
// idle connections. It returns nil after a shutdown caused by ctx. Its job
// queue, if any, is stopped when it returns (see Shutdown).
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	defer s.Close()
	if s.jobs != nil {
		defer s.jobs.stop()
	}
	var burners sync.WaitGroup
	for range s.cfg.BurnCPU {
		burners.Go(func() { burn(ctx) })
	}
	defer burners.Wait()
	// A response takes at most a queue wait and the dependency call.
	return ServeHTTP(ctx, ln, s.handler, s.cfg.Layout.MaxWait+s.cfg.Timeout+ReadTimeout)
}

// burn spins until ctx ends (the BurnCPU test fault).
func burn(ctx context.Context) {
	for x := uint64(1); ctx.Err() == nil; {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x == 0 {
			runtime.Gosched() // never: keeps x alive
		}
	}
}

// Close releases idle dependency connections. The service stays usable.
func (s *Service) Close() {
	for _, d := range s.deps {
		d.transport.CloseIdleConnections()
		if d.db != nil {
			// database/sql closes the idle connections beyond the new
			// limit; the old one is put back.
			d.db.SetMaxIdleConns(0)
			d.db.SetMaxIdleConns(s.cfg.Conns)
		}
	}
}

// Shutdown closes the databases of the database dependencies and stops
// the job queue (queued jobs are dropped, running ones cancelled, and later
// POST /jobs refused): the service cannot call them after it. Idempotent.
func (s *Service) Shutdown() {
	if s.jobs != nil {
		s.jobs.stop()
	}
	for _, d := range s.deps {
		if d.db != nil {
			d.db.Close()
		}
	}
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// endpoint serves one endpoint: its admission stages, then its pool and
// dependency call (or its policy stack).
func (s *Service) endpoint(name string) http.Handler {
	if st := s.stacks[name]; st != nil {
		return s.admit(name, s.stackEndpoint(name, st))
	}
	return s.admit(name, s.poolEndpoint(name))
}

// poolEndpoint holds a permit of the endpoint's pool for its dependency
// call.
func (s *Service) poolEndpoint(name string) http.Handler {
	pool, lim, dep := s.layout.Pool(name), s.layout.limiter(name), s.deps[name]
	inflight := s.metrics.inflight.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Inc()
		defer inflight.Dec()
		id := r.Header.Get(rundata.HeaderRequestID)
		if id == "" {
			id = s.idPrefix + "-" + strconv.FormatUint(s.nextID.Add(1), 10)
		}
		w.Header().Set(rundata.HeaderRequestID, id)

		if lim != nil {
			if err := lim.acquire(r.Context()); err != nil {
				writeRateRefusal(w, name, err)
				return
			}
		}
		var permit Permit // none without a pool: nothing bounds the calls
		if pool != nil {
			var err error
			if permit, err = pool.Acquire(r.Context()); err != nil {
				writeRejection(w, pool.Name(), err)
				return
			}
		}
		// Held for the whole call; released on every path, panics included,
		// unless a leak defect drops it below.
		defer func() { permit.Release() }()

		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		res := dep.call(ctx, id, s.cfg.MaxBodyBytes)
		if s.defects.leaks(res.outcome) {
			permit = Permit{} // TEST DEFECT: the permit is never released
		}
		s.metrics.observe(name, res)
		writeResult(w, res)
	})
}

// errorBody is the JSON body of every non-200 answer of an endpoint.
type errorBody struct {
	Error  string `json:"error"`
	Pool   string `json:"pool,omitempty"`
	Reason string `json:"reason"`
}

// writeRejection maps a pool error to 503. This handler is the only place
// where sentinels become status codes.
func writeRejection(w http.ResponseWriter, pool string, err error) {
	body := errorBody{Error: err.Error(), Pool: pool}
	switch {
	case errors.Is(err, ErrFull):
		body.Reason = "full"
		w.Header().Set(rundata.HeaderBulkheadReject, "full")
	case errors.Is(err, ErrWaitTimeout):
		body.Reason = "wait-timeout"
		w.Header().Set(rundata.HeaderBulkheadReject, "wait-timeout")
	default: // ErrCancelled: the client is gone; nobody reads this
		body.Reason = "cancelled"
	}
	writeJSON(w, http.StatusServiceUnavailable, body)
}

func writeResult(w http.ResponseWriter, res callResult) {
	switch res.outcome {
	case outcomeOK:
		if res.contentType != "" {
			w.Header().Set("Content-Type", res.contentType)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(res.body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(res.body)
	case outcomeTimeout:
		w.Header().Set(rundata.HeaderDependencyError, "timeout")
		writeJSON(w, http.StatusGatewayTimeout, errorBody{Error: res.err.Error(), Reason: "timeout"})
	default:
		w.Header().Set(rundata.HeaderDependencyError, "error")
		writeJSON(w, http.StatusBadGateway, errorBody{Error: res.err.Error(), Reason: "error"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
