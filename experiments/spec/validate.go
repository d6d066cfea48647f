package spec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// The parts of the families whose checks are in this file.
type (
	// endpointsPart is a spec as its endpoints family sees it: the endpoints
	// and the dependencies they call.
	endpointsPart struct{ *Spec }
	// servicePart is a spec as its service family sees it: the built-in
	// service's settings and pools.
	servicePart struct{ *Spec }
	// loadPart is a spec as its load family sees it: the rates and the phases.
	loadPart struct{ *Spec }
	// matrixPart is a spec as its matrix family sees it: the conditions and
	// the modes, the rows and columns of the matrix.
	matrixPart struct{ *Spec }
	// expectationsPart is a spec as its expectations family sees it: the
	// claims to check and the cells they compare.
	expectationsPart struct{ *Spec }
	// validityPart is a spec as its validity family sees it: the rules a run
	// must keep to count.
	validityPart struct{ *Spec }
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	// depNameRE is what a dependency may be called: it names a component
	// ("proxy-A") and its log file.
	depNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)
)

const (
	maxRate      = 100000
	maxRunTotal  = time.Hour
	maxEndpoints = 16
)

// validate reports every problem of a resolved spec into p.
func (s *Spec) validate(p *problems) {
	if s.Name == "" {
		p.add("name", "required")
	} else if !nameRE.MatchString(s.Name) {
		p.add("name", "%q: use 1–64 of a-z, 0-9, '_', '-', '.' (it names the results folder)", s.Name)
	}
	if s.Repeats < 1 || s.Repeats > 100 {
		p.add("repeats", "must be between 1 and 100, got %d", s.Repeats)
	}
	if s.AutoRepeats && s.Repeats < MinAutoRepeats {
		p.add("repeats", "auto needs max_repeats ≥ %d (a verdict's interval needs that many repeats), got %d", MinAutoRepeats, s.Repeats)
	}
	if !(endpointsPart{s}).validateEndpoints(p) {
		return // everything else is keyed by endpoint and dependency names
	}
	for _, f := range families {
		if f.validate != nil {
			f.validate(s, p)
		}
	}
}

// validateEndpoints checks the endpoint list and reports whether the names
// are usable as keys.
func (s endpointsPart) validateEndpoints(p *problems) bool {
	ok := true
	if len(s.Endpoints) > maxEndpoints {
		p.add("endpoints", "at most %d endpoints, got %d", maxEndpoints, len(s.Endpoints))
		return false
	}
	seen := map[string]bool{}
	for i, e := range s.Endpoints {
		path := fmt.Sprintf("endpoints[%d]", i)
		switch err := service.ValidateEndpointName(e.Name); {
		case err != nil:
			p.add(path+".name", "%v", err)
			ok = false
		case seen[e.Name]:
			p.add(path+".name", "duplicate endpoint %q", e.Name)
			ok = false
		}
		seen[e.Name] = true
		switch {
		case e.Dependency == "" && s.measuresGraph():
			// the audit's calibration measures what the endpoint calls
		case e.Dependency == "":
			p.add(path+".dependency", "%s", s.missingDependency(e.Name))
			ok = false
		case !depNameRE.MatchString(e.Dependency):
			p.add(path+".dependency", "%q: use 1–32 of A-Z, a-z, 0-9, '_', '-'", e.Dependency)
			ok = false
		}
		validateRequest(p, path, e)
	}
	return ok
}

// httpMethods are the methods an endpoint's requests may use.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// headerNameRE is an HTTP header field name (RFC 9110 token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")

// maxRequestBody bounds an endpoint's request body.
const maxRequestBody = 1 << 20

