package spec

import (
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// Run is one cell of the matrix in one repeat. It is a value; the
// pointers it holds point into the resolved spec and must not be mutated.
type Run struct {
	// ID is "<condition>-<mode>-r<repeat>", e.g. "slow-shared-r1"; it is
	// also the run's folder name.
	ID        string
	Condition *Condition
	Mode      *Mode
	Repeat    int // 1-based
	// Seed is derived from the spec's seed and the ID, so a run keeps its
	// seed when the matrix changes around it.
	Seed int64
}

// RunID builds a run ID.
func RunID(condition, mode string, repeat int) string {
	return fmt.Sprintf("%s-%s-r%d", condition, mode, repeat)
}

// Expand returns the matrix of a resolved spec in execution order:
// conditions × modes × repeats with the repeats interleaved — repeat 1 of
// every cell, then repeat 2 — so that drift cannot pose as an effect.
// Within a repeat, the modes of one condition run back to back.
func (s *Spec) Expand() []Run {
	runs := make([]Run, 0, s.Repeats*len(s.Conditions)*len(s.Modes))
	for r := 1; r <= s.Repeats; r++ {
		for ci := range s.Conditions {
			for mi := range s.Modes {
				c, m := &s.Conditions[ci], &s.Modes[mi]
				id := RunID(c.Name, m.Name, r)
				runs = append(runs, Run{ID: id, Condition: c, Mode: m, Repeat: r, Seed: deriveSeed(s.Seed, id)})
			}
		}
	}
	return runs
}

// ComponentSeed is the seed of one component of the run ("dep-A",
// "proxy-B"...), the same whichever launcher starts it.
func (r Run) ComponentSeed(component string) int64 { return deriveSeed(r.Seed, component) }

// deriveSeed mixes the experiment seed with a run ID (FNV-1a then a
// splitmix64 finaliser) into a non-negative seed.
func deriveSeed(seed int64, id string) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, id)
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

// PoolLayout is one pool of the service in a mode.
type PoolLayout struct {
	Name      string   // "shared", a pool group's name, or an endpoint's name
	Limit     int      // permits
	Queue     int      // queue length
	Endpoints []string // endpoints drawing from it
	// Nested marks an endpoint's own bulkhead inside the layout's pool (a
	// policy's limit): its endpoint draws from both.
	Nested bool
}

// layoutConfig is the service's pool layout in mode m.
func (s *Spec) layoutConfig(m *Mode) service.LayoutConfig {
	return service.LayoutConfig{Mode: service.Mode(m.layout()), PoolSize: s.Service.PoolSize, Queue: *s.Service.Queue,
		MaxWait: s.Service.MaxWait.D, PoolSizes: m.PoolSizes, Queues: m.Queues, Groups: m.PoolGroups, Rates: m.Rates}
}

// Pools returns the service's pools in mode m, as the service builds them
// (service.LayoutConfig.Pools). A mode that does not validate has none.
func (s *Spec) Pools(m *Mode) []PoolLayout {
	specs, err := s.layoutConfig(m).Pools(tenantsPart{s}.servicePaths())
	if err != nil {
		return nil
	}
	// A pool's endpoints are the load classes of its service endpoints
	// (tenants.go): each endpoint of the spec, by the path it calls.
	classes := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, tenantsPart{s}.loadClasses(p)...)
		}
		return out
	}
	out := make([]PoolLayout, len(specs))
	for i, p := range specs {
		out[i] = PoolLayout{Name: p.Name, Limit: p.Config.Size, Queue: p.Config.Queue, Endpoints: classes(p.Endpoints)}
	}
	for _, path := range (tenantsPart{s}).servicePaths() {
		e, _ := tenantsPart{s}.endpointAt(path)
		if p, ok := m.Policies[e.Dependency]; ok && p.Limit > 0 {
			out = append(out, PoolLayout{Name: rundata.LimitPoolName(path), Limit: p.Limit, Endpoints: tenantsPart{s}.loadClasses(path), Nested: true})
		}
	}
	return out
}

