package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// policyPart is a spec as its policy family sees it: breakers, adaptive
// limits, retries and their expectations.
type policyPart struct{ *Spec }

// Policy is the policy stack of one dependency in a mode (a mode's
// `policies:` maps a dependency name to one). Durations may be relative
// to T. It is service.PolicyConfig as the spec writes it:
//
//	modes:
//	  - name: shared-breaker
//	    pools: shared            # the layout: shared or bulkhead
//	    policies:
//	      A:
//	        order: [retry, breaker, bulkhead, timeout]   # outer → inner (the default)
//	        retry: {attempts: 3, backoff: 0.1T, max_backoff: 1T, jitter: 0.2, on: [error, timeout]}
//	        breaker: {failures: 5, of: 10, delay: 4T, half_open_trials: 2}
type Policy struct {
	Order      []string     `yaml:"order,omitempty"`
	Timeout    Duration     `yaml:"timeout,omitempty"`
	Bulkhead   string       `yaml:"bulkhead,omitempty"`
	Retry      *RetrySpec   `yaml:"retry,omitempty"`
	Breaker    *BreakerSpec `yaml:"breaker,omitempty"`
	Limiter    *LimiterSpec `yaml:"limiter,omitempty"`
	RetryAfter Duration     `yaml:"retry_after,omitempty"`
	// Limit nests a bulkhead of this many calls inside the layout's pool.
	Limit int `yaml:"limit,omitempty"`
}

// RetrySpec is service.RetryConfig in a spec; the seed is the run's.
type RetrySpec struct {
	Attempts   int         `yaml:"attempts"`
	Backoff    Duration    `yaml:"backoff,omitempty"`
	MaxBackoff Duration    `yaml:"max_backoff,omitempty"`
	Jitter     float64     `yaml:"jitter,omitempty"`
	On         []string    `yaml:"on,omitempty"`
	Budget     *BudgetSpec `yaml:"budget,omitempty"`
}

// BudgetSpec is service.BudgetConfig in a spec.
type BudgetSpec struct {
	MaxRate        float64 `yaml:"max_rate"`
	MinConcurrency int     `yaml:"min_concurrency,omitempty"`
}

// BreakerSpec is service.BreakerConfig in a spec.
type BreakerSpec struct {
	Kind           string   `yaml:"kind,omitempty"`
	Failures       int      `yaml:"failures"`
	Of             int      `yaml:"of,omitempty"`
	Period         Duration `yaml:"period,omitempty"`
	Delay          Duration `yaml:"delay"`
	HalfOpenTrials int      `yaml:"half_open_trials,omitempty"`
	On             []string `yaml:"on,omitempty"`
}

// LimiterSpec is service.LimiterConfig in a spec.
type LimiterSpec struct {
	Min            int      `yaml:"min"`
	Max            int      `yaml:"max"`
	Initial        int      `yaml:"initial"`
	Window         Duration `yaml:"window,omitempty"`
	MinSamples     int      `yaml:"min_samples,omitempty"`
	MaxLimitFactor float64  `yaml:"max_limit_factor,omitempty"`
}

// layout returns the pool layout of m: its pools field, or its name for
// the built-in modes.
func (m *Mode) layout() string {
	if m.Pools != "" {
		return m.Pools
	}
	return m.Name
}

// resolvePolicies makes every policy duration absolute, given T.
func (s policyPart) resolvePolicies() {
	t := s.Service.Timeout.Resolve(0)
	abs := func(d *Duration) { *d = Abs(d.Resolve(t)) }
	for i := range s.Modes {
		for dep, p := range s.Modes[i].Policies {
			abs(&p.Timeout)
			abs(&p.RetryAfter)
			if r := p.Retry; r != nil {
				abs(&r.Backoff)
				abs(&r.MaxBackoff)
			}
			if b := p.Breaker; b != nil {
				abs(&b.Period)
				abs(&b.Delay)
			}
			if l := p.Limiter; l != nil {
				abs(&l.Window)
			}
			s.Modes[i].Policies[dep] = p
		}
	}
}