// validateRequest checks an endpoint's method, headers and body.
func validateRequest(p *problems, path string, e Endpoint) {
	if e.Method != "" && !slices.Contains(httpMethods, e.Method) {
		p.add(path+".method", "must be one of %s, got %q", strings.Join(httpMethods, ", "), e.Method)
	}
	for k, v := range e.Headers {
		if !headerNameRE.MatchString(k) {
			p.add(path+".headers", "%q is not a header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			p.add(path+".headers."+k, "a header value may not hold a line break or NUL")
		}
	}
	if len(e.Body) > maxRequestBody {
		p.add(path+".body", "at most %d bytes, got %d", maxRequestBody, len(e.Body))
	}
	if e.Body != "" && (e.Method == "" || e.Method == "GET" || e.Method == "HEAD") {
		p.add(path+".body", "needs a method that carries one (POST, PUT, PATCH, DELETE, OPTIONS), got %s", orGET(e.Method))
	}
}

func orGET(m string) string {
	if m == "" {
		return "GET (the default)"
	}
	return m
}

// validateService checks the service's settings: the experiment's own bounds
// here, and for each mode the service's own rules (service.Config.Validate),
// so that a spec that validates is one the service accepts.
func (s servicePart) validateService(p *problems) {
	sv := s.Service
	before := len(p.errs)
	t := sv.Timeout.D
	if t <= 0 || t > time.Minute {
		p.add("service.timeout", "must be between 1ms and 1m, got %s", t)
	}
	if sv.PoolSize < 1 || sv.PoolSize > 100000 {
		p.add("service.pool_size", "must be between 1 and 100000, got %d", sv.PoolSize)
	}
	if *sv.Queue < 0 || *sv.Queue > 1000000 {
		p.add("service.queue", "must be between 0 and 1000000, got %d", *sv.Queue)
	}
	if sv.Conns < 1 || sv.Conns > 100000 {
		p.add("service.conns", "must be between 1 and 100000, got %d", sv.Conns)
	}
	if _, err := service.ParseConnsLayout(sv.ConnsLayout); sv.ConnsLayout != "" && err != nil {
		p.add("service.conns_layout", "must be %s or %s, got %q", service.ConnsPerDependency, service.ConnsShared, sv.ConnsLayout)
	}
	if w := sv.MaxWait.D; w < 0 || w > time.Minute {
		p.add("service.max_wait", "must be between 0 and 1m, got %s", w)
	}
	defectsPart{s.Spec}.validateDefects(p)
	if len(p.errs) > before {
		return
	}
	reported := map[string]bool{}
	for i, m := range s.Modes {
		if !knownLayout(m.layout()) {
			continue // validateModes names it
		}
		c := s.serviceConfig(&s.Modes[i])
		for j := range c.Endpoints {
			c.Endpoints[j].URL = "http://127.0.0.1:1"
			if c.Endpoints[j].Query != "" {
				c.Endpoints[j].URL = "postgres://127.0.0.1:1"
			}
		}
		var ce *service.ConfigError
		if err := c.Validate(); errors.As(err, &ce) && !noPoolReports(ce.Field) {
			path := s.serviceFieldPath(i, ce.Field)
			if !reported[path] {
				reported[path] = true
				p.add(path, "%s", ce.Msg)
			}
		}
	}
}

// serviceFieldPath maps a service.ConfigError field of mode i to the spec's
// field path.
func (s servicePart) serviceFieldPath(mode int, field string) string {
	if path, ok := (policyPart{s.Spec}).policyFieldPath(mode, field); ok {
		return path
	}
	if path, ok := priorityFieldPath(mode, field); ok {
		return path
	}
	if path, ok := tenantFieldPath(mode, field); ok { // tenants.go
		return path
	}
	if path, ok := (jobsPart{s.Spec}).jobsFieldPath(mode, field); ok { // jobs.go
		return path
	}
	name, sub, _ := strings.Cut(field, ".")
	switch name {
	case "pool_sizes", "queues", "pool_groups":
		if sub == "" {
			return fmt.Sprintf("modes[%d].%s", mode, name)
		}
		return fmt.Sprintf("modes[%d].%s.%s", mode, name, sub)
	case "mode":
		return fmt.Sprintf("modes[%d].name", mode)
	case "rate", "rates":
		if sub == "" {
			return fmt.Sprintf("modes[%d].rates", mode)
		}
		return fmt.Sprintf("modes[%d].rates.%s", mode, sub)
	case "request_state_bytes":
		if s.Modes[mode].RequestStateBytes > 0 {
			return fmt.Sprintf("modes[%d].request_state_bytes", mode)
		}
	case "defects":
		if len(s.Modes[mode].Defects) > 0 {
			return fmt.Sprintf("modes[%d].defects", mode)
		}
	}
	return "service." + field
}

func (s endpointsPart) validateDeps(p *problems) {
	used := map[string]bool{}
	for _, d := range s.DependencyNames() {
		used[d] = true
	}
	for _, name := range sortedKeys(s.Dependencies) {
		d, path := s.Dependencies[name], "dependencies."+name
		if !used[name] {
			p.add(path, "no endpoint calls %s (endpoints: %s)", name, s.endpointList())
			continue
		}
		if d.Latency.D > time.Minute {
			p.add(path+".latency", "must be at most 1m, got %s", d.Latency.D)
		}
		if d.Jitter.D > d.Latency.D {
			p.add(path+".jitter", "%s must not exceed latency %s", d.Jitter.D, d.Latency.D)
		}
		tcpPart{s.Spec}.validateProtocol(p, name, path) // tcp.go
		if d.Size < 0 || d.Size > 1<<20 {
			p.add(path+".size", "must be between 0 and 1048576 bytes, got %d", d.Size)
		}
		// The stub's own rules, so that a spec that validates is one the
		// stub accepts.
		var ce *service.ConfigError
		if err := (service.DepConfig{Capacity: d.Capacity, Queue: d.Queue}).Validate(); errors.As(err, &ce) {
			p.add(path+"."+ce.Field, "%s", ce.Msg)
		}
	}
}

// endpointList names the endpoints and their dependencies, for messages.
func (s *Spec) endpointList() string {
	parts := make([]string, len(s.Endpoints))
	for i, e := range s.Endpoints {
		parts[i] = e.Name
		if e.Dependency != "" {
			parts[i] += "→" + e.Dependency
		}
	}
	return strings.Join(parts, ", ")
}

func validRate(p *problems, path string, r float64, zeroOK bool) {
	if (r == 0 && zeroOK) || (r > 0 && r <= maxRate) {
		return
	}
	p.add(path, "must be > 0 and ≤ %d requests per second, got %g", maxRate, r)
}

// validateRates checks a rates map: every key an endpoint, every rate valid.
func (s loadPart) validateRates(p *problems, path string, rates Rates, zeroOK bool) {
	for _, k := range sortedKeys(rates) {
		if !s.hasEndpoint(k) {
			p.add(path+"."+k, "no endpoint %q (endpoints: %s)", k, strings.Join(s.EndpointNames(), ", "))
			continue
		}
		validRate(p, path+"."+k, rates[k], zeroOK)
	}
}

func (s loadPart) validateLoad(p *problems) {
	s.validateRates(p, "load.rates", s.Load.Rates, false)
	floor := s.Service.Timeout.D + s.Service.MaxWait.D
	if ct := s.Load.ClientTimeout.D; ct <= floor || ct > 10*time.Minute {
		p.add("load.client_timeout", "%s must exceed service.timeout + service.max_wait (%s) so that the service answers first, and be at most 10m", ct, floor)
	}
	if w := s.Load.Window.D; w < loadgen.MinWindow || w > s.Phases.Fault.D {
		p.add("load.window", "must be between %s and the fault phase (%s), got %s", loadgen.MinWindow, s.Phases.Fault.D, w)
	}
	switch a := s.Load.Arrivals; a {
	case loadgen.ArrivalsConstant:
	case loadgen.ArrivalsPoisson:
		if s.Load.Lockstep {
			p.add("load.lockstep", "applies to constant arrivals only; poisson arrivals are independent by nature")
		}
	default:
		p.add("load.arrivals", "want %s or %s, got %q", loadgen.ArrivalsConstant, loadgen.ArrivalsPoisson, a)
	}
}

func (s loadPart) validatePhases(p *problems) {
	ph := s.Phases
	for _, x := range []struct {
		path string
		d    time.Duration
	}{{"phases.warmup", ph.Warmup.D}, {"phases.baseline", ph.Baseline.D}, {"phases.fault", ph.Fault.D}, {"phases.recovery", ph.Recovery.D}} {
		if x.d < 100*time.Millisecond {
			p.add(x.path, "must be at least 100ms, got %s", x.d)
		}
	}
	if total := s.RunDuration(); total > maxRunTotal {
		p.add("phases", "a run lasts %s; at most %s", total, maxRunTotal)
	}
}

// RunDuration is the length of one run: the sum of its phases.
func (s *Spec) RunDuration() time.Duration {
	var d time.Duration
	for _, p := range s.phases() {
		d += p.Duration
	}
	return d
}

func (s matrixPart) validateConditions(p *problems) {
	seen := map[string]bool{}
	for i, c := range s.Conditions {
		path := fmt.Sprintf("conditions[%d]", i)
		switch {
		case c.Name == "":
			p.add(path+".name", "required")
		case !nameRE.MatchString(c.Name):
			p.add(path+".name", "%q: use 1–64 of a-z, 0-9, '_', '-', '.'", c.Name)
		case seen[c.Name]:
			p.add(path+".name", "duplicate condition %q", c.Name)
		case !isBuiltin(c.Name) && len(c.Faults) == 0 && len(c.Rates) == 0 && c.Cancel == nil && c.Bursts == nil && c.Jobs == nil:
			p.add(path, "unknown condition %q: built-ins are %v; a condition of your own needs faults, rates, cancel, bursts or jobs", c.Name, BuiltinConditions)
		}
		seen[c.Name] = true
		// An empty dependency is the culprit's, which validateExpectations
		// reports when it does not exist; an audit's culprit may declare
		// none.
		switch _, ok := s.Dependencies[c.Dependency]; {
		case !ok && c.Dependency != "":
			p.add(path+".dependency", "must be one of %s, got %q", strings.Join(s.DependencyNames(), ", "), c.Dependency)
		case c.Dependency == "" && s.hasEndpoint(s.Expectations.Culprit) && (len(c.Faults) > 0 || len(c.Rates) > 0 || c.Cancel != nil || c.Bursts != nil || c.Jobs != nil && c.Jobs.Dependency == "" || isBuiltin(c.Name) && c.Name != CondHealthy):
			p.add(path+".dependency", "required: the dependency this condition acts on (one of %s); by default it is the culprit's, and /%s declares none",
				strings.Join(s.DependencyNames(), ", "), s.Expectations.Culprit)
		}
		capacity := -1 // the condition's capacity fault
		for j, f := range c.Faults {
			validateFault(p, fmt.Sprintf("%s.faults[%d]", path, j), f)
			if h, ct := s.hold(f, c.Dependency), s.Load.ClientTimeout.D; h.Kind == faultproxy.HoldAdds && h.Param != "" && ct > 0 && h.Least >= ct {
				p.add(fmt.Sprintf("%s.faults[%d].%s", path, j, h.Param), "%s is never shorter than load.client_timeout (%v): every affected call times out; use a hang fault for that, or change its %s",
					h.Text, ct, h.Param)
			}
			switch {
			case f.Type != faultproxy.TypeCapacity:
			case capacity >= 0:
				p.add(fmt.Sprintf("%s.faults[%d].type", path, j), "at most one capacity fault per condition (faults[%d] is one): the requests it affects share one server", capacity)
			default:
				capacity = j
			}
		}
		if c.Rates != nil {
			loadPart{s.Spec}.validateRates(p, path+".rates", c.Rates, false)
		}
	}
}

func (s matrixPart) validateModes(p *problems) {
	seen := map[string]bool{}
	for i, m := range s.Modes {
		path := fmt.Sprintf("modes[%d]", i)
		switch l := m.layout(); {
		case s.Audit != nil && s.External != nil && m.Name == AuditServiceMode && m.Pools == "":
			// an external audit's own mode: the user's service as it is
		case m.Pools != "" && !knownLayout(l):
			p.add(path+".pools", "must be %s, got %q", layoutList(), m.Pools)
		case m.Pools == "" && !knownLayout(l):
			p.add(path+".name", "must be %s, got %q (a mode of your own name needs pools: %s)", layoutList(), m.Name, layoutList())
		case !nameRE.MatchString(m.Name):
			p.add(path+".name", "%q: use 1–64 of a-z, 0-9, '_', '-', '.' (it names the runs)", m.Name)
		case seen[m.Name]:
			p.add(path+".name", "duplicate mode %q", m.Name)
		case m.Policies != nil && (m.Name == ModeShared || m.Name == ModeBulkhead):
			p.add(path+".policies", "%v", errNoPolicies)
		}
		seen[m.Name] = true
		if _, err := service.ParseConnsLayout(m.ConnsLayout); m.ConnsLayout != "" && err != nil {
			p.add(path+".conns_layout", "must be %s or %s, got %q", service.ConnsPerDependency, service.ConnsShared, m.ConnsLayout)
		}
		if m.Conns < 0 || m.Conns > 100000 {
			p.add(path+".conns", "must be between 1 and 100000 (0: service.conns), got %d", m.Conns)
		}
		if s.External != nil && (m.ConnsLayout != "" || m.Conns != 0) {
			p.add(path+".conns_layout", "your own service pools its connections as it does: the harness cannot set them")
		}
		policyPart{s.Spec}.validateModePolicies(p, i)
		if m.layout() == ModeShared && (m.PoolSizes != nil || m.Queues != nil) {
			p.add(path, "pool_sizes and queues are for bulkhead mode; size the shared pool with service.pool_size and service.queue")
		}
		if m.External != nil && s.External == nil {
			p.add(path+".external", "configures your own service, in an external spec only (add an external section)")
		}
	}
}

func (s expectationsPart) validateExpectations(p *problems) {
	e := s.Expectations
	// An audit has no victim or culprit of its own: every endpoint is
	// both, in turn (its defaults are the first and last endpoints).
	roles := s.Audit == nil || s.set("expectations.victim") || s.set("expectations.culprit")
	switch {
	case !roles:
	case len(s.Endpoints) == 0: // validateEndpoints says so
	case !s.hasEndpoint(e.Victim) || !s.hasEndpoint(e.Culprit):
		why := ""
		if !s.set("expectations.victim") && !s.set("expectations.culprit") {
			why = fmt.Sprintf(" (the defaults %s and %s name no endpoint here, and they are inferred only for two endpoints calling two dependencies, the conditions faulting one)",
				e.Victim, e.Culprit)
		}
		p.add("expectations", "name the victim (the endpoint whose dependency stays healthy) and the culprit (the one whose dependency gets the fault) among %s, "+
			"e.g. expectations: {victim: %s, culprit: %s}; got victim=%q culprit=%q%s",
			strings.Join(s.EndpointNames(), ", "), s.Endpoints[len(s.Endpoints)-1].Name, s.Endpoints[0].Name, e.Victim, e.Culprit, why)
	case e.Victim == e.Culprit:
		p.add("expectations", "victim and culprit must be two different endpoints (%s), got victim=%q culprit=%q",
			strings.Join(s.EndpointNames(), ", "), e.Victim, e.Culprit)
	}
	for name, v := range map[string]float64{
		"degraded_error_rate": e.DegradedErrorRate, "p2_max_error_rate": e.P2MaxErrorRate,
		"p2_min_fast_reject_share": e.P2MinFastRejectShare, "p3_min_throughput_cost": e.P3MinThroughputCost,
	} {
		if v < 0 || v > 1 {
			p.add("expectations."+name, "must be a share between 0 and 1, got %g", v)
		}
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"p2_max_p99_rise_t", e.P2MaxP99RiseT}, {"p4_max_ratio", e.P4MaxRatio}, {"max_relative_spread", e.MaxRelativeSpread}} {
		if x.v < 0 {
			p.add("expectations."+x.name, "must be ≥ 0, got %g", x.v)
		}
	}
	// Zero means nothing for these: every window degraded, no time to
	// degrade, no rejection fast enough.
	for _, x := range []struct {
		name string
		v    float64
	}{{"p1_max_time_to_degrade", e.P1MaxTimeToDegrade}, {"p2_fast_reject_max_t", e.P2FastRejectMaxT}} {
		if x.v <= 0 {
			p.add("expectations."+x.name, "must be > 0, got %g", x.v)
		}
	}
	if e.DegradedP99Factor <= 1 {
		p.add("expectations.degraded_p99_factor", "must be > 1 (a window is degraded above this many times its baseline p99), got %g", e.DegradedP99Factor)
	}
	for i, c := range e.Check {
		if j := slices.Index(e.Check, c); j < i {
			p.add(fmt.Sprintf("expectations.check[%d]", i), "%q is checked already (check[%d]): list each prediction once", c, j)
		} else if !slices.Contains(claims.Names(), c) {
			p.add(fmt.Sprintf("expectations.check[%d]", i), "must be one of %s, got %q", strings.Join(claims.Names(), ", "), c)
		} else if why := s.Undecidable(c); why != "" {
			p.add(fmt.Sprintf("expectations.check[%d]", i), "%s: it could never pass; remove it from the list or add what it compares (decidable here: %s)",
				why, orNone(s.Decidable(claims.Names())))
		}
	}
}

