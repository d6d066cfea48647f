package spec

import (
	"fmt"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// Defaults of docs/design.md §5 that belong to the experiment rather than to a
// component (the service's and the stub's defaults are the service
// package's own), used for every field a spec leaves out.
const (
	// DefaultReadyTimeout bounds the wait for a started external service.
	DefaultReadyTimeout = 30 * time.Second
	DefaultRate         = 200.0
	DefaultWindow       = 250 * time.Millisecond
	DefaultWarmup       = time.Second
	DefaultBaseline     = 2500 * time.Millisecond
	DefaultFault        = 2500 * time.Millisecond
	DefaultRecovery     = 2 * time.Second
	// DefaultSlowFactor is the slow fault's latency in units of T.
	DefaultSlowFactor = 0.9
	// DefaultSlowJitter is the slow fault's jitter (capped so that the
	// delay plus jitter stays below T).
	DefaultSlowJitter = 10 * time.Millisecond
	// DefaultFailStatus is the failing fault's status.
	DefaultFailStatus = 503
	// Validity defaults; see Validity.
	DefaultCanaryRate    = 20.0
	DefaultCanaryMaxP99T = 0.1
	// DefaultMaxLagP99T is the limit on the load generator's schedule lag
	// p99, in units of T: sends up to 0.2 T late moved no deciding number of
	// the default experiment beyond its spread over repeats
	// (docs/validity.md), so half of that cannot change a verdict.
	DefaultMaxLagP99T             = 0.1
	DefaultBaselineMinSuccess     = 0.99
	DefaultBaselineMaxUnreachable = 0.01
	DefaultRetries                = 2
	// BusyDemandFactor: the busy condition raises the culprit's demand to
	// this many times its bulkhead (P/N), while keeping the shared pool
	// below P.
	BusyDemandFactor = 1.25
)

// DefaultEndpoints are the endpoints of a spec that names none: /a calls A
// and /b calls B.
func DefaultEndpoints() []Endpoint {
	return []Endpoint{{Name: service.EndpointA, Dependency: "A"}, {Name: service.EndpointB, Dependency: "B"}}
}

// DefaultConditions are the conditions of a spec that names none.
var DefaultConditions = []string{CondHealthy, CondSlow, CondFailing, CondBusy}

// BuiltinConditions are the names of the built-in conditions, in order.
var BuiltinConditions = []string{CondHealthy, CondSlow, CondFailing, CondBusy, CondReset, CondHang, CondCancel, CondSpike}

func isBuiltin(name string) bool {
	for _, b := range BuiltinConditions {
		if b == name {
			return true
		}
	}
	return false
}

// set reports whether the spec's YAML wrote the field at path (an explicit
// zero included): only fields it did not write take defaults.
func (s *Spec) set(path string) bool {
	_, ok := s.lines[path]
	return ok
}

// applyDefaults fills every field the spec did not write, except the
// built-in conditions' contents and relative durations (see resolve). An
// explicit zero is kept, so that validation can refuse it where zero means
// nothing (a pool of 0) and keep it where it means something (a queue of 0,
// a dependency answering at once).
func (s *Spec) applyDefaults() {
	if !s.set("repeats") {
		s.Repeats = 1
	}
	sv := &s.Service
	if !s.set("service.timeout") {
		sv.Timeout = Abs(service.DefaultTimeout)
	}
	if !s.set("service.pool_size") {
		sv.PoolSize = service.DefaultPoolSize
	}
	if sv.Queue == nil {
		q := service.DefaultQueue
		sv.Queue = &q
	}
	if !s.set("service.max_wait") {
		sv.MaxWait = RelT(1)
	}
	if !s.set("service.conns") {
		sv.Conns = service.DefaultConns
	}
	if len(s.Endpoints) == 0 && !s.set("endpoints") {
		s.Endpoints = DefaultEndpoints()
	}
	if s.Dependencies == nil {
		s.Dependencies = map[string]Dependency{}
	}
	if s.Load.Rates == nil {
		s.Load.Rates = Rates{}
	}
	for _, name := range s.DependencyNames() { // an endpoint's, or an external audit's upstream
		d, path := s.Dependencies[name], "dependencies."+name
		if !s.set(path+".latency") && !s.set(path+".jitter") {
			d.Latency, d.Jitter = Abs(service.DefaultDepLatency), Abs(service.DefaultDepJitter)
		}
		if !s.set(path + ".size") {
			d.Size = service.DefaultDepSize
		}
		s.Dependencies[name] = d
	}
	for _, e := range s.Endpoints {
		if _, ok := s.Load.Rates[e.Name]; !ok {
			s.Load.Rates[e.Name] = DefaultRate
		}
	}
	if !s.set("load.window") {
		s.Load.Window = Abs(DefaultWindow)
	}
	if s.Load.Arrivals == "" {
		s.Load.Arrivals = arrivalsPart{s}.defaultArrivals() // arrivals.go
	}
	ph := &s.Phases
	for _, p := range []struct {
		d    *Duration
		path string
		def  time.Duration
	}{{&ph.Warmup, "phases.warmup", DefaultWarmup}, {&ph.Baseline, "phases.baseline", DefaultBaseline},
		{&ph.Fault, "phases.fault", DefaultFault}, {&ph.Recovery, "phases.recovery", DefaultRecovery}} {
		if !s.set(p.path) {
			*p.d = Abs(p.def)
		}
	}
	if s.Audit != nil {
		auditPart{s}.auditDefaults() // audit.go: its conditions, modes and checks
	}
	if len(s.Conditions) == 0 && !s.set("conditions") {
		for _, n := range DefaultConditions {
			s.Conditions = append(s.Conditions, Condition{Name: n})
		}
	}
	if len(s.Modes) == 0 && !s.set("modes") {
		s.Modes = []Mode{{Name: ModeShared}, {Name: ModeBulkhead}}
	}
	s.Expectations = s.Expectations.WithDefaultsFor(func(k string) bool { return s.set("expectations." + k) })
	rolesPart{s}.inferRoles() // roles.go
	auditPart{s}.auditRoles() // audit.go
	rolesPart{s}.modeRoles()  // decidable.go
	switch {
	case s.set("expectations.check"):
	case s.Audit != nil:
		s.Expectations.Check = []string{} // the map is an audit's result
	default:
		// By default, check what the matrix can decide; a list the user
		// wrote is validated instead (validate: undecidable → error).
		s.Expectations.Check = s.Decidable(s.Expectations.Check)
	}
	s.Expectations.Undecidable = nil
	if s.Audit == nil {
		for _, pred := range claims.Names() {
			if why := s.Undecidable(pred); why != "" {
				if s.Expectations.Undecidable == nil {
					s.Expectations.Undecidable = map[string]string{}
				}
				s.Expectations.Undecidable[pred] = why
			}
		}
	}
	v := &s.Validity
	setF := func(p **float64, def float64) {
		if *p == nil {
			*p = &def
		}
	}
	setF(&v.CanaryRate, DefaultCanaryRate)
	setF(&v.BaselineMinSuccess, DefaultBaselineMinSuccess)
	setF(&v.BaselineMaxUnreachable, DefaultBaselineMaxUnreachable)
	setF(&v.BaselineMaxP50Ratio, loadgen.DefaultMaxP50Ratio)
	if v.Retries == nil {
		n := DefaultRetries
		v.Retries = &n
	}
	if !s.set("validity.canary_max_p99") {
		v.CanaryMaxP99 = RelT(DefaultCanaryMaxP99T)
	}
	if !s.set("validity.max_lag_p99") {
		v.MaxLagP99 = RelT(DefaultMaxLagP99T)
	}
}

// resolveDurations makes every Duration absolute, given T.
func (s *Spec) resolveDurations() {
	t := s.Service.Timeout.Resolve(0)
	abs := func(d *Duration) { *d = Abs(d.Resolve(t)) }
	abs(&s.Service.MaxWait)
	for name, d := range s.Dependencies {
		abs(&d.Latency)
		abs(&d.Jitter)
		s.Dependencies[name] = d
	}
	abs(&s.Load.Window)
	abs(&s.Phases.Warmup)
	abs(&s.Phases.Baseline)
	abs(&s.Phases.Fault)
	abs(&s.Phases.Recovery)
	abs(&s.Validity.CanaryMaxP99)
	abs(&s.Validity.MaxLagP99)
	if x := s.External; x != nil {
		if x.ReadyTimeout == (Duration{}) {
			x.ReadyTimeout = Abs(DefaultReadyTimeout)
		}
		abs(&x.ReadyTimeout)
		for i := range s.Modes {
			if m := s.Modes[i].External; m != nil {
				abs(&m.ReadyTimeout)
			}
		}
	}
	if !s.set("load.client_timeout") {
		s.Load.ClientTimeout = Abs(2 * (t + s.Service.MaxWait.D))
	}
	abs(&s.Load.ClientTimeout)
	policyPart{s}.resolvePolicies()
	clientsPart{s}.resolveClients()
	aftermathPart{s}.resolveAftermath(t)
	for i := range s.Conditions {
		for j := range s.Conditions[i].Faults {
			s.Conditions[i].Faults[j].resolveDurations(abs)
		}
		if b := s.Conditions[i].Jobs; b != nil {
			abs(&b.At)
		}
	}
}

// expandConditions fills in the built-in conditions and fault defaults.
// It runs after resolveDurations.
func (s *Spec) expandConditions() {
	defer auditPart{s}.auditColumns() // audit.go: once the dependencies are filled in
	t := s.Service.Timeout.D
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Dependency == "" {
			c.Dependency = s.DependencyOf(s.Expectations.Culprit)
		}
		if isBuiltin(c.Name) && len(c.Faults) == 0 && len(c.Rates) == 0 && c.Cancel == nil && c.Bursts == nil && c.Jobs == nil {
			s.builtin(c, t)
		}
		aftermathPart{s}.aftermathDefaults(c)
		for j := range c.Faults {
			f := &c.Faults[j]
			if !s.set(fmt.Sprintf("conditions[%d].faults[%d].percent", i, j)) {
				f.Percent = 100
			}
			f.fillDefaults(func(param string) bool { return s.set(fmt.Sprintf("conditions[%d].faults[%d].%s", i, j, param)) })
		}
	}
}