// serviceConfig is the service's configuration in mode m, without its
// dependencies' URLs (the plan wires them to the proxies).
func (s *Spec) serviceConfig(m *Mode) service.Config {
	c := service.Config{Layout: s.layoutConfig(m), Timeout: s.Service.Timeout.D, Conns: s.Service.Conns,
		Policies: policyPart{s}.servicePolicies(m, func(string) uint64 { return 0 }), GOMAXPROCS: s.Service.GOMAXPROCS,
		Defects: defectsPart{s}.defectsOf(m), Priority: m.Priority.config(), RequestStateBytes: int(noPoolPart{s}.requestStateOf(m))}
	c.ConnsLayout = service.ConnsLayout(s.Service.ConnsLayout)
	if m.ConnsLayout != "" {
		c.ConnsLayout = service.ConnsLayout(m.ConnsLayout)
	}
	if m.Conns > 0 {
		c.Conns = m.Conns
	}
	for _, path := range (tenantsPart{s}).servicePaths() {
		e, _ := tenantsPart{s}.endpointAt(path)
		c.Endpoints = append(c.Endpoints, service.Endpoint{Name: path, Query: e.Query})
	}
	c.Tenants = tenantsPart{s}.tenantConfig(m)
	if s.External == nil {
		c.Jobs = m.Jobs.config() // jobs.go
	}
	return c
}

// FaultRates returns the endpoint rates during the fault phase of c:
// load.rates with c's overrides. The other phases run at load.rates.
func (s *Spec) FaultRates(c *Condition) Rates {
	r := Rates{}
	for k, v := range s.Load.Rates {
		r[k] = v
	}
	for k, v := range c.Rates {
		if v > 0 {
			r[k] = v
		}
	}
	return r
}

// DependencyNames returns the dependencies the endpoints call, in endpoint
// order, each once; an external audit's, which measures who calls them,
// are also its upstreams that no endpoint declares (sorted, after them).
func (s *Spec) DependencyNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range s.Endpoints {
		if e.Dependency != "" && !seen[e.Dependency] {
			seen[e.Dependency] = true
			out = append(out, e.Dependency)
		}
	}
	if s.measuresGraph() {
		for _, d := range sortedKeys(s.External.Upstreams) {
			if !seen[d] {
				out = append(out, d)
			}
		}
	}
	return out
}

// measuresGraph reports whether the spec is an audit of a service of the
// user's own: its calibration measures which endpoint calls which of the
// upstreams, so an endpoint need not declare its dependency.
func (s *Spec) measuresGraph() bool { return s.Audit != nil && s.External != nil }

// RunOverhead is what a run costs beyond its phases, as measured on a
// 2-core machine: starting and stopping five processes and writing the run
// data (~0.2–0.6 s), with a margin.
const RunOverhead = time.Second

// EstimatedDuration is the wall time the matrix is expected to take: every
// run's phases and overhead, plus the INVALID runs that may be run again
// (not counted: they are rare on a quiet machine, and at most Retries
// times more).
func (s *Spec) EstimatedDuration() time.Duration {
	return time.Duration(len(s.Conditions)*len(s.Modes)*s.Repeats)*(s.RunDuration()+RunOverhead) + s.CalibrationDuration()
}

// Component names of a run.
func depComponent(dep string) string   { return rundata.DepComponent(dep) }
func proxyComponent(dep string) string { return rundata.ProxyComponent(dep) }

const anyLoopback = "127.0.0.1:0"

// Plan expands the matrix of a resolved spec into the runner's plan: every
// run's components, wiring, load, faults and metadata.
func (s *Spec) Plan() (*plan.Plan, error) {
	y, err := s.Marshal()
	if err != nil {
		return nil, err
	}
	rules, err := s.rules()
	if err != nil {
		return nil, err
	}
	p := &plan.Plan{Experiment: s.Name, Spec: y}
	for _, r := range s.Expand() {
		if info := s.sweep; info != nil {
			p.Runs = append(p.Runs, info.planRun(r, rules))
			continue
		}
		p.Runs = append(p.Runs, s.planRun(r, rules))
	}
	auditPart{s}.planAudit(p) // audit.go
	return p, nil
}

