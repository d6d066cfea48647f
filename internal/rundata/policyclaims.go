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

// PolicyPredictions are the names of the policy verdicts a spec can check.
var PolicyPredictions = []string{"BREAKER-LATE", "BREAKER-ISOLATED", "ADAPTIVE-ISOLATES", "ADAPTIVE-COST"}
