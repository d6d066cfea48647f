package spec

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// auditPart is a spec as its audit family sees it: the columns, roles and
// calibration of an audit.
type auditPart struct{ *Spec }

// A spec with an `audit:` block is a blast-radius audit (`bulkheadlab
// audit`): a control run (the built-in healthy condition), then every
// dependency with each of the audit's faults in turn, against each mode
// (default: one, the built-in bulkhead layout, or the external service as
// configured), and a map of which endpoints each fault took down. The
// conditions are generated unless the spec writes its own; the predictions
// P1–P4 are not checked (the map is the audit's result).

// AuditServiceMode names the one mode of an external audit that names
// none: the user's service as it is.
const AuditServiceMode = "service"

// auditDefaults fills in an audit's defaults, its conditions and its
// modes. It runs in applyDefaults, before the built-in conditions are
// expanded: the control is the built-in healthy condition.
func (s auditPart) auditDefaults() {
	a := s.Audit.WithDefaults()
	s.Audit = &a
	if len(s.Conditions) == 0 && !s.set("conditions") {
		s.Conditions = []Condition{{Name: CondHealthy, Description: "no fault (the audit's control run)"}}
		a.Columns = nil
		for _, dep := range s.auditDependencies() {
			// A dependency with classes (statement classes, route
			// classes) is a column per class (classes.go), each fault
			// acting on its class's calls only.
			targets := []rundata.AuditColumn{{Dependency: dep}}
			if cs := s.Dependencies[dep].Classes; len(cs) > 0 && (classesPart{s.Spec}).classedDependency(dep) {
				targets = nil
				for _, name := range slices.Sorted(maps.Keys(cs)) {
					if (classesPart{s.Spec}).validClass(dep, name, cs[name]) { // validateClasses reports the others
						targets = append(targets, rundata.AuditColumn{Dependency: dep, Class: name})
					}
				}
			}
			for _, t := range targets {
				name := strings.ToLower(dep)
				if t.Class != "" {
					name += "-" + t.Class
				}
				for _, f := range a.Faults {
					switch f {
					case rundata.AuditSlow:
						s.addAuditColumn(t, rundata.AuditSlow, "slow-"+name, a.SlowT)
					case rundata.AuditFailing:
						s.addAuditColumn(t, rundata.AuditFailing, "failing-"+name, 0)
					case rundata.AuditLadder:
						for _, x := range a.Ladder {
							v := strconv.FormatFloat(x, 'g', 3, 64)
							s.addAuditColumn(t, "slow "+v+"T", "slow-"+v+"t-"+name, x)
						}
					}
				}
			}
		}
	}
	if len(s.Modes) == 0 && !s.set("modes") {
		// The built-in service in its bulkhead layout; a user's service as
		// it is configured.
		m := Mode{Name: ModeBulkhead}
		if s.External != nil {
			m = Mode{Name: AuditServiceMode}
		}
		s.Modes = []Mode{m}
	}
}

// auditColumns gives an audit whose conditions the spec writes itself a
// column for each (its fault named after it), once expandConditions has
// filled in their dependencies.
func (s auditPart) auditColumns() {
	if s.Audit == nil || len(s.Audit.Columns) > 0 {
		return
	}
	for _, c := range s.Conditions {
		if c.Name == CondHealthy {
			continue
		}
		col := rundata.AuditColumn{Condition: c.Name, Dependency: c.Dependency, Fault: c.Name}
		if len(c.Rates) > 0 {
			// A surge of some endpoints' load (a tenant's, a class's): they
			// are the column's cause; the others are judged against it.
			col.Load = slices.Sorted(maps.Keys(c.Rates))
			if len(c.Faults) == 0 && c.Cancel == nil && c.Bursts == nil && c.Jobs == nil {
				col.Dependency = "" // nothing faulted: load alone
			}
		}
		s.Audit.Columns = append(s.Audit.Columns, col)
	}
}

// auditRoles gives an audit's expectations a culprit and a victim (the
// first and last endpoints) unless the spec names them: the report's
// per-run numbers are read for them. It runs after the expectations'
// defaults.
func (s auditPart) auditRoles() {
	if eps := s.EndpointNames(); s.Audit != nil && len(eps) > 0 && !s.set("expectations.victim") && !s.set("expectations.culprit") {
		s.Expectations.Culprit, s.Expectations.Victim = eps[0], eps[len(eps)-1]
	}
}