// planRun plans run r of a swept spec: as its point's spec plans the run
// of the original mode and condition, under the variants' names.
func (info *sweepInfo) planRun(r Run, rules *loadgen.Rules) plan.Run {
	ps, om, oc, applied := info.pointFor(r.Mode.Name, r.Condition.Name)
	pr := ps.planRun(Run{ID: r.ID, Condition: ps.condition(oc), Mode: ps.mode(om), Repeat: r.Repeat, Seed: r.Seed}, rules)
	pr.Mode, pr.Condition = r.Mode.Name, r.Condition.Name
	pr.Meta.Mode, pr.Meta.Condition = r.Mode.Name, r.Condition.Name
	pr.Meta.Sweep = info.sweepValues(applied, om, oc)
	return pr
}

// rules decodes the external classification rules (nil: the built-in ones).
func (s *Spec) rules() (*loadgen.Rules, error) {
	if s.External == nil || s.External.Rules == nil {
		return nil, nil
	}
	var rs loadgen.Rules
	if err := s.External.Rules.Decode(&rs); err != nil {
		return nil, fmt.Errorf("%s: external.rules: %w", s.file, err)
	}
	return &rs, nil
}

func (s *Spec) planRun(r Run, rules *loadgen.Rules) plan.Run {
	pr := plan.Run{ID: r.ID, Condition: r.Condition.Name, Mode: r.Mode.Name, Repeat: r.Repeat, Seed: r.Seed}
	deps := s.DependencyNames()
	upstream := map[string]plan.Address{}
	x := s.External
	for _, d := range deps {
		if x != nil {
			upstream[d] = plan.At(tcpPart{s}.upstreamURL(d)) // tcp.go
			continue
		}
		if (postgresPart{s}).pgDependency(d) { // postgres.go
			pr.Components = append(pr.Components, postgresPart{s}.postgresComponent(d))
			upstream[d] = plan.Address{Component: depComponent(d), Scheme: "postgres"}
			continue
		}
		dc := s.Dependencies[d]
		cfg := service.DepConfig{Name: d, Latency: dc.Latency.D, Jitter: dc.Jitter.D,
			Seed: uint64(r.ComponentSeed(depComponent(d))), Size: dc.Size, Capacity: dc.Capacity, Queue: dc.Queue,
			Payload: int(dc.Payload)}
		pr.Components = append(pr.Components, plan.Component{Name: depComponent(d), Kind: plan.KindDep, Listen: anyLoopback, Dep: &cfg})
		upstream[d] = plan.Of(depComponent(d), "")
	}
	for _, d := range deps {
		listen := anyLoopback
		if x != nil && x.Proxies[d] != "" { // none: a Service in a cluster (external.kubernetes)
			listen = externalProxyAddr(x.Proxies[d])
		}
		pr.Components = append(pr.Components, plan.Component{Name: proxyComponent(d), Kind: plan.KindProxy, Listen: listen,
			Proxy: &plan.Proxy{Name: d, Upstream: upstream[d], Seed: uint64(r.ComponentSeed(proxyComponent(d))), Control: anyLoopback,
				Classes: classesPart{s}.proxyClasses(d)}})
	}
	es := s.ExternalOf(r.Mode)
	if len(es.Start) > 0 {
		pr.Components = append(pr.Components, plan.Component{Name: rundata.ServiceComponent, Kind: plan.KindCommand,
			Command: s.command(r, es)})
	}
	var processOf map[string]string // service path → its process, with processes: per-endpoint
	if x == nil {
		svc := &plan.Service{Config: s.serviceConfig(r.Mode), Upstreams: map[string]plan.Address{}}
		for _, path := range (tenantsPart{s}).servicePaths() {
			e, _ := tenantsPart{s}.endpointAt(path)
			svc.Upstreams[path] = plan.Of(proxyComponent(e.Dependency), "")
			if (postgresPart{s}).pgDependency(e.Dependency) {
				svc.Upstreams[path] = postgresDSN(proxyComponent(e.Dependency))
			}
		}
		if r.Mode.perEndpoint() { // processes.go
			var procs []plan.Component
			procs, processOf = processesPart{s}.processComponents(r, svc)
			pr.Components = append(pr.Components, procs...)
		} else {
			pr.Components = append(pr.Components, fleetPart{s}.serviceComponents(r, svc)...)
		}
	}
	instances := s.InstancesOf(r.Mode)
	for _, e := range s.Endpoints {
		target := plan.Of(rundata.ServiceComponent, "/"+e.servicePath())
		if c, ok := processOf[e.servicePath()]; ok {
			target = plan.Of(c, "/"+e.servicePath())
		}
		if x != nil {
			target = plan.At(es.Targets[e.Name])
		}
		pe := plan.Endpoint{Name: e.Name, Target: target, Rate: s.Load.Rates[e.Name], Rules: rules,
			Retry: clientsPart{s}.clientRetry(r.Mode, e.Name, uint64(r.ComponentSeed("client-"+e.Name))), Targets: fleetTargets(instances, "/"+e.servicePath())}
		pe.Method, pe.Header, pe.Body = e.request()
		pr.Load.Endpoints = append(pr.Load.Endpoints, pe)
	}
	pr.Load.Phases = s.runPhases(r.Condition)
	pr.Load.ClientTimeout = s.Load.ClientTimeout.D
	pr.Load.Window = s.Load.Window.D
	pr.Load.Arrivals = loadgen.Arrivals{Process: s.Load.Arrivals, Offset: !s.Load.Lockstep, Seed: uint64(r.ComponentSeed("arrivals"))}
	// The probes' bursts are not the open model: their phases are not judged.
	pr.Load.ExcludeFromValidity = []string{rundata.PhaseWarmup, rundata.PhaseProbeBefore, rundata.PhaseProbeAfter}
	pr.Load.Bursts = aftermathPart{s}.runBursts(r, pr.Load.Phases)
	pr.Load.Seed = r.ComponentSeed("cancel")
	pr.ProbeFaults = aftermathPart{s}.probeFaults()
	v := s.Validity
	pr.Load.MaxLagP99 = v.MaxLagP99.D
	pr.Load.Health = &loadgen.Health{Phases: []string{rundata.PhaseBaseline},
		MinSuccess: *v.BaselineMinSuccess, MaxUnreachable: *v.BaselineMaxUnreachable}
	if r := *v.BaselineMaxP50Ratio; r > 0 {
		pr.Load.Health.Stationary = &loadgen.Stationarity{MaxP50Ratio: r, MinP50Diff: loadgen.DefaultMinP50Diff,
			MaxSuccessDrop: loadgen.DefaultMaxSuccessDrop,
			Warmup:         s.Phases.Warmup.D}
	}
	if c := s.canary(es); c != nil {
		c.Targets = fleetTargets(instances, "/healthz")
		if processOf != nil {
			c.Targets = processTargets(s.ProcessesOf(r.Mode), "/healthz")
		}
		pr.Load.Canary = c
		pr.Load.CanaryMaxP99 = v.CanaryMaxP99.D
	}
	pr.Retries = *v.Retries
	pr.MaxServiceMemory = int64(v.MaxServiceMemory)
	if m := es.Metrics; x != nil && m != nil {
		label := m.PoolLabel
		if label == "" {
			label = "pool"
		}
		mm := &plan.MetricMap{InUse: m.InUse, Available: m.Available,
			Limit: m.Limit, Waiting: m.Waiting, QueueLimit: m.QueueLimit, Rejected: m.Rejected, PoolLabel: label,
			Histograms: x.Timing.histogramNames()}
		if c := m.Conns; c != nil {
			mm.ConnInUse, mm.ConnLimit, mm.ConnWaiting, mm.ConnPoolLabel = c.InUse, c.Limit, c.Waiting, c.PoolLabel
			if mm.ConnPoolLabel == "" {
				mm.ConnPoolLabel = "pool"
			}
		}
		pr.ServiceMetrics = &plan.ServiceMetrics{URL: m.URL, Map: mm}
	}
	if c := r.Condition; len(c.Faults) > 0 {
		fs := make([]faultproxy.Fault, len(c.Faults))
		for i, f := range c.Faults {
			fs[i] = f.proxyFault()
			if !(postgresPart{s}).pgDependency(c.Dependency) {
				fs[i].Match = f.Match // a route (validated: none on TCP)
			}
		}
		pr.Faults = []plan.Faults{postgresPart{s}.withPostgres(tcpPart{s}.withTCP(plan.Faults{Component: proxyComponent(c.Dependency), Dependency: c.Dependency, Faults: fs}), c.Faults)}
	}
	pr.Meta = s.meta(r)
	fleetMeta(&pr.Meta, instances)
	if processOf != nil {
		processesPart{s}.processMeta(&pr.Meta, processOf)
	}
	if c := pr.Load.Canary; c != nil {
		pr.Meta.Canary = &rundata.CanaryInfo{URL: c.Target.URL, Rate: c.Rate, MaxP99: pr.Load.CanaryMaxP99}
		if c.Target.Component != "" {
			pr.Meta.Canary.URL = c.Target.Path // resolved when the service runs
		}
	}
	return pr
}

