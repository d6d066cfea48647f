package spec

import (
	"gopkg.in/yaml.v3"
	"net/http"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Spec is one experiment: the service, its dependencies, the load, the
// phases and the matrix of conditions × modes × repeats (docs/design.md §1–§5).
// Load decodes it strictly; Resolve fills defaults and turns relative
// durations into absolute ones. A Spec is not safe for concurrent mutation;
// a resolved Spec may be read concurrently.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Seed seeds every random source of the experiment; each run derives
	// its own seed from it (Run.Seed).
	Seed int64 `yaml:"seed"`
	// Repeats is how many times the matrix is run, interleaved (default 1).
	// In YAML `repeats: auto` (with `max_repeats: N`, default 10) sets
	// Repeats to N and AutoRepeats.
	Repeats int `yaml:"repeats"`
	// AutoRepeats stops after a round (from the MinRepeatsForCI-th on) once
	// every checked verdict is clear of its threshold; Repeats is then the
	// most rounds run.
	AutoRepeats bool `yaml:"auto_repeats,omitempty"`

	Service Service `yaml:"service"`
	// Endpoints are the service's endpoints and the dependency each calls,
	// in order. Default: /a calls A and /b calls B.
	Endpoints []Endpoint `yaml:"endpoints"`
	// Dependencies maps a dependency name to its normal behaviour; every
	// dependency an endpoint calls has one (defaults when not written).
	Dependencies map[string]Dependency `yaml:"dependencies"`
	Load         LoadSpec              `yaml:"load"`
	Phases       Phases                `yaml:"phases"`
	// Conditions default to healthy, slow, failing, busy.
	Conditions []Condition `yaml:"conditions"`
	// Modes default to shared, bulkhead.
	Modes        []Mode               `yaml:"modes"`
	Expectations rundata.Expectations `yaml:"expectations"`
	// Validity holds the rules a run must pass to count as evidence.
	Validity Validity `yaml:"validity"`
	// External, when set, points the load at the user's own service.
	External *External `yaml:"external,omitempty"`
	// Sweep lists swept fields (see Sweep); in YAML one mapping or a list.
	Sweep []Sweep `yaml:"sweep,omitempty"`
	// Audit, when set, makes the spec a blast-radius audit (audit.go).
	Audit *rundata.Audit `yaml:"audit,omitempty"`

	file  string         // the file name used in error messages
	lines map[string]int // field path → line, from decoding
	sweep *sweepInfo     // set when Sweep is: the base and the points
	// rolesWhy says where the victim and the culprit come from (roles.go).
	rolesWhy string
}

// Validity holds the rules that make a run valid: the harness must show
// that it measured the system under test and not the machine. A run that
// fails one is INVALID, no verdict uses it, and it is run again.
type Validity struct {
	// CanaryRate is the rate, per second, of the canary: a request that
	// does no work (the service's /healthz, or external.canary), sent in
	// every phase. Its latency is the run's noise floor. 0 turns it off.
	CanaryRate *float64 `yaml:"canary_rate"`
	// CanaryMaxP99 is the largest canary p99 a judged phase may have
	// (default 0.1T: a tenth of the smallest effect the verdicts judge in
	// units of T is 0.25 T).
	CanaryMaxP99 Duration `yaml:"canary_max_p99"`
	// MaxLagP99 is the largest schedule-lag p99 of the load generator in a
	// judged phase.
	MaxLagP99 Duration `yaml:"max_lag_p99"`
	// BaselineMinSuccess is the smallest share of ok results every endpoint
	// needs in the baseline phase; BaselineMaxUnreachable the largest share
	// of results that got no answer (transport errors, client timeouts).
	BaselineMinSuccess     *float64 `yaml:"baseline_min_success"`
	BaselineMaxUnreachable *float64 `yaml:"baseline_max_unreachable"`
	// BaselineMaxP50Ratio is how much slower the first half of the
	// baseline may be than its second half (median of the windows' p50,
	// and more than 1 ms apart) before the run is INVALID with "warm-up
	// too short"; a success share 2 points lower fails it too. 0 turns the
	// check off.
	BaselineMaxP50Ratio *float64 `yaml:"baseline_max_p50_ratio"`
	// Retries is how many more times an INVALID run is run, at the end of
	// its round.
	Retries *int `yaml:"retries"`
	// MaxServiceMemory is the memory guard's ceiling: when the resident
	// memory of the service's processes (the built-in service's, or your
	// own started by external.start) reaches it, the runner kills them and
	// stops the run, recorded as stopped (not INVALID, not run again).
	// Default: half of the machine's memory (nolayout.go).
	MaxServiceMemory MemorySize `yaml:"max_service_memory,omitempty"`
}