func (s validityPart) validateValidity(p *problems) {
	v := s.Validity
	if r := *v.CanaryRate; r < 0 || r > 1000 {
		p.add("validity.canary_rate", "must be between 0 (off) and 1000 requests per second, got %g", r)
	}
	t := s.Service.Timeout.D
	if d := v.CanaryMaxP99.D; d <= 0 || d > t {
		p.add("validity.canary_max_p99", "must be > 0 and at most T (%s), got %s", t, d)
	}
	if d := v.MaxLagP99.D; d <= 0 || d > s.Load.Window.D {
		p.add("validity.max_lag_p99", "must be > 0 and at most the window (%s), got %s", s.Load.Window.D, d)
	}
	for name, x := range map[string]float64{"baseline_min_success": *v.BaselineMinSuccess, "baseline_max_unreachable": *v.BaselineMaxUnreachable} {
		if x < 0 || x > 1 {
			p.add("validity."+name, "must be a share between 0 and 1, got %g", x)
		}
	}
	if r := *v.BaselineMaxP50Ratio; r != 0 && (r < 1.1 || r > 100) {
		p.add("validity.baseline_max_p50_ratio", "must be 0 (off) or between 1.1 and 100, got %g", r)
	}
	if n := *v.Retries; n < 0 || n > 10 {
		p.add("validity.retries", "must be between 0 and 10, got %d", n)
	}
	noPoolPart{s.Spec}.validateMemoryGuard(p) // nolayout.go
}