// canary is the run's canary: the service's /healthz, or the external
// service's canary URL (es); nil when off or when an external spec names
// none.
func (s *Spec) canary(es ExternalService) *plan.Endpoint {
	rate := *s.Validity.CanaryRate
	if rate == 0 {
		return nil
	}
	target := plan.Of(rundata.ServiceComponent, "/healthz")
	if s.External != nil {
		if es.Canary == "" {
			return nil
		}
		target = plan.At(es.Canary)
	}
	return &plan.Endpoint{Name: rundata.CanaryEndpoint, Target: target, Rate: rate}
}

// meta returns the run metadata known before the run starts: identity,
// seed, status pending, timeouts, endpoints and pools with predictions. A
// user's service has only the pools it declares, and no prediction: the
// harness knows neither its dependencies' latency nor its pools (the
// analysis predicts from the latency the proxies measure).
func (s *Spec) meta(r Run) rundata.RunMeta {
	m := rundata.RunMeta{
		Experiment: s.Name, ID: r.ID, Mode: r.Mode.Name, Condition: r.Condition.Name, Repeat: r.Repeat,
		Seed: r.Seed, Status: rundata.StatusPending,
		Timeout: s.Service.Timeout.D, ClientTimeout: s.Load.ClientTimeout.D, Window: s.Load.Window.D,
		Endpoints: s.EndpointInfos(r.Condition, r.Mode),
		Pools:     s.Preview(r.Condition, r.Mode),

		CallClasses: classesPart{s}.metaClasses(),
	}
	if b := s.BreakerOpening(r.Condition, r.Mode); len(b) > 0 {
		m.PredictedBreakerOpen = b
	}
	m.RecoveryAllowance = r.Mode.breakerDelay()
	m.Jobs = jobsPart{s}.jobsInfo(r.Condition, r.Mode) // jobs.go
	if s.External != nil {
		m.External = true
		m.TimingRoles = s.External.Timing.roles()
		m.TimingHistograms = s.External.Timing.histograms()
		m.Pools = nil
		pool := map[string]string{}
		for _, pl := range s.ExternalOf(r.Mode).Pools {
			m.Pools = append(m.Pools, rundata.PoolInfo{Name: pl.Name, Limit: pl.Size, Queue: pl.Queue, Endpoints: pl.Endpoints})
			for _, e := range pl.Endpoints {
				pool[e] = pl.Name
			}
		}
		for i := range m.Endpoints {
			m.Endpoints[i].Pool = pool[m.Endpoints[i].Name]
			m.Endpoints[i].BaseLatency = 0
		}
	}
	return m
}