// addAuditColumn adds a generated condition: t's dependency (its class's
// calls, when t has a class) slowed by slowT × T, or failing when fault
// is failing.
func (s auditPart) addAuditColumn(t rundata.AuditColumn, fault, name string, slowT float64) {
	dep, match := t.Dependency, ""
	if t.Class != "" {
		match = s.Dependencies[dep].Classes[t.Class]
	}
	c := Condition{Name: name, Dependency: dep}
	switch fault {
	case rundata.AuditFailing:
		c.Faults = []Fault{{Type: "error", Percent: 100, Params: Params{"status": DefaultFailStatus, "body": "injected failure"}}}
		c.Description = dep + " fails at once with 503"
	default:
		// The built-in slow condition's jitter, in units of T at the
		// default T, capped so that the delay stays below T.
		jit := min(float64(DefaultSlowJitter)/float64(250*time.Millisecond), (1-slowT)/2)
		c.Faults = []Fault{{Type: "latency", Percent: 100, Params: Params{"latency": RelT(slowT), "jitter": RelT(max(0, jit)), "distribution": "uniform"}}}
		c.Description = fmt.Sprintf("%s slow: every call held %gT", dep, slowT)
	}
	if match != "" {
		c.Faults[0].Match = match
		c.Description += " (its " + t.Class + " " + classesPart{s.Spec}.callNoun(dep) + ")"
	}
	s.Conditions = append(s.Conditions, c)
	t.Condition, t.Fault = name, fault
	s.Audit.Columns = append(s.Audit.Columns, t)
}

// auditDependencies are the dependencies an audit slows in turn: the
// endpoints' (in order of first use), then the external section's
// upstreams that no endpoint names (sorted).
func (s auditPart) auditDependencies() []string { return s.DependencyNames() }

// planAudit gives an audit's runs with a fault its stop conditions, and
// the plan what to do after one fired.
func (s auditPart) planAudit(p *plan.Plan) {
	if s.Audit == nil {
		return
	}
	p.OnAbort = s.Audit.OnAbort
	for i := range p.Runs {
		if len(p.Runs[i].Faults) > 0 {
			p.Runs[i].Abort = append([]rundata.AbortRule(nil), s.Audit.Abort...)
		}
	}
}

// CalibrationDuration is how long an audit's calibration takes: for each
// endpoint an idle stretch and its requests, each requests/rate long, and
// the components' start (0 for a spec that is not an audit).
func (s *Spec) CalibrationDuration() time.Duration {
	if s.Audit == nil || !(s.Audit.Calibration.Rate > 0) {
		return 0
	}
	each := time.Duration(float64(s.Audit.Calibration.Requests) / s.Audit.Calibration.Rate * float64(time.Second))
	return time.Duration(len(s.Endpoints))*2*each + RunOverhead
}

