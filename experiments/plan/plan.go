// Package plan is the typed description of an experiment that the spec
// produces and the runner executes: for every run of the matrix, the
// components to start (dependency stubs, fault proxies, the service, with
// their configurations and how they are wired together), the load (targets,
// rates per phase, classification rules), the faults to switch, and the run
// metadata known in advance. Launchers start components from it without
// knowing what an endpoint or a dependency is called; a third endpoint or a
// second service instance is a change of the plan, not of the code.
package plan

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// Plan is a whole experiment. It is built once and read-only afterwards.
type Plan struct {
	// Experiment names the experiment (and its results folder).
	Experiment string
	// Spec is the resolved spec as YAML, written into the results folder.
	Spec []byte
	// Runs is the matrix in execution order.
	Runs []Run
	// OnAbort is what the runner does once a run's stop condition fired
	// (Run.Abort): rundata.OnAbortContinue (also when empty) goes on with
	// the next run, rundata.OnAbortStop records the remaining runs as
	// skipped.
	OnAbort string
}

// Run is one cell of the matrix in one repeat.
type Run struct {
	// ID is "<condition>-<mode>-r<repeat>", also the run's folder name.
	ID        string
	Condition string
	Mode      string
	Repeat    int // 1-based
	Seed      int64
	// Components are started in order and stopped in reverse order.
	Components []Component
	Load       Load
	// Faults are set when the fault phase starts and cleared when the next
	// phase starts.
	Faults []Faults
	// Abort are the run's stop conditions: any of them, met while the
	// fault phase's faults are in place, removes every fault at once, and
	// none is set again in the run (the load goes on, so the recovery is
	// still measured). Empty: the faults stay for the whole fault phase.
	Abort []rundata.AbortRule
	// ProbeFaults are set when a probe phase starts and cleared when the
	// next phase starts (the probe's latency on every proxy).
	ProbeFaults []Faults
	// Meta is the run metadata known before the run: identity, timeouts,
	// endpoints and pools with their predictions. The runner fills in the
	// rest.
	Meta rundata.RunMeta
	// Retries is how many more times the run is run when it is INVALID.
	Retries int
	// ServiceMetrics, if set, is a user's service's Prometheus endpoint,
	// sampled as the service (rundata.ServiceComponent).
	ServiceMetrics *ServiceMetrics
	// MaxServiceMemory is the memory guard's ceiling on the resident
	// memory of the service's processes, in bytes: reached, the runner
	// kills them and stops the run (0: the runner's default).
	MaxServiceMemory int64
}

// ServiceMetrics is where a user's service exports its metrics, and under
// which names.
type ServiceMetrics struct {
	URL string
	Map *MetricMap
}

// Load is the open-model load of a run.
type Load struct {
	Endpoints []Endpoint
	// Canary, if set, is loaded in every phase beside the endpoints as the
	// run's noise floor (its Name is rundata.CanaryEndpoint).
	Canary *Endpoint
	// Phases run back to back; a phase's Rates override Endpoint.Rate.
	Phases              []loadgen.Phase
	ClientTimeout       time.Duration
	Window              time.Duration
	ExcludeFromValidity []string
	// Arrivals is how each endpoint's requests are spread in time.
	Arrivals loadgen.Arrivals
	// Bursts release requests at one instant on top of the endpoints'
	// schedules: the probes' and the condition's.
	Bursts []loadgen.Burst
	// Seed seeds the choice of the requests a phase's Cancel gives up on.
	Seed int64
	// InjectLag is the deliberate TEST FAULT loadgen.Config.InjectLag.
	InjectLag time.Duration
	// Validity limits: schedule lag p99, canary p99, baseline health.
	MaxLagP99    time.Duration
	CanaryMaxP99 time.Duration
	Health       *loadgen.Health
}

// Duration is the length of the load: the sum of its phases.
func (l Load) Duration() time.Duration {
	var d time.Duration
	for _, p := range l.Phases {
		d += p.Duration
	}
	return d
}

// Endpoint is one loaded endpoint.
type Endpoint struct {
	Name   string
	Target Address
	// Targets, if set, are the endpoint on each instance of a fleet: its
	// requests go to each in turn (round-robin, no load balancer), and
	// Target is not used.
	Targets []Address
	// Method, Header and Body are its requests' (GET without a body when
	// empty).
	Method string
	Header http.Header
	Body   []byte
	// Rate is the send rate in every phase that does not override it.
	Rate float64
	// Rules classify the results; nil means the built-in service's rules.
	Rules *loadgen.Rules
	// Retry, if set, makes the endpoint's clients retry.
	Retry *loadgen.Retry
}

// Address is where something is reached: a fixed URL, or the data plane of
// a component of the run (known only once it runs) followed by Path.
type Address struct {
	URL       string
	Component string
	Path      string
	// Scheme, if set, replaces the component's base URL's scheme (a
	// PostgreSQL server's or proxy's data plane is postgres://, not the
	// http:// a child's address is announced as).
	Scheme string
}