// Warnings are things a valid spec may not mean, one sentence each, shown
// by validate and run: what the harness will not be able to see or judge.
func (s *Spec) Warnings() []string {
	var out []string
	for _, f := range families {
		if f.warnings != nil {
			out = append(out, f.warnings(s)...)
		}
	}
	return out
}

// bulkheadWarnings reports the built-in bulkhead modes whose pools do not
// add up to the shared pool and queue they are compared with.
func (s servicePart) bulkheadWarnings() []string {
	var out []string
	for i, m := range s.Modes {
		if m.layout() != ModeBulkhead || s.External != nil {
			continue
		}
		var sizes, queues int
		for _, pl := range s.Pools(&s.Modes[i]) {
			if !pl.Nested {
				sizes += pl.Limit
				queues += pl.Queue
			}
		}
		if sizes != s.Service.PoolSize || queues != *s.Service.Queue {
			out = append(out, fmt.Sprintf("modes[%d]: the bulkheads hold %d permits and %d queue places against a shared pool of %d and %d: "+
				"the modes do not compare like for like (the difference in permits, not only the walls, changes the result)",
				i, sizes, queues, s.Service.PoolSize, *s.Service.Queue))
		}
	}
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// missingDependency says why an endpoint must name its dependency here.
func (s endpointsPart) missingDependency(ep string) string {
	if s.External == nil {
		return fmt.Sprintf("required: the dependency /%s calls — the built-in service calls one per endpoint, and each run starts a stub and a fault proxy under that name (e.g. A)", ep)
	}
	return fmt.Sprintf("required: which of external.upstreams (%s) /%s calls — a run faults the culprit's dependency and judges the victim by its own; "+
		"only an audit (an audit: block) measures what each endpoint calls, and there it may be left out", strings.Join(sortedKeys(s.External.Upstreams), ", "), ep)
}