// validateAudit checks the audit block.
func (s auditPart) validateAudit(p *problems) {
	a := s.Audit
	if a == nil {
		return
	}
	for i, f := range a.Faults {
		if f != rundata.AuditSlow && f != rundata.AuditFailing && f != rundata.AuditLadder {
			p.add(fmt.Sprintf("audit.faults[%d]", i), "must be %s, %s or %s, got %q", rundata.AuditSlow, rundata.AuditFailing, rundata.AuditLadder, f)
		}
	}
	if slices.Contains(a.Faults, rundata.AuditLadder) && len(a.Ladder) == 0 {
		p.add("audit.ladder", "required with the fault %s: the delays, in units of T (e.g. [0.25, 0.5, 0.9])", rundata.AuditLadder)
	}
	for i, x := range append([]float64{a.SlowT}, a.Ladder...) {
		path := "audit.slow_t"
		if i > 0 {
			path = fmt.Sprintf("audit.ladder[%d]", i-1)
		}
		if !(x > 0 && x < 1) {
			p.add(path, "must be in (0, 1) (a delay in units of T, below T), got %g", x)
		}
	}
	eps := s.EndpointNames()
	for i, e := range a.Critical {
		if !slices.Contains(eps, e) {
			p.add(fmt.Sprintf("audit.critical[%d]", i), "must be one of %s, got %q", s.endpointList(), e)
		}
	}
	deps := s.auditDependencies()
	for e, ds := range a.Calls {
		if !slices.Contains(eps, e) {
			p.add("audit.calls."+e, "no endpoint %q (endpoints: %s)", e, s.endpointList())
		}
		for j, d := range ds {
			if !slices.Contains(deps, d) {
				p.add(fmt.Sprintf("audit.calls.%s[%d]", e, j), "must be one of %s, got %q", strings.Join(deps, ", "), d)
			}
		}
	}
	if !(a.DegradedP99RiseT > 0) {
		p.add("audit.degraded_p99_rise_t", "must be positive, got %g", a.DegradedP99RiseT)
	}
	if !(a.DegradedErrorRate > 0 && a.DegradedErrorRate <= 1) {
		p.add("audit.degraded_error_rate", "must be in (0, 1], got %g", a.DegradedErrorRate)
	}
	if a.Calibration.Requests < 1 || a.Calibration.Requests > 10000 {
		p.add("audit.calibration.requests", "must be between 1 and 10000, got %d", a.Calibration.Requests)
	}
	if !(a.Calibration.Rate > 0 && a.Calibration.Rate <= maxRate) {
		p.add("audit.calibration.rate", "must be in (0, %d], got %g", maxRate, a.Calibration.Rate)
	}
	if a.OnAbort != rundata.OnAbortContinue && a.OnAbort != rundata.OnAbortStop {
		p.add("audit.on_abort", "must be %s or %s, got %q", rundata.OnAbortContinue, rundata.OnAbortStop, a.OnAbort)
	}
	for i, r := range a.Abort {
		path := fmt.Sprintf("audit.abort[%d]", i)
		set := 0
		for _, b := range []bool{r.ErrorRate != 0, r.P99 != 0, r.Probe != ""} {
			if b {
				set++
			}
		}
		if set != 1 {
			p.add(path, "needs exactly one of error_rate, p99 and probe, got %d", set)
		}
		switch {
		case r.ErrorRate != 0 && !(r.ErrorRate > 0 && r.ErrorRate <= 1):
			p.add(path+".error_rate", "must be in (0, 1], got %g", r.ErrorRate)
		case r.P99 < 0:
			p.add(path+".p99", "must be positive, got %v", r.P99)
		case r.Probe != "":
			if u, err := url.Parse(r.Probe); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.add(path+".probe", "want an http(s) URL, got %q", r.Probe)
			}
			if r.ProbeInterval < 10*time.Millisecond || r.ProbeInterval > time.Minute {
				p.add(path+".probe_interval", "must be between 10ms and 1m, got %v", r.ProbeInterval)
			}
		}
		if r.Probe == "" && r.Endpoint != "*" && !slices.Contains(eps, r.Endpoint) {
			p.add(path+".endpoint", "must be * or one of %s, got %q", s.endpointList(), r.Endpoint)
		}
		if r.For <= 0 || r.For > s.Phases.Fault.D {
			p.add(path+".for", "must be positive and at most the fault phase (%v), got %v", s.Phases.Fault.D, r.For)
		}
	}
	conds := map[string]bool{}
	for _, c := range s.Conditions {
		conds[c.Name] = true
	}
	if !conds[CondHealthy] {
		p.add("conditions", "an audit needs the control run: the built-in condition %s", CondHealthy)
	}
	if len(a.Columns) == 0 {
		p.add("conditions", "an audit needs at least one fault beside the control run %s", CondHealthy)
	}
	for i, c := range a.Columns {
		if !conds[c.Condition] {
			p.add(fmt.Sprintf("audit.columns[%d].condition", i), "no condition %q", c.Condition)
		}
		if !slices.Contains(deps, c.Dependency) && !c.LoadOnly() {
			p.add(fmt.Sprintf("audit.columns[%d].dependency", i), "must be one of %s, got %q", strings.Join(deps, ", "), c.Dependency)
		}
	}
}

// AuditRule describes a stop condition as a sentence, e.g. "/checkout
// error rate ≥ 0.5 over 500ms".
func AuditRule(r rundata.AbortRule) string {
	who := "/" + r.Endpoint
	if r.Endpoint == "*" {
		who = "an endpoint's"
	}
	switch {
	case r.Probe != "":
		return fmt.Sprintf("probe %s without a 2xx for %v", r.Probe, r.For)
	case r.P99 > 0:
		return fmt.Sprintf("%s p99 ≥ %v over %v", who, r.P99, r.For)
	default:
		return fmt.Sprintf("%s error rate ≥ %g over %v", who, r.ErrorRate, r.For)
	}
}