// Of is the address of component's data plane plus path.
func Of(component, path string) Address { return Address{Component: component, Path: path} }

// At is a fixed URL.
func At(url string) Address { return Address{URL: url} }

// Resolve returns the URL of a, given the data-plane base URLs of the
// running components.
func (a Address) Resolve(urls map[string]string) (string, error) {
	if a.Component == "" {
		return a.URL, nil
	}
	base, ok := urls[a.Component]
	if !ok {
		return "", fmt.Errorf("plan: address refers to component %q, which is not running (yet)", a.Component)
	}
	if a.Scheme != "" {
		if _, host, ok := strings.Cut(base, "://"); ok {
			base = a.Scheme + "://" + host
		}
	}
	return base + a.Path, nil
}

// Kind is what a component is.
type Kind string

// Component kinds: the subcommands of the bulkheadlab binary.
const (
	KindDep     Kind = "dep"
	KindProxy   Kind = "proxy"
	KindService Kind = "service"
	// KindCommand is a user's program: an external service started by its
	// own command.
	KindCommand Kind = "command"
	// KindPostgres is a real PostgreSQL server (the postgres subcommand)
	// for a dependency that is a database.
	KindPostgres Kind = "postgres"
)

// Component is one process (or, in process, one server) of a run. Exactly
// one of Dep, Proxy, Service, Command and Postgres is set, matching Kind.
type Component struct {
	// Name is unique in the run ("dep-A", "proxy-A", "service", or
	// "service-1" … "service-N" for a fleet): it labels the component's
	// metric samples and log file.
	Name string
	Kind Kind
	// Listen is the data-plane listen address, host:port (port 0: any).
	Listen  string
	Dep     *service.DepConfig
	Proxy   *Proxy
	Service *Service
	Command *Command
	// Postgres is set for KindPostgres.
	Postgres *Postgres
}

// Postgres is a PostgreSQL server a run starts for a database dependency.
type Postgres struct {
	// Name is the dependency's name, e.g. "DB".
	Name string
	// Setup is SQL run once the server accepts connections.
	Setup string
	// MaxConnections is the server's max_connections.
	MaxConnections int
}

// RunEnv is the variable of a Command's environment that names the run
// (the pre-flight's start of a mode names none: its value is then
// "preflight").
const RunEnv = "BULKHEADLAB_RUN"

// Command is a user's service started by its own command line (no shell),
// ready once Ready answers 2xx.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Env is added to the runner's environment, NAME=value.
	Env []string
	// Dir is the working directory; empty means the runner's.
	Dir          string
	Ready        string
	ReadyTimeout time.Duration
}

// Proxy is a fault proxy in front of a dependency.
type Proxy struct {
	// Name is the dependency's name, e.g. "A".
	Name     string
	Upstream Address
	Seed     uint64
	// Control is the control-plane listen address.
	Control string
	// Classes are the classes whose calls the proxy counts (the
	// dependency's classes, and the conditions' match expressions):
	// statement classes of a PostgreSQL proxy, route classes of an HTTP
	// one (the same type on both planes).
	Classes []faultproxy.Class
}

// Service is the service under test. Its endpoints' URLs are filled in from
// Upstreams when the component starts.
type Service struct {
	Config service.Config
	// Upstreams maps an endpoint name to the address its dependency call
	// goes to.
	Upstreams map[string]Address
}

// Faults is a fault set for one proxy component.
type Faults struct {
	// Component is the proxy that injects the faults.
	Component string
	// Dependency names the dependency behind it, for the run metadata.
	Dependency string
	Faults     []faultproxy.Fault
	// TCP, when set, are the faults of a TCP proxy (a tcp:// upstream):
	// Faults mapped onto the TCP plane; they are what is put.
	TCP []tcpproxy.Fault
	// Postgres, when set, are the faults of a PostgreSQL proxy (a
	// postgres:// upstream): Faults mapped onto that plane, per query;
	// they are what is put.
	Postgres []pgproxy.Fault
}

// Resolve returns a copy of c with every Address turned into a URL, given
// the data-plane base URLs of the components started before it.
func (c Component) Resolve(urls map[string]string) (Component, error) {
	switch {
	case c.Proxy != nil:
		p := *c.Proxy
		u, err := p.Upstream.Resolve(urls)
		if err != nil {
			return c, fmt.Errorf("%s: %w", c.Name, err)
		}
		p.Upstream = At(u)
		c.Proxy = &p
	case c.Service != nil:
		s := *c.Service
		s.Config.Endpoints = append([]service.Endpoint(nil), s.Config.Endpoints...)
		for i, e := range s.Config.Endpoints {
			a, ok := s.Upstreams[e.Name]
			if !ok {
				continue
			}
			u, err := a.Resolve(urls)
			if err != nil {
				return c, fmt.Errorf("%s: endpoint %s: %w", c.Name, e.Name, err)
			}
			s.Config.Endpoints[i].URL = u
		}
		c.Service = &s
	}
	return c, nil
}