func (s *Spec) builtin(c *Condition, t time.Duration) {
	lat := time.Duration(DefaultSlowFactor * float64(t))
	slow := []Fault{{Type: "latency", Percent: 100, Params: Params{"latency": Abs(lat), "jitter": Abs(min(DefaultSlowJitter, (t-lat)/2)), "distribution": "uniform"}}}
	switch c.Name {
	case CondSlow:
		c.Faults = slow
		if c.Description == "" {
			c.Description = c.Dependency + " answers just within the timeout (0.9T)"
		}
	case CondCancel:
		c.Faults = slow
		c.Cancel = &CancelSpec{Share: DefaultCancelShare, After: Abs(time.Duration(DefaultCancelAfterT * float64(t)))}
		if c.Description == "" {
			c.Description = fmt.Sprintf("%s slow (0.9T) and /%s's clients give up on %g %% of their requests after %gT (the service's path of a client gone mid-call)",
				c.Dependency, s.Expectations.Culprit, 100*DefaultCancelShare, DefaultCancelAfterT)
		}
	case CondSpike:
		c.Bursts = &BurstSpec{Every: Abs(time.Duration(DefaultBurstEveryT * float64(t)))}
		if c.Description == "" {
			c.Description = fmt.Sprintf("%s healthy, and /%s gets a burst of requests at one instant every %gT, far above its limit",
				c.Dependency, s.Expectations.Culprit, float64(DefaultBurstEveryT))
		}
	case CondFailing:
		c.Faults = []Fault{{Type: "error", Percent: 100, Params: Params{"status": DefaultFailStatus, "body": "injected failure"}}}
		if c.Description == "" {
			c.Description = c.Dependency + " fails at once with 503"
		}
	case CondBusy:
		culprit := s.Expectations.Culprit
		if s.DependencyOf(culprit) == "" || !(s.Load.Rates[culprit] > 0) {
			return // validation reports the missing culprit or its bad rate, where the user wrote it
		}
		rate, extra := s.Busy()
		c.Rates = Rates{culprit: rate}
		if extra > 0 {
			c.Faults = []Fault{{Type: "latency", Percent: 100, Params: Params{"latency": Abs(extra), "distribution": "uniform"}}}
		}
		if c.Description == "" {
			c.Description = fmt.Sprintf("%s healthy but busier: /%s's demand exceeds its bulkhead (P/%d), not the shared pool",
				c.Dependency, culprit, len(s.Endpoints))
		}
	case CondHealthy:
		if c.Description == "" {
			c.Description = "no fault (control)"
		}
	case CondReset:
		c.Faults = []Fault{{Type: "abort", Percent: 100}}
		if c.Description == "" {
			c.Description = c.Dependency + " resets every connection without an answer (the service's error path)"
		}
	case CondHang:
		c.Faults = []Fault{{Type: "hang", Percent: 100}}
		if c.Description == "" {
			c.Description = c.Dependency + " never answers: every call ends at the service's timeout T (its timeout path)"
		}
	}
}

