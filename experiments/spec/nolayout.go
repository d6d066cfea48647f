package spec

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// noPoolPart is a spec as its no-pool family sees it: modes whose calls in
// flight no pool bounds, rate limits and the memory guard.
type noPoolPart struct{ *Spec }

// Layouts without a pool (seed-004's "bulkheads are just rate limiting"
// and its event-loop runtimes): nothing bounds the built-in service's calls
// in flight. In unbounded every request awaits its dependency, each call
// holding its request's state (request_state_bytes); in ratelimit each
// dependency has a smooth rate limiter (modes[i].rates), which bounds calls
// per second and not calls in flight. A mode of either layout has no pool:
// Pools and Preview are empty for it, and everything that reads a mode's
// pools (Little's law, the aftermath's limits, the probes) reads none.
const (
	LayoutUnbounded = string(service.ModeUnbounded)
	LayoutRateLimit = string(service.ModeRateLimit)
)

// Layouts are every layout a mode may have, the pooled ones first.
var Layouts = []string{ModeShared, ModeBulkhead, LayoutUnbounded, LayoutRateLimit}

// pooled reports whether layout l has pools.
func pooled(l string) bool { return l == ModeShared || l == ModeBulkhead }

// knownLayout reports whether l is a layout.
func knownLayout(l string) bool { return slices.Contains(Layouts, l) }

// layoutList is Layouts for messages: "shared, bulkhead, unbounded or ratelimit".
func layoutList() string {
	return strings.Join(Layouts[:len(Layouts)-1], ", ") + " or " + Layouts[len(Layouts)-1]
}

// requestStateOf is the request state of each dependency call in mode m:
// the mode's, else the service's.
func (s noPoolPart) requestStateOf(m *Mode) ByteSize {
	if m != nil && m.RequestStateBytes > 0 {
		return m.RequestStateBytes
	}
	return s.Service.RequestStateBytes
}

// validateNoPool checks what the layouts without a pool configure: a
// mode's rates (ratelimit only, and then one for every endpoint) and the
// request state (the built-in service's; at most service.MaxRequestStateBytes).
// The service's own rules on rates (their range) are checked with the rest
// of its configuration (validateService).
func (s noPoolPart) validateNoPool(p *problems) {
	defer s.validateNoPoolRoles(p)
	checkState := func(path string, b ByteSize) {
		switch {
		case b == 0:
		case s.External != nil:
			p.add(path, "sets the built-in service's request state; your own service's memory is its own")
		case b < 0 || b > service.MaxRequestStateBytes:
			p.add(path, "must be between 0 and %s, got %s", ByteSize(service.MaxRequestStateBytes), b)
		}
	}
	checkState("service.request_state_bytes", s.Service.RequestStateBytes)
	for i := range s.Modes {
		m := &s.Modes[i]
		path := fmt.Sprintf("modes[%d]", i)
		checkState(path+".request_state_bytes", m.RequestStateBytes)
		l := m.layout()
		switch {
		case len(m.Rates) > 0 && s.External != nil:
			p.add(path+".rates", "set the built-in service's rate limiters; your own service's are its own (pools: ratelimit alone declares them)")
		case len(m.Rates) > 0 && l != LayoutRateLimit:
			p.add(path+".rates", "are a rate limiter's, for a mode with pools: ratelimit (this mode's layout is %s)", l)
		case s.External != nil:
			// pools: unbounded or ratelimit declares how your own service
			// is laid out: there is nothing to configure.
		case l == LayoutRateLimit:
			var missing []string
			for _, e := range s.EndpointNames() {
				if _, ok := m.Rates[e]; !ok {
					missing = append(missing, e)
				}
			}
			for _, k := range sortedKeys(m.Rates) {
				if !s.hasEndpoint(k) {
					p.add(path+".rates."+k, "no endpoint %q (endpoints: %s)", k, strings.Join(s.EndpointNames(), ", "))
				}
			}
			if len(missing) > 0 {
				p.add(path+".rates", "a ratelimit mode needs each endpoint's rate limit in calls per second, e.g. rates: {%s}; missing: %s",
					exampleRates(s.Spec), strings.Join(missing, ", "))
			}
		}
	}
}

// noPoolReports reports whether validateNoPool states the problem of a
// service.ConfigError's field itself (which endpoints have a rate, where
// rates apply, the request state's bounds), in the spec's terms: the
// service's own message would repeat it. A rate out of range (rates.<e>)
// is the service's to state.
func noPoolReports(field string) bool {
	return field == "rate" || field == "rates" || field == "request_state_bytes"
}

// exampleRates is a rates mapping for messages: each endpoint at its load
// rate plus a tenth.
func exampleRates(s *Spec) string {
	var parts []string
	for _, e := range s.EndpointNames() {
		parts = append(parts, fmt.Sprintf("%s: %g", e, math.Round(11*s.Load.Rates[e])/10))
	}
	return strings.Join(parts, ", ")
}