// runPhases returns the phases of a run of condition c, with c's rate
// overrides in the fault phase.
func (s *Spec) runPhases(c *Condition) []loadgen.Phase {
	ph := s.phases()
	fr := s.FaultRates(c)
	for i := range ph {
		if ph[i].Name != rundata.PhaseFault {
			continue
		}
		ph[i].Cancel = faultPhaseCancel(c)
		changed := false
		for _, e := range s.Endpoints {
			changed = changed || fr[e.Name] != s.Load.Rates[e.Name]
		}
		if !changed {
			continue
		}
		ph[i].Rates = map[string]float64{}
		for _, e := range s.Endpoints {
			ph[i].Rates[e.Name] = fr[e.Name]
		}
	}
	return ph
}

// phases returns the non-empty phases of the spec in order.
func (s *Spec) phases() []loadgen.Phase {
	var out []loadgen.Phase
	for _, p := range []loadgen.Phase{
		{Name: rundata.PhaseWarmup, Duration: s.Phases.Warmup.D},
		aftermathPart{s}.probePhase(rundata.PhaseProbeBefore),
		{Name: rundata.PhaseBaseline, Duration: s.Phases.Baseline.D},
		{Name: rundata.PhaseFault, Duration: s.Phases.Fault.D},
		{Name: rundata.PhaseRecovery, Duration: s.Phases.Recovery.D},
		aftermathPart{s}.probePhase(rundata.PhaseProbeAfter),
	} {
		if p.Duration > 0 {
			out = append(out, p)
		}
	}
	return out
}