// Service is the service under test (docs/design.md §1, §4).
type Service struct {
	// Timeout is T, the service→dependency timeout (absolute only).
	Timeout Duration `yaml:"timeout"`
	// PoolSize is P: the shared pool, or the total split evenly among a
	// bulkhead mode's pools (P/2 + P/2 for two endpoints).
	PoolSize int `yaml:"pool_size"`
	// Queue is the shared pool's queue; a bulkhead mode splits it among its
	// pools like PoolSize unless the mode sets them. Nil means 20.
	Queue *int `yaml:"queue"`
	// MaxWait is the longest a caller waits in a queue (default T).
	MaxWait Duration `yaml:"max_wait"`
	// Conns bounds the service's HTTP connections: per dependency, or K in
	// all when ConnsLayout is shared.
	Conns int `yaml:"conns"`
	// ConnsLayout is how the connections are pooled: "per-dependency" (a
	// pool of Conns per dependency; empty means this) or "shared" (one pool
	// of Conns for every dependency: a call waits for a connection while
	// the others hold them, whatever its own bulkhead allows).
	ConnsLayout string `yaml:"conns_layout,omitempty"`
	// GOMAXPROCS, if set, is how many CPUs the service may run Go code on
	// at once (the child's runtime.GOMAXPROCS): with it, the service's own
	// CPU, not the whole machine shared with the load generator, is the
	// bounded resource (default 0: the runtime's default).
	GOMAXPROCS int `yaml:"gomaxprocs,omitempty"`
	// Instances is how many processes of the service run side by side (a
	// fleet), each with its own pools, all calling the same proxies; the
	// load generator sends each endpoint's requests to them in turn. 0 (not
	// written) is 1.
	Instances int `yaml:"instances,omitempty"`
	// Defects are deliberate TEST DEFECTS of the built-in service, never
	// for real use (service.Defect names: leak-on-error, leak-on-timeout,
	// leak-on-cancel, racy-counter), so that a detector can be shown to
	// fail against a service with the bug it looks for.
	Defects []string `yaml:"defects,omitempty"`
	// RequestStateBytes is the memory each dependency call of the built-in
	// service holds until it returns (a request's state while it awaits
	// its dependency; default 0: none), so that calls in flight cost
	// memory as they do on an event-loop runtime (nolayout.go).
	RequestStateBytes ByteSize `yaml:"request_state_bytes,omitempty"`
}

