package rundata

// PolicyClaims names the runs that play a part in the policy presets'
// claims (seed-004): which condition and which modes. A claim whose roles
// are not set is not judged, so an experiment without policies has no
// policy verdicts at all.
type PolicyClaims struct {
	// Breaker: under Condition (a dependency whose calls time out), the
	// breaker of mode Shared opens only after the shared pool ran out,
	// with the victim hurt before it opened (BREAKER-LATE); the breaker of
	// mode Bulkhead leaves the victim at its baseline (BREAKER-ISOLATED).
	Breaker *BreakerRoles `yaml:"breaker,omitempty" json:"breaker,omitempty"`
	// Adaptive: mode Mode (an adaptive limiter per dependency) keeps the
	// victim at its baseline under Expectations.Slow (ADAPTIVE-ISOLATES)
	// and serves the culprit more than bulkheads under Expectations.Busy
	// (ADAPTIVE-COST).
	Adaptive *AdaptiveRoles `yaml:"adaptive,omitempty" json:"adaptive,omitempty"`
	// Retry: under Condition, the retrying clients of mode Storm multiply
	// the culprit's load as 1 + r + … + r^(n−1) (RETRY-AMPLIFIES) and hurt
	// the victim more than mode Control's clients, which do not retry
	// (RETRY-HURTS); the clients of the Contained modes (a budget, or
	// Retry-After honoured) keep the amplification near 1
	// (RETRY-CONTAINED).
	Retry *RetryRoles `yaml:"retry,omitempty" json:"retry,omitempty"`
}

// RetryRoles are the runs and thresholds of the retry claims.
type RetryRoles struct {
	Condition string   `yaml:"condition" json:"condition"`
	Control   string   `yaml:"control" json:"control"`
	Storm     string   `yaml:"storm" json:"storm"`
	Contained []string `yaml:"contained,omitempty" json:"contained,omitempty"`
	// MinAmplification is the least amplification that is a storm (default
	// 1.25); Tolerance the largest relative distance of the measured
	// amplification from 1 + r + … (default 0.15); ContainedMax the largest
	// amplification that is contained (default 1.15).
	MinAmplification float64 `yaml:"min_amplification,omitempty" json:"min_amplification,omitempty"`
	Tolerance        float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
	ContainedMax     float64 `yaml:"contained_max,omitempty" json:"contained_max,omitempty"`
}

// WithDefaults returns r with every zero threshold at its default.
func (r RetryRoles) WithDefaults() RetryRoles {
	if r.MinAmplification == 0 {
		r.MinAmplification = 1.25
	}
	if r.Tolerance == 0 {
		r.Tolerance = 0.15
	}
	if r.ContainedMax == 0 {
		r.ContainedMax = 1.15
	}
	return r
}

// BreakerRoles are the runs of the breaker claims.
type BreakerRoles struct {
	Condition string `yaml:"condition" json:"condition"`
	Shared    string `yaml:"shared" json:"shared"`
	Bulkhead  string `yaml:"bulkhead" json:"bulkhead"`
}

// AdaptiveRoles are the runs of the adaptive-limit claims.
type AdaptiveRoles struct {
	Mode string `yaml:"mode" json:"mode"`
}