// RemoteTargets lists the hosts of an external spec that are not loopback;
// the runner refuses them unless the user allows remote targets.
func (s *Spec) RemoteTargets() []string {
	if s.External == nil {
		return nil
	}
	var out []string
	x := s.External
	services := []ExternalService{x.ExternalService}
	for _, m := range s.Modes {
		if m.External != nil {
			services = append(services, *m.External)
		}
	}
	seen := map[string]bool{}
	remote := func(raw string) {
		if raw == "" || seen[raw] {
			return
		}
		seen[raw] = true
		if u, err := url.Parse(raw); err != nil || !isLoopback(u.Hostname()) {
			out = append(out, raw)
		}
	}
	for _, es := range services {
		remote(es.Canary)
		remote(es.Ready)
		if es.Metrics != nil {
			remote(es.Metrics.URL)
		}
		for _, k := range sortedKeys(es.Targets) {
			remote(es.Targets[k])
		}
	}
	for _, k := range sortedKeys(x.Upstreams) {
		remote(tcpPart{s}.upstreamURL(k)) // a TCP host:port as tcp://host:port
	}
	// A proxy listening beyond loopback would be an open forwarder.
	for _, k := range sortedKeys(x.Proxies) {
		host, _, err := net.SplitHostPort(externalProxyAddr(x.Proxies[k]))
		if err != nil || !isLoopback(host) {
			out = append(out, x.Proxies[k])
		}
	}
	return out
}

// command is the start command of the user's service es in run r: its
// environment names the mode, the run and each proxy's address.
func (s *Spec) command(r Run, es ExternalService) *plan.Command {
	c := &plan.Command{Argv: append([]string(nil), es.Start...), Dir: es.Dir, Ready: es.Ready, ReadyTimeout: es.ReadyTimeout.D}
	if c.Ready == "" {
		c.Ready = es.Canary
	}
	c.Env = append(c.Env, "BULKHEADLAB_MODE="+r.Mode.Name, plan.RunEnv+"="+r.ID)
	for _, d := range s.DependencyNames() {
		c.Env = append(c.Env, "BULKHEADLAB_PROXY_"+envName(d)+"="+externalProxyAddr(s.External.Proxies[d]))
	}
	for _, k := range sortedKeys(es.Env) {
		c.Env = append(c.Env, k+"="+es.Env[k])
	}
	return c
}

// envName is a dependency name as an environment variable name part:
// upper case, every other character than a letter or digit an underscore.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

func isLoopback(host string) bool { return loopback.Host(host) }

// externalProxyAddr is the fixed listen address of an external proxy
// (host:port, or a URL whose host:port is used).
func externalProxyAddr(a string) string {
	if strings.Contains(a, "://") {
		if u, err := url.Parse(a); err == nil {
			return u.Host
		}
	}
	return a
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
