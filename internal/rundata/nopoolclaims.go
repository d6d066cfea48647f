package rundata

import "github.com/bulkheadlab/bulkheadlab/internal/claims"

// RateLimitRoles name the runs of the rate-limit claim (seed-004:
// "bulkheads are just rate limiting — rate limiting bounds requests per
// unit time; a bulkhead bounds concurrent in-flight work. A dependency that
// becomes ten times slower breaks the second bound without touching the
// first"). Under Condition (the culprit's dependency slower, at the same
// rate), in Mode (a rate limiter per dependency sized just above the
// normal load, and no pool) the limiter (almost) never refuses a call while
// the victim degrades; in the expectations' bulkhead mode the victim stays
// at its baseline (RATELIMIT-NOT-BULKHEAD).
type RateLimitRoles struct {
	// Mode is the rate-limited mode (default "ratelimit"); Condition the
	// slow condition (default: the expectations' slow).
	Mode      string `yaml:"mode,omitempty" json:"mode,omitempty"`
	Condition string `yaml:"condition,omitempty" json:"condition,omitempty"`
	// MaxLimitedShare is the largest share of the culprit's fault-phase
	// results its rate limiter may refuse for the limiter to count as
	// untouched (default 0.01).
	MaxLimitedShare float64 `yaml:"max_limited_share,omitempty" json:"max_limited_share,omitempty"`
}

// DefaultRateLimitMode is RateLimitRoles.Mode's default.
const DefaultRateLimitMode = "ratelimit"

// WithDefaults returns r with every zero field at its default, slow being
// the expectations' slow condition.
func (r RateLimitRoles) WithDefaults(slow string) RateLimitRoles {
	if r.Mode == "" {
		r.Mode = DefaultRateLimitMode
	}
	if r.Condition == "" {
		r.Condition = slow
	}
	if r.MaxLimitedShare == 0 {
		r.MaxLimitedShare = 0.01
	}
	return r
}

// MemoryRoles name the runs of the event-loop claim (seed-004: "on an
// event-loop runtime awaits are cheap, so there is no natural bound at all
// — unbounded in-flight work grows memory and latency until something else
// fails, which means the semaphore must be explicit"). Under Condition (the
// culprit's dependency slower than the fault phase is long), in Mode
// (nothing bounds the calls in flight) the calls in flight to the culprit's
// dependency grow at its arrival rate throughout the fault phase and the
// service's memory grows with them; in Control (an explicit semaphore: the
// bulkheads) both stay bounded (UNBOUNDED-GROWS).
type MemoryRoles struct {
	// Mode is the unbounded mode (default "unbounded"); Control the bounded
	// one (default: the expectations' bulkhead mode); Condition the slow
	// condition (default: the expectations' slow).
	Mode      string `yaml:"mode,omitempty" json:"mode,omitempty"`
	Control   string `yaml:"control,omitempty" json:"control,omitempty"`
	Condition string `yaml:"condition,omitempty" json:"condition,omitempty"`
	// MinGrowth is the least growth of the service's resident memory over
	// the fault phase, as a share of its size at fault start, that counts
	// as growing in Mode (default 0.25).
	MinGrowth float64 `yaml:"min_growth,omitempty" json:"min_growth,omitempty"`
	// Tolerance is how far the calls in flight may grow slower than the
	// arrival rate in Mode (growing "at λ"), as a share of it; how fast,
	// as a share of λ, they may still grow in the second half of the fault
	// phase in Control; and how much Control's memory may grow, as a share
	// of Mode's growth (default 0.25).
	Tolerance float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
}

// DefaultMemoryMode is MemoryRoles.Mode's default.
const DefaultMemoryMode = "unbounded"

// WithDefaults returns r with every zero field at its default, slow and
// bulkhead being the expectations' slow condition and bulkhead mode.
func (r MemoryRoles) WithDefaults(slow, bulkhead string) MemoryRoles {
	if r.Mode == "" {
		r.Mode = DefaultMemoryMode
	}
	if r.Control == "" {
		r.Control = bulkhead
	}
	if r.Condition == "" {
		r.Condition = slow
	}
	if r.MinGrowth == 0 {
		r.MinGrowth = 0.25
	}
	if r.Tolerance == 0 {
		r.Tolerance = 0.25
	}
	return r
}

// rateLimitRole is the condition or mode the expectations name for a role
// of the rate-limit claim; "" without expectations.ratelimit.
func (e Expectations) rateLimitRole(r claims.Role) string {
	if e.RateLimit == nil {
		return ""
	}
	rl := e.RateLimit.WithDefaults(e.Slow)
	if r == claims.RateLimitMode {
		return rl.Mode
	}
	return rl.Condition
}

// memoryRole is the condition or mode the expectations name for a role of
// the memory claim; "" without expectations.memory.
func (e Expectations) memoryRole(r claims.Role) string {
	if e.Memory == nil {
		return ""
	}
	m := e.Memory.WithDefaults(e.Slow, e.BulkheadMode)
	switch r {
	case claims.MemoryMode:
		return m.Mode
	case claims.MemoryControl:
		return m.Control
	}
	return m.Condition
}