// Endpoint is one endpoint of the service: GET /<Name> calls Dependency.
// It is also a load class: the load, the results and the verdicts are per
// endpoint, so two endpoints that differ only by their requests (a tenant's
// header) are two classes of the same calls (see Path).
type Endpoint struct {
	Name       string `yaml:"name"`
	Dependency string `yaml:"dependency"`
	// Path, for the built-in service, is the path segment its requests go
	// to, GET /<Path> (default: Name). Endpoints that share a path are one
	// endpoint of the service, with one pool in bulkhead mode (named by the
	// path), and must call the same dependency: load classes of the same
	// calls that differ by their headers (tenants.go). A service of your
	// own is reached at its external.targets instead.
	Path string `yaml:"path,omitempty"`
	// Query, for an endpoint whose dependency is a PostgreSQL server of
	// the run's own (protocol: postgres), is the SQL each call runs
	// (postgres.go).
	Query string `yaml:"query,omitempty"`
	// Method, Headers and Body are the endpoint's requests (default: GET,
	// no body): a user's endpoint that takes a POST with a JSON body.
	Method  string            `yaml:"method,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	Body    string            `yaml:"body,omitempty"`
}

// request is what e's requests carry: its method (empty: GET), headers
// and body.
func (e Endpoint) request() (string, http.Header, []byte) {
	var h http.Header
	for k, v := range e.Headers {
		if h == nil {
			h = http.Header{}
		}
		h.Set(k, v)
	}
	var body []byte
	if e.Body != "" {
		body = []byte(e.Body)
	}
	return e.Method, h, body
}

// Dependency is one stub's normal behaviour.
type Dependency struct {
	Latency Duration `yaml:"latency"`
	Jitter  Duration `yaml:"jitter"`
	// Size is the response body size in bytes (default 64).
	Size int `yaml:"size"`
	// Capacity is how many requests the stub serves at once; the others
	// wait for a slot, in arrival order (default 0: unlimited).
	Capacity int `yaml:"capacity,omitempty"`
	// Queue is how many may wait for a slot, beyond which the stub answers
	// 503 (default 0: up to service.MaxDepQueue); only with a capacity.
	Queue int `yaml:"queue,omitempty"`
	// Payload, if set, makes the stub answer a JSON document of about this
	// many bytes (an array of small records, seeded) instead of Size bytes
	// of text; the service decodes it (default 0: off).
	Payload ByteSize `yaml:"payload,omitempty"`
	// Protocol is how the dependency is reached: "http" (the default),
	// "tcp" (any TCP protocol, through the fault proxy's TCP plane; an
	// external upstream only, see tcp.go) or "postgres" (a PostgreSQL
	// server, faults per query; an external upstream only, postgres.go).
	Protocol string `yaml:"protocol,omitempty"`
	// Setup, for a PostgreSQL dependency of the built-in service
	// (protocol: postgres without external mode), is SQL run once the
	// server the run starts accepts connections: its tables and rows.
	Setup string `yaml:"setup,omitempty"`
	// Classes split the dependency's calls (classes.go): for a PostgreSQL
	// dependency, statement classes, name → RE2 on the statement text; for
	// an HTTP one, route classes, name → a route on the request's method
	// and path ("GET ^/reports/"). Its proxy counts the calls of each, the
	// audit's calibration measures which classes each endpoint calls, and
	// an audit faults each class in turn.
	Classes map[string]string `yaml:"classes,omitempty"`
}

// Rates are requests per second, keyed by endpoint name.
type Rates map[string]float64

// LoadSpec is the open-model load.
type LoadSpec struct {
	// Rates default to DefaultRate for every endpoint not named.
	Rates Rates `yaml:"rates"`
	// ClientTimeout is the load generator's timeout (default 2·(T+max wait)).
	ClientTimeout Duration `yaml:"client_timeout"`
	// Window is the recording window (default 250ms).
	Window Duration `yaml:"window"`
	// Arrivals is the arrival process of every endpoint: "constant"
	// (evenly spaced, the default) or "poisson" (seeded exponential
	// inter-arrival times; still open-model).
	Arrivals string `yaml:"arrivals,omitempty"`
	// Lockstep, for constant arrivals, starts every endpoint's schedule at
	// the same instant, as versions before offsets did. By default each
	// endpoint's schedule is shifted by a seeded random fraction of its
	// interval, so that the streams are not phase-locked.
	Lockstep bool `yaml:"lockstep,omitempty"`
	// Clients is how the clients behave (e.g. retry); a mode may replace it.
	Clients *Clients `yaml:"clients,omitempty"`
	// Probe, if set, adds a probe phase before the baseline and one after
	// the recovery: the endpoints' load pauses and each endpoint in turn
	// gets a burst of requests at one instant, so that the proxies see the
	// limits on the calls to each dependency before and after the fault.
	Probe *Probe `yaml:"probe,omitempty"`
}

// Probe is load.probe: one burst per endpoint in each probe phase.
type Probe struct {
	// Requests per burst (0: auto, three times the largest pool's size and
	// queue, at least 50; 100 for a user's service without declared pools).
	Requests int `yaml:"requests,omitempty"`
	// Latency is added by every proxy during the probe phases, so that the
	// calls of a burst overlap (default 0.25T).
	Latency Duration `yaml:"latency,omitempty"`
}

// Phases are the four phase lengths of every run.
type Phases struct {
	Warmup   Duration `yaml:"warmup"`
	Baseline Duration `yaml:"baseline"`
	Fault    Duration `yaml:"fault"`
	Recovery Duration `yaml:"recovery"`
}

// Condition is one row of the matrix: what happens during the fault phase.
// In YAML it is either a built-in name ("slow") or a mapping; a mapping
// named like a built-in with no faults and no rates is that built-in.
type Condition struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Dependency gets the faults (default: the culprit endpoint's).
	Dependency string  `yaml:"dependency,omitempty"`
	Faults     []Fault `yaml:"faults,omitempty"`
	// Rates override load.rates during the fault phase, per endpoint named.
	Rates Rates `yaml:"rates,omitempty"`
	// Cancel, if set, makes clients give up on a share of their requests
	// mid-call during the fault phase.
	Cancel *CancelSpec `yaml:"cancel,omitempty"`
	// Bursts, if set, sends bursts of requests at one instant during the
	// fault phase, on top of the endpoints' load.
	Bursts *BurstSpec `yaml:"bursts,omitempty"`
	// Jobs, if set, enqueues a burst of jobs on the built-in service's job
	// queue during the fault phase, drained beside the live traffic by the
	// workers each mode's jobs stage gives it (jobs.go).
	Jobs *JobsBurst `yaml:"jobs,omitempty"`
}

// Mode is one column of the matrix. In YAML it is "shared", "bulkhead" or a
// mapping {name: bulkhead, pool_sizes: {a: 2, b: 8}, queues: {a: 2, b: 8}},
// or a named policy layout {name: shared-breaker, pools: shared,
// policies: {A: {breaker: ...}}}, or a bulkhead whose pools some endpoints
// share {name: core, pools: bulkhead, pool_groups: {core: [checkout, cart]}}.
type Mode struct {
	Name string `yaml:"name"`
	// PoolSizes and Queues size each bulkhead, keyed by pool name: an
	// endpoint's, or a pool group's for the endpoints of a group.
	PoolSizes map[string]int `yaml:"pool_sizes,omitempty"`
	Queues    map[string]int `yaml:"queues,omitempty"`
	// PoolGroups, in a mode whose layout is bulkhead, maps a pool name to
	// the endpoints that share that pool (core: [checkout, cart]): a slow
	// dependency of one of them takes the others down with it, and no
	// endpoint outside the group. Every other endpoint keeps a pool of its
	// own; service.pool_size and service.queue are split among the pools.
	// A group's name follows an endpoint name's rules and is no other
	// endpoint's name; each endpoint is in at most one group
	// (service.LayoutConfig.Groups).
	PoolGroups map[string][]string `yaml:"pool_groups,omitempty"`
	// External, in an external spec, is the user's service configured as
	// this mode: its own targets (a deployment side by side with the
	// others) or its own start command; fields left out are the external
	// section's.
	External *ExternalService `yaml:"external,omitempty"`
	// Pools is the layout of a mode of your own name: shared, bulkhead,
	// unbounded (no pool: nothing bounds the calls in flight) or ratelimit
	// (no pool: a rate limiter per dependency, Rates); the built-in modes
	// are their own layout.
	Pools string `yaml:"pools,omitempty"`
	// Policies are policy stacks keyed by dependency name (see Policy).
	Policies map[string]Policy `yaml:"policies,omitempty"`
	// Clients, if set, replaces load.clients for this mode's runs.
	Clients *Clients `yaml:"clients,omitempty"`
	// ConnsLayout and Conns, if set, replace service.conns_layout and
	// service.conns in this mode: modes that differ in their connection
	// pools (a bulkhead with and without a wall between connections).
	ConnsLayout string `yaml:"conns_layout,omitempty"`
	Conns       int    `yaml:"conns,omitempty"`
	// Instances, if set, replaces service.instances in this mode: fleets
	// of different sizes side by side, or a sweep over them.
	Instances int `yaml:"instances,omitempty"`
	// Defects, if set, replace service.defects in this mode: the correct
	// service and a defective one side by side.
	Defects []string `yaml:"defects,omitempty"`
	// Priority, if set, is the built-in service's priority stage in this
	// mode: each endpoint's class and the permits of a pool reserved for
	// the critical class (priority.go).
	Priority *Priority `yaml:"priority,omitempty"`
	// Rates, in a mode whose layout is ratelimit, are each endpoint's rate
	// limit in calls per second (service.LayoutConfig.Rates): no pool, a
	// smooth rate limiter per dependency instead (nolayout.go).
	Rates map[string]float64 `yaml:"rates,omitempty"`
	// RequestStateBytes, if set, replaces service.request_state_bytes in
	// this mode.
	RequestStateBytes ByteSize `yaml:"request_state_bytes,omitempty"`
	// Tenants, if set, is the built-in service's tenant stage in this
	// mode: one pool for every tenant (shared), a partition per tenant, or
	// a fair share with a cap (tenants.go).
	Tenants *Tenants `yaml:"tenants,omitempty"`
	// Jobs, if set, is the built-in service's job queue in this mode: its
	// jobs run on the request pools (shared) or on bounded workers of
	// their own (own) (jobs.go).
	Jobs *Jobs `yaml:"jobs,omitempty"`
	// Processes is how many processes the built-in service runs as in
	// this mode: "one" (the default: every endpoint in one process) or
	// "per-endpoint" (a bulkhead layout whose pools are each in a process
	// of their own, on the same host: each endpoint's requests go to its
	// pool's process alone; processes.go).
	Processes string `yaml:"processes,omitempty"`
}

// External runs the load against the user's own service (docs/design.md §2): the
// runner starts the fault proxies, which the user's service must call, and,
// if told how, the service itself.
type External struct {
	// Upstreams are the real dependencies the proxies forward to, by
	// dependency name.
	Upstreams map[string]string `yaml:"upstreams"`
	// Proxies are the fixed loopback listen addresses (host:port) of the
	// proxies, as configured in the user's service, by dependency name.
	Proxies map[string]string `yaml:"proxies"`
	// Rules classify responses (status/header → result class); kept opaque
	// here and decoded by the load generator.
	Rules *yaml.Node `yaml:"rules,omitempty"`
	// Timing, if set, declares which Server-Timing metrics of the service
	// are waits and which work (the report's "Where the time went").
	Timing *ExternalTiming `yaml:"timing,omitempty"`
	// Kubernetes, if set, is how `run --kubernetes` lays the experiment
	// out on a cluster (its flags override it). With it, proxies may be
	// left out: in a cluster each is a Service.
	Kubernetes *KubeLayout `yaml:"kubernetes,omitempty"`
	// ExternalService is how the service is reached (and started) in every
	// mode that does not say otherwise under modes[i].external.
	ExternalService `yaml:",inline"`
}

// KubeLayout is an external experiment's layout on a Kubernetes cluster.
type KubeLayout struct {
	// Replicas is each dependency's proxy Deployment's replicas, by
	// dependency (1 for one not named).
	Replicas map[string]int `yaml:"replicas,omitempty"`
	// Shards is the number of load pods (1 if 0).
	Shards int `yaml:"shards,omitempty"`
}

// MaxKubeReplicas and MaxKubeShards bound a KubeLayout.
const (
	MaxKubeReplicas = 100
	MaxKubeShards   = 1000
)

// ExternalService is one configuration of the user's service: where its
// endpoints are, what it exports, and optionally the command that starts it
// in that configuration. A mode's fields override the external section's,
// field by field.
type ExternalService struct {
	// Targets are the full URLs of the user's endpoints, by endpoint name.
	Targets map[string]string `yaml:"targets,omitempty"`
	// Canary is a URL of the user's service that does no work (a health
	// check), loaded at validity.canary_rate as the run's noise floor.
	Canary string `yaml:"canary,omitempty"`
	// Metrics, if set, is the user's service's Prometheus endpoint and the
	// names of its bulkhead metrics; without it the exhausted resource is
	// not observable.
	Metrics *ExternalMetrics `yaml:"metrics,omitempty"`
	// Pools, if set, declares the service's pools (name, size, the
	// endpoints that draw from each) for Little's-law predictions; without
	// them the pool columns say unknown.
	Pools []ExternalPool `yaml:"pools,omitempty"`
	// Start, if set, is the command (program and arguments, no shell) that
	// starts the service in this configuration. The runner starts it for
	// every run after the proxies, waits until Ready answers 2xx, and stops
	// it (SIGTERM to its process group, then SIGKILL) after the run; its
	// output goes to the run's service.log. It gets the environment
	// BULKHEADLAB_MODE, BULKHEADLAB_RUN and BULKHEADLAB_PROXY_<DEP> (the
	// proxy's host:port) besides Env.
	Start []string `yaml:"start,omitempty"`
	// Ready is the URL polled until it answers 2xx (default: the canary).
	Ready string `yaml:"ready,omitempty"`
	// ReadyTimeout bounds the wait for Ready (default 30s).
	ReadyTimeout Duration `yaml:"ready_timeout,omitempty"`
	// Env adds NAME: value pairs to the command's environment.
	Env map[string]string `yaml:"env,omitempty"`
	// Dir is the command's working directory (default: the runner's).
	Dir string `yaml:"dir,omitempty"`
}

// ExternalMetrics maps a user's bulkhead metrics to the harness's. Each
// name is optional; give in_use or available (free permits) with limit.
type ExternalMetrics struct {
	URL        string `yaml:"url"`
	InUse      string `yaml:"in_use,omitempty"`
	Available  string `yaml:"available,omitempty"`
	Limit      string `yaml:"limit,omitempty"`
	Waiting    string `yaml:"waiting,omitempty"`
	QueueLimit string `yaml:"queue_limit,omitempty"`
	Rejected   string `yaml:"rejected,omitempty"`
	// PoolLabel is the label that names the pool (default "pool").
	PoolLabel string `yaml:"pool_label,omitempty"`
	// Conns maps the service's connection pools, if it exports them
	// (HikariCP's hikaricp_connections_{active,max,pending}, a database/sql
	// collector's in-use and max-open gauges), so that the exhausted
	// resource ranks its connections as measured, not inferred.
	Conns *ExternalConnMetrics `yaml:"conns,omitempty"`
}

// ExternalConnMetrics maps a user's connection-pool gauges to the
// harness's: in_use and limit are required, waiting (callers waiting for a
// connection) is optional.
type ExternalConnMetrics struct {
	InUse   string `yaml:"in_use"`
	Limit   string `yaml:"limit"`
	Waiting string `yaml:"waiting,omitempty"`
	// PoolLabel is the label that names the pool (default "pool").
	PoolLabel string `yaml:"pool_label,omitempty"`
}

// ExternalPool is one pool of a user's service.
type ExternalPool struct {
	Name      string   `yaml:"name"`
	Size      int      `yaml:"size"`
	Queue     int      `yaml:"queue,omitempty"`
	Endpoints []string `yaml:"endpoints"`
}

// Built-in condition and mode names.
const (
	CondHealthy = "healthy"
	CondSlow    = "slow"
	CondFailing = "failing"
	CondBusy    = "busy"
	// The error paths of the leak hunt: A resets every connection, A never
	// answers (the service's timeout fires), and A slow while the clients
	// give up mid-request; and a healthy A under bursts of requests.
	CondReset    = "reset"
	CondHang     = "hang"
	CondCancel   = "cancel"
	CondSpike    = "spike"
	ModeShared   = "shared"
	ModeBulkhead = "bulkhead"
)

// setScalar lets a condition be written as its name.
func (c *Condition) setScalar(s string) error { c.Name = s; return nil }

// setScalar lets a mode be written as its name.
func (m *Mode) setScalar(s string) error { m.Name = s; return nil }

// File returns the file name the spec was loaded from.
func (s *Spec) File() string { return s.file }