// config is p as the service takes it; seed seeds the retry's jitter.
func (p Policy) config(seed uint64) service.PolicyConfig {
	pc := service.PolicyConfig{Order: p.Order, Timeout: p.Timeout.D, Bulkhead: p.Bulkhead, RetryAfter: p.RetryAfter.D, Limit: p.Limit}
	if r := p.Retry; r != nil {
		pc.Retry = &service.RetryConfig{Attempts: r.Attempts, Backoff: r.Backoff.D, MaxBackoff: r.MaxBackoff.D,
			Jitter: r.Jitter, Seed: seed, On: r.On}
		if b := r.Budget; b != nil {
			pc.Retry.Budget = &service.BudgetConfig{MaxRate: b.MaxRate, MinConcurrency: b.MinConcurrency}
		}
	}
	if b := p.Breaker; b != nil {
		pc.Breaker = &service.BreakerConfig{Kind: b.Kind, Failures: b.Failures, Of: b.Of, Period: b.Period.D,
			Delay: b.Delay.D, HalfOpenTrials: b.HalfOpenTrials, On: b.On}
	}
	if l := p.Limiter; l != nil {
		pc.Limiter = &service.LimiterConfig{Min: l.Min, Max: l.Max, Initial: l.Initial, Window: l.Window.D,
			MinSamples: l.MinSamples, MaxLimitFactor: l.MaxLimitFactor}
	}
	return pc
}

// servicePolicies are m's stacks keyed by endpoint: every endpoint that
// calls a dependency with a policy gets its own instance of that stack.
// seed gives each endpoint's retry its seed. Nil when m has none.
func (s policyPart) servicePolicies(m *Mode, seed func(endpoint string) uint64) map[string]service.PolicyConfig {
	if len(m.Policies) == 0 {
		return nil
	}
	out := map[string]service.PolicyConfig{}
	for _, path := range (tenantsPart{s.Spec}).servicePaths() {
		e, _ := tenantsPart{s.Spec}.endpointAt(path)
		if p, ok := m.Policies[e.Dependency]; ok {
			out[path] = p.config(seed(path))
		}
	}
	return out
}

// seedPolicies gives the retries of a run's service their seeds, derived
// from the run's.
func (s policyPart) seedPolicies(c *service.Config, r Run) {
	for name, pc := range c.Policies {
		if pc.Retry != nil {
			rc := *pc.Retry
			rc.Seed = uint64(r.ComponentSeed("service/" + name))
			pc.Retry = &rc
			c.Policies[name] = pc
		}
	}
}

// validateModePolicies checks mode i's policies field by field; the
// stacks themselves are checked by the service's rules through
// validateService (errors mapped back by policyFieldPath).
func (s policyPart) validateModePolicies(p *problems, i int) {
	m := &s.Modes[i]
	if s.External != nil && len(m.Policies) > 0 {
		p.add(fmt.Sprintf("modes[%d].policies", i), "your own service has the policies it has: the harness cannot set them")
		return
	}
	for _, dep := range sortedKeys(m.Policies) {
		if _, ok := s.Dependencies[dep]; !ok {
			p.add(fmt.Sprintf("modes[%d].policies.%s", i, dep), "no dependency %q (dependencies: %s)", dep, strings.Join(s.DependencyNames(), ", "))
		}
	}
}

// policyFieldPath maps a service field "policies.<endpoint>.<field>" of
// mode i to the spec's path "modes[i].policies.<dependency>.<field>".
func (s policyPart) policyFieldPath(mode int, field string) (string, bool) {
	rest, ok := strings.CutPrefix(field, "policies.")
	if !ok {
		return "", false
	}
	ep, sub, _ := strings.Cut(rest, ".")
	e, _ := tenantsPart{s.Spec}.endpointAt(ep)
	path := fmt.Sprintf("modes[%d].policies.%s", mode, e.Dependency)
	if sub != "" {
		path += "." + sub
	}
	return path, true
}