// BusyRateFactor is how much the busy condition multiplies the culprit's rate.
const BusyRateFactor = 2

// Busy returns the culprit endpoint's rate and the extra latency of its
// dependency in the built-in busy condition. By Little's law the culprit's
// demand λ·W should be BusyDemandFactor·P/N permits for N endpoints (capped
// halfway between P/N and what the shared pool has left beside the other
// endpoints, so the shared pool is not exhausted). Reaching it by rate alone
// would take 1250/s at the default 10 ms, which a 2-core machine cannot send
// validly through five processes; so busy doubles the culprit's rate and lets
// its dependency answer more slowly — still healthy, far below T — for the
// rest: W = demand/λ, extra = W − the dependency's normal latency (from the
// fault phase on, through the proxy, like the rate). It needs absolute
// durations.
func (s *Spec) Busy() (rate float64, extra time.Duration) {
	culprit := s.Expectations.Culprit
	p := float64(s.Service.PoolSize)
	n := float64(len(s.Endpoints))
	wa := s.Dependencies[s.DependencyOf(culprit)].Latency.D.Seconds()
	var others float64
	for _, e := range s.Endpoints {
		if e.Name != culprit {
			others += s.Load.Rates[e.Name] * s.Dependencies[e.Dependency].Latency.D.Seconds()
		}
	}
	base := s.Load.Rates[culprit]
	rate = BusyRateFactor * base
	if rate <= 0 {
		return base, 0
	}
	demand := min(BusyDemandFactor*p/n, (p/n+(p-others))/2)
	w := demand / rate
	if w <= wa {
		return rate, 0
	}
	extra = time.Duration((w - wa) * float64(time.Second)).Round(time.Millisecond)
	return rate, min(extra, s.Service.Timeout.D/2)
}

// DependencyOf returns the dependency endpoint calls, "" if there is no
// such endpoint or it declares none (an external audit's endpoint, whose
// calls the audit measures).
func (s *Spec) DependencyOf(endpoint string) string {
	for _, e := range s.Endpoints {
		if e.Name == endpoint {
			return e.Dependency
		}
	}
	return ""
}

// hasEndpoint reports whether the spec has an endpoint of that name.
func (s *Spec) hasEndpoint(name string) bool {
	return slices.ContainsFunc(s.Endpoints, func(e Endpoint) bool { return e.Name == name })
}

// EndpointNames returns the endpoint names in order.
func (s *Spec) EndpointNames() []string {
	out := make([]string, len(s.Endpoints))
	for i, e := range s.Endpoints {
		out[i] = e.Name
	}
	return out
}