// validateNoPoolRoles checks expectations.ratelimit and expectations.memory:
// the conditions and modes they name are in the matrix, the rate-limited
// mode is laid out as ratelimit, and their thresholds are shares.
func (s noPoolPart) validateNoPoolRoles(p *problems) {
	ex := s.Expectations
	if r := ex.RateLimit; r != nil {
		const path = "expectations.ratelimit."
		rl := r.WithDefaults(ex.Slow)
		switch m := s.mode(rl.Mode); {
		case m == nil:
			p.add(path+"mode", "no mode %q in the matrix (default: %s): name the mode with pools: ratelimit", rl.Mode, rundata.DefaultRateLimitMode)
		case m.layout() != LayoutRateLimit:
			p.add(path+"mode", "mode %q is laid out as %s: the claim judges a mode with pools: ratelimit", rl.Mode, m.layout())
		case rl.Mode == ex.BulkheadMode:
			p.add(path+"mode", "must differ from the bulkhead mode %q it is compared with", ex.BulkheadMode)
		}
		if s.condition(rl.Condition) == nil {
			p.add(path+"condition", "no condition %q in the matrix (default: expectations.slow)", rl.Condition)
		}
		if v := rl.MaxLimitedShare; v < 0 || v > 1 {
			p.add(path+"max_limited_share", "must be a share between 0 (default 0.01) and 1, got %g", v)
		}
	}
	if r := ex.Memory; r != nil {
		const path = "expectations.memory."
		m := r.WithDefaults(ex.Slow, ex.BulkheadMode)
		if s.mode(m.Mode) == nil {
			p.add(path+"mode", "no mode %q in the matrix (default: %s): name the mode whose calls in flight nothing bounds", m.Mode, rundata.DefaultMemoryMode)
		}
		switch {
		case s.mode(m.Control) == nil:
			p.add(path+"control", "no mode %q in the matrix (default: expectations.bulkhead_mode)", m.Control)
		case m.Control == m.Mode:
			p.add(path+"control", "must differ from the mode %q it is compared with", m.Mode)
		}
		if s.condition(m.Condition) == nil {
			p.add(path+"condition", "no condition %q in the matrix (default: expectations.slow)", m.Condition)
		}
		if v := m.MinGrowth; v < 0 || v > 100 {
			p.add(path+"min_growth", "must be between 0 (default 0.25) and 100 times the memory at fault start, got %g", v)
		}
		if v := m.Tolerance; v < 0 || v >= 1 {
			p.add(path+"tolerance", "must be a share between 0 (default 0.25) and 1, got %g", v)
		}
	}
}

// InflightPreview is one endpoint's predicted calls in flight in a mode
// without pools (Little's law): nothing but its arrivals and its
// dependency's latency sets them.
type InflightPreview struct {
	Endpoint string
	// Limit is the endpoint's rate limit (0: none), which caps the rate the
	// calls arrive at, not how many are in flight.
	Limit float64
	// Baseline and Fault are λ·W in each phase, the fault's at its end:
	// λ·min(W, the fault phase), every call of a dependency slower than the
	// phase is long still being in flight.
	Baseline, Fault float64
}

// NoPoolPreview predicts each endpoint's calls in flight in the baseline
// and at the end of the fault phase of condition c in mode m when m's
// layout has no pool (nil otherwise).
func (s *Spec) NoPoolPreview(c *Condition, m *Mode) []InflightPreview {
	if pooled(m.layout()) || s.External != nil {
		return nil
	}
	fr := s.FaultRates(c)
	f := s.Phases.Fault.D.Seconds()
	var out []InflightPreview
	for _, e := range s.Endpoints {
		dep := s.DependencyOf(e.Name)
		lim := m.Rates[e.Name]
		r0, r1 := s.Load.Rates[e.Name], fr[e.Name]
		if lim > 0 {
			r0, r1 = min(r0, lim), min(r1, lim)
		}
		out = append(out, InflightPreview{Endpoint: e.Name, Limit: lim,
			Baseline: r0 * s.holdingTime(dep, nil, e.Name).Seconds(),
			Fault:    r1 * min(s.holdingTime(dep, c, e.Name).Seconds(), f)})
	}
	return out
}

// MinServiceMemory is the smallest memory guard ceiling a spec may set:
// below it a service would be stopped before it started serving.
const MinServiceMemory = 16 << 20

// validateMemoryGuard checks validity.max_service_memory: a ceiling a
// service can start under, on a service the runner starts (it can stop no
// other).
func (s noPoolPart) validateMemoryGuard(p *problems) {
	const path = "validity.max_service_memory"
	m := s.Validity.MaxServiceMemory
	if m == 0 {
		return // the runner's default: half of the machine's memory
	}
	if m < MinServiceMemory {
		p.add(path, "must be at least %s (the service must start under it), got %s", ByteSize(MinServiceMemory), m)
	}
	if s.External == nil {
		return
	}
	for i := range s.Modes {
		if len(s.ExternalOf(&s.Modes[i]).Start) == 0 {
			p.add(path, "guards a service the runner starts (external.start); mode %s's is started elsewhere, and the runner cannot stop it", s.Modes[i].Name)
			return
		}
	}
}

// checksOnlyGrowth reports whether every claim the spec checks is the
// memory claim's: it watches the calls in flight grow over a fault phase
// shorter than a call is held, on purpose (no call comes back within it),
// so the advice of a fault phase of several holding times is not for it.
func (s noPoolPart) checksOnlyGrowth() bool {
	for _, c := range s.Expectations.Check {
		if cl, ok := claims.Lookup(c); !ok || cl.Family != claims.Memory {
			return false
		}
	}
	return len(s.Expectations.Check) > 0
}
