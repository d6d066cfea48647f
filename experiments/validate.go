package experiments

import (
	"errors"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"gopkg.in/yaml.v3"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/loadgen"

	"fmt"
	"net"
	"net/url"
	"regexp"
	"time"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

const (
	maxRate     = 100000
	maxRunTotal = time.Hour
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
	s.validateService(p)
	s.validateDeps(p)
	s.validateLoad(p)
	s.validatePhases(p)
	s.validateConditions(p)
	s.validateModes(p)
	s.validateExpectations(p)
	if s.External != nil {
		s.validateExternal(p)
	}
}

func (s *Spec) hasBulkhead() bool {
	for _, m := range s.Modes {
		if m.Name == ModeBulkhead {
			return true
		}
	}
	return false
}

func (s *Spec) validateService(p *problems) {
	sv := s.Service
	t := sv.Timeout.D
	if t <= 0 || t > time.Minute {
		p.add("service.timeout", "must be between 1ms and 1m, got %s", t)
	}
	switch {
	case sv.PoolSize < 1 || sv.PoolSize > 100000:
		p.add("service.pool_size", "must be between 1 and 100000, got %d", sv.PoolSize)
	case sv.PoolSize < 2 && s.hasBulkhead():
		p.add("service.pool_size", "must be ≥ 2 in bulkhead mode, got %d", sv.PoolSize)
	}
	if *sv.Queue < 0 || *sv.Queue > 1000000 {
		p.add("service.queue", "must be between 0 and 1000000, got %d", *sv.Queue)
	}
	if sv.MaxWait.D <= 0 && *sv.Queue > 0 {
		p.add("service.max_wait", "must be > 0 when the queue is not empty")
	}
	if sv.Conns < 1 || sv.Conns > 100000 {
		p.add("service.conns", "must be between 1 and 100000, got %d", sv.Conns)
	}
}

func (s *Spec) validateDeps(p *problems) {
	for _, d := range []struct {
		path string
		dep  Dependency
	}{{"dependencies.A", s.Dependencies.A}, {"dependencies.B", s.Dependencies.B}} {
		if d.dep.Jitter.D > d.dep.Latency.D {
			p.add(d.path+".jitter", "%s must not exceed latency %s", d.dep.Jitter.D, d.dep.Latency.D)
		}
		if d.dep.Size < 0 || d.dep.Size > 1<<20 {
			p.add(d.path+".size", "must be between 0 and 1048576 bytes, got %d", d.dep.Size)
		}
	}
}

func validRate(p *problems, path string, r float64, zeroOK bool) {
	if (r == 0 && zeroOK) || (r > 0 && r <= maxRate) {
		return
	}
	p.add(path, "must be > 0 and ≤ %d requests per second, got %g", maxRate, r)
}

func (s *Spec) validateLoad(p *problems) {
	validRate(p, "load.rates.a", s.Load.Rates.A, false)
	validRate(p, "load.rates.b", s.Load.Rates.B, false)
	floor := s.Service.Timeout.D + s.Service.MaxWait.D
	if ct := s.Load.ClientTimeout.D; ct <= floor {
		p.add("load.client_timeout", "%s must exceed service.timeout + service.max_wait (%s) so that the service answers first", ct, floor)
	}
	if w := s.Load.Window.D; w < loadgen.MinWindow || w > s.Phases.Fault.D {
		p.add("load.window", "must be between %s and the fault phase (%s), got %s", loadgen.MinWindow, s.Phases.Fault.D, w)
	}
}

func (s *Spec) validatePhases(p *problems) {
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
	ph := s.Phases
	return ph.Warmup.D + ph.Baseline.D + ph.Fault.D + ph.Recovery.D
}

func (s *Spec) validateConditions(p *problems) {
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
		case !isBuiltin(c.Name) && len(c.Faults) == 0 && c.Rates == nil:
			p.add(path, "unknown condition %q: built-ins are %v; a condition of your own needs faults or rates", c.Name, BuiltinConditions)
		}
		seen[c.Name] = true
		if c.Dependency != "A" && c.Dependency != "B" {
			p.add(path+".dependency", "must be A or B, got %q", c.Dependency)
		}
		for j, f := range c.Faults {
			validateFault(p, fmt.Sprintf("%s.faults[%d]", path, j), f)
		}
		if c.Rates != nil {
			validRate(p, path+".rates.a", c.Rates.A, true)
			validRate(p, path+".rates.b", c.Rates.B, true)
		}
	}
}

// validateFault checks a fault with the fault proxy's own rules, so that a
// spec that validates is one the proxy accepts when the fault phase starts.
func validateFault(p *problems, path string, f Fault) {
	if f.Percent <= 0 || f.Percent > 100 {
		p.add(path+".percent", "must be in (0, 100], got %g", f.Percent)
		return
	}
	err := f.proxyFault().Validate()
	var fe *faultproxy.FieldError
	switch {
	case errors.As(err, &fe):
		p.add(path+strings.TrimPrefix(fe.Field, "fault"), "%s", fe.Msg)
	case err != nil:
		p.add(path, "%v", err)
	}
}