// errNoPolicies is why a shared or bulkhead mode without pools refuses
// policies: its name is the built-in layout the reports compare.
var errNoPolicies = errors.New("the built-in modes shared and bulkhead carry no policies: name your mode (e.g. shared-breaker) and set pools: shared")

// validatePolicyClaims checks that the roles of the policy claims name
// conditions and modes of the matrix.
func (s policyPart) validatePolicyClaims(p *problems) {
	pc := s.Expectations.Policy
	if pc == nil {
		return
	}
	hasCond := func(n string) bool {
		return slices.ContainsFunc(s.Conditions, func(c Condition) bool { return c.Name == n })
	}
	hasMode := func(n string) bool { return slices.ContainsFunc(s.Modes, func(m Mode) bool { return m.Name == n }) }
	if b := pc.Breaker; b != nil {
		if !hasCond(b.Condition) {
			p.add("expectations.policy.breaker.condition", "no condition %q in the matrix", b.Condition)
		}
		for _, x := range []struct{ field, mode string }{{"shared", b.Shared}, {"bulkhead", b.Bulkhead}} {
			if !hasMode(x.mode) {
				p.add("expectations.policy.breaker."+x.field, "no mode %q in the matrix", x.mode)
			}
		}
	}
	if a := pc.Adaptive; a != nil && !hasMode(a.Mode) {
		p.add("expectations.policy.adaptive.mode", "no mode %q in the matrix", a.Mode)
	}
	if r := pc.Retry; r != nil {
		s.validateRetryClaims(p, r, hasCond, hasMode)
	}
}

// validateRetryClaims checks the retry claims' roles: the storm's and the
// contained modes' clients retry, the control's do not.
func (s policyPart) validateRetryClaims(p *problems, r *rundata.RetryRoles, hasCond, hasMode func(string) bool) {
	const path = "expectations.policy.retry."
	if !hasCond(r.Condition) {
		p.add(path+"condition", "no condition %q in the matrix", r.Condition)
	}
	retries := func(mode string) bool {
		for i := range s.Modes {
			if s.Modes[i].Name == mode {
				c := s.ClientsOf(&s.Modes[i])
				return c != nil && c.Retry != nil
			}
		}
		return false
	}
	roles := []struct {
		field, mode string
		retry       bool
	}{{"control", r.Control, false}, {"storm", r.Storm, true}}
	for i, m := range r.Contained {
		roles = append(roles, struct {
			field, mode string
			retry       bool
		}{fmt.Sprintf("contained[%d]", i), m, true})
	}
	for _, x := range roles {
		switch {
		case !hasMode(x.mode):
			p.add(path+x.field, "no mode %q in the matrix", x.mode)
		case retries(x.mode) != x.retry && x.retry:
			p.add(path+x.field, "mode %q: its clients do not retry (give it clients: {retry: ...})", x.mode)
		case retries(x.mode) != x.retry:
			p.add(path+x.field, "mode %q: its clients retry; the control's must not (clients: {})", x.mode)
		}
	}
	for _, x := range []struct {
		field string
		v     float64
	}{{"min_amplification", r.MinAmplification}, {"tolerance", r.Tolerance}, {"contained_max", r.ContainedMax}} {
		if x.v < 0 || x.v > 100 {
			p.add(path+x.field, "must be between 0 (default) and 100, got %v", x.v)
		}
	}
}

// breakerDelay is the longest open delay of m's breakers (0 without one): a
// breaker that opened in the fault stays open that long after it, so the
// service may take that much longer to recover.
func (m *Mode) breakerDelay() time.Duration {
	var d time.Duration
	for _, p := range m.Policies {
		if p.Breaker != nil {
			d = max(d, p.Breaker.Delay.D)
		}
	}
	return d
}