// Args are the bulkheadlab subcommand and flags that start a resolved c as
// a process.
func (c Component) Args() []string {
	switch c.Kind {
	case KindDep:
		return append([]string{"dep", "--listen", c.Listen}, service.DepArgs(*c.Dep)...)
	case KindProxy:
		args := []string{"proxy", "--listen", c.Listen, "--control", c.Proxy.Control,
			"--upstream", c.Proxy.Upstream.URL, "--name", c.Proxy.Name, "--seed", fmt.Sprint(c.Proxy.Seed)}
		for _, c := range c.Proxy.Classes {
			args = append(args, "--class", c.Name+"="+c.Match)
		}
		// The user allowed remote addresses for the run (the spec's remote
		// targets are refused without it); the proxy checks its own.
		if loopback.CheckListen("--listen", c.Listen, false) != nil || loopback.CheckURL("--upstream", c.Proxy.Upstream.URL, false) != nil {
			args = append(args, "--allow-remote")
		}
		return args
	case KindService:
		return append([]string{"serve", "--listen", c.Listen}, service.ServeArgs(c.Service.Config)...)
	case KindPostgres:
		return []string{"postgres", "--listen", c.Listen, "--setup", c.Postgres.Setup,
			"--max-connections", strconv.Itoa(c.Postgres.MaxConnections)}
	}
	return nil
}

// InjectCPUBurn turns on the deliberate TEST FAULT service.Config.BurnCPU
// (n spinning goroutines) in every service component of the plan, so that
// tests can prove a starved service makes runs INVALID.
func (p *Plan) InjectCPUBurn(n int) {
	for i := range p.Runs {
		for j := range p.Runs[i].Components {
			if s := p.Runs[i].Components[j].Service; s != nil {
				s.Config.BurnCPU = n
			}
		}
	}
}

// InjectLag turns on the deliberate TEST FAULT loadgen.Config.InjectLag
// (every send late by up to d) in every run of the plan, so that the
// verdicts' sensitivity to schedule lag can be measured.
func (p *Plan) InjectLag(d time.Duration) {
	for i := range p.Runs {
		p.Runs[i].Load.InjectLag = d
	}
}

// InjectSharedSemaphoreDefect turns on the deliberate TEST FAULT
// service.LayoutConfig.BrokenSharedBulkhead in every service component of
// the plan, so that tests can prove the regression check fails.
func (p *Plan) InjectSharedSemaphoreDefect() {
	for i := range p.Runs {
		for j := range p.Runs[i].Components {
			if s := p.Runs[i].Components[j].Service; s != nil {
				s.Config.Layout.BrokenSharedBulkhead = true
			}
		}
	}
}

// MetricMap tells the runner under which names a user's service exports
// its bulkheads, so that its samples carry the harness's metric names
// (rundata.MetricPool*) and the same exhaustion rules apply to it. Every
// name is optional; PoolLabel is the label whose value names the pool.
type MetricMap struct {
	InUse, Available, Limit, Waiting, QueueLimit, Rejected string
	PoolLabel                                              string
	// ConnInUse, ConnLimit and ConnWaiting name the connection-pool gauges
	// (empty: not exported), each series labelled by ConnPoolLabel.
	ConnInUse, ConnLimit, ConnWaiting string
	ConnPoolLabel                     string
	// Histograms are the family names of histograms whose series (buckets,
	// sum and count) the sampler keeps under their own names.
	Histograms []string
}

// AvailableMetric is the canonical name MetricMap.Canonical gives free
// permits; the sampler turns them into permits in use.
const AvailableMetric = "available"

// Names are the user's metric names that m maps.
func (m *MetricMap) Names() []string {
	var out []string
	for _, n := range []string{m.InUse, m.Available, m.Limit, m.Waiting, m.QueueLimit, m.Rejected, m.ConnInUse, m.ConnLimit, m.ConnWaiting} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Canonical returns the harness's name for a user's metric (a counter may
// carry the _total suffix).
func (m *MetricMap) Canonical(name string) (string, bool) {
	for _, p := range []struct{ user, canon string }{
		{m.InUse, rundata.MetricPoolInUse}, {m.Available, AvailableMetric}, {m.Limit, rundata.MetricPoolLimit},
		{m.Waiting, rundata.MetricPoolWaiting}, {m.QueueLimit, rundata.MetricPoolQueueLimit}, {m.Rejected, rundata.MetricPoolRejected},
		{m.ConnInUse, rundata.MetricConnPoolInUse}, {m.ConnLimit, rundata.MetricConnPoolLimit}, {m.ConnWaiting, rundata.MetricConnPoolWaiting},
	} {
		if p.user != "" && (name == p.user || name == p.user+"_total") {
			return p.canon, true
		}
	}
	return "", false
}