// proxyFault is f as the fault proxy's control API takes it. Durations must
// be resolved.
func (f Fault) proxyFault() faultproxy.Fault {
	return faultproxy.Fault{Type: f.Type, Percent: f.Percent, Latency: f.Latency.D, Jitter: f.Jitter.D,
		Distribution: f.Distribution, Max: f.Max.D, Status: f.Status, Body: f.Body, Headers: f.Headers}
}

func (s *Spec) validateModes(p *problems) {
	seen := map[string]bool{}
	for i, m := range s.Modes {
		path := fmt.Sprintf("modes[%d]", i)
		switch {
		case m.Name != ModeShared && m.Name != ModeBulkhead:
			p.add(path+".name", "must be shared or bulkhead, got %q", m.Name)
		case seen[m.Name]:
			p.add(path+".name", "duplicate mode %q", m.Name)
		}
		seen[m.Name] = true
		if m.Name == ModeShared && (m.PoolSizes != nil || m.Queues != nil) {
			p.add(path, "pool_sizes and queues are for bulkhead mode; size the shared pool with service.pool_size and service.queue")
		}
		if ps := m.PoolSizes; ps != nil && (ps.A < 1 || ps.B < 1) {
			p.add(path+".pool_sizes", "a and b must both be ≥ 1, got a=%d b=%d", ps.A, ps.B)
		}
		if q := m.Queues; q != nil && (q.A < 0 || q.B < 0) {
			p.add(path+".queues", "a and b must both be ≥ 0, got a=%d b=%d", q.A, q.B)
		}
	}
}

func (s *Spec) validateExpectations(p *problems) {
	e := s.Expectations
	if e.Victim != "a" && e.Victim != "b" || e.Culprit != "a" && e.Culprit != "b" || e.Victim == e.Culprit {
		p.add("expectations", "victim and culprit must be a and b in some order, got victim=%q culprit=%q", e.Victim, e.Culprit)
	}
	for name, v := range map[string]float64{
		"degraded_error_rate": e.DegradedErrorRate, "p2_max_error_rate": e.P2MaxErrorRate,
		"p2_min_fast_reject_share": e.P2MinFastRejectShare, "p3_min_throughput_cost": e.P3MinThroughputCost,
	} {
		if v < 0 || v > 1 {
			p.add("expectations."+name, "must be a share between 0 and 1, got %g", v)
		}
	}
	for name, v := range map[string]float64{
		"degraded_p99_factor": e.DegradedP99Factor, "p1_max_time_to_degrade": e.P1MaxTimeToDegrade,
		"p2_max_p99_rise_t": e.P2MaxP99RiseT, "p2_fast_reject_max_t": e.P2FastRejectMaxT,
		"p4_max_ratio": e.P4MaxRatio, "max_relative_spread": e.MaxRelativeSpread,
	} {
		if v < 0 {
			p.add("expectations."+name, "must be ≥ 0, got %g", v)
		}
	}
	for i, c := range e.Check {
		if c != "P1" && c != "P2" && c != "P3" && c != "P4" {
			p.add(fmt.Sprintf("expectations.check[%d]", i), "must be one of P1, P2, P3, P4, got %q", c)
		}
	}
}

func (s *Spec) validateExternal(p *problems) {
	x := s.External
	checkURL := func(path, raw string) {
		u, err := url.Parse(raw)
		if raw == "" {
			p.add(path, "required")
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(path, "want an http(s) URL, got %q", raw)
		}
	}
	checkURL("external.targets.a", x.Targets.A)
	checkURL("external.targets.b", x.Targets.B)
	checkURL("external.upstreams.A", x.Upstreams.A)
	checkURL("external.upstreams.B", x.Upstreams.B)
	for _, pr := range []struct{ path, addr string }{{"external.proxies.A", x.Proxies.A}, {"external.proxies.B", x.Proxies.B}} {
		if _, _, err := net.SplitHostPort(pr.addr); err != nil {
			p.add(pr.path, "want host:port the proxy listens on (your service calls it), got %q", pr.addr)
		}
	}
	if x.Rules != nil {
		s.validateRules(p, x.Rules)
	}
	if len(s.Modes) != 1 {
		p.add("modes", "external mode runs the one service it is given: list exactly the mode it is configured with, and run the other mode as a second experiment")
	}
}

// validateRules decodes each classification rule on its own, so that an
// error names the rule's line and index.
func (s *Spec) validateRules(p *problems, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		p.addAt(n.Line, "external.rules", "want a list of rules")
		return
	}
	for i, item := range n.Content {
		var r loadgen.Rule
		err := item.Decode(&r)
		if err == nil {
			err = loadgen.Rules{r}.Validate()
		}
		if err != nil {
			p.addAt(item.Line, fmt.Sprintf("external.rules[%d]", i), "%v", err)
		}
	}
}
