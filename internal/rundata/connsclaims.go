package rundata

// ConnsRoles names the runs of the connection-pool claims (seed-004's
// "partitioning the worker pool but not the connection pool — the
// compartment with no wall is the one that floods", and seed-002's "size
// the bulkhead at ≈ 0.8 × connections so that it trips before the pool is
// exhausted"). Every mode named has bulkheads; they differ in their
// connection pools.
type ConnsRoles struct {
	// Condition is the condition under which the culprit's dependency is
	// slow.
	Condition string `yaml:"condition" json:"condition"`
	// NoWall shares one connection pool between the dependencies; Walled
	// gives each its own (CONNS-NO-WALL: the victim is hurt in NoWall, the
	// connections running out first, and not in Walled).
	NoWall string `yaml:"no_wall" json:"no_wall"`
	Walled string `yaml:"walled" json:"walled"`
	// Sized holds the culprit's bulkhead at most 0.8 × its connections,
	// Over above them (CONNS-SIZED: the culprit's calls wait for a
	// connection in Over, not in Sized). Optional: CONNS-SIZED is judged
	// only when both are set.
	Sized string `yaml:"sized,omitempty" json:"sized,omitempty"`
	Over  string `yaml:"over,omitempty" json:"over,omitempty"`
	// SizedMaxWaitT is the largest mean connection wait of the culprit's
	// calls in Sized, in T (default 0.02); OverMinWaitT the smallest in
	// Over (default 0.1).
	SizedMaxWaitT float64 `yaml:"sized_max_wait_t,omitempty" json:"sized_max_wait_t,omitempty"`
	OverMinWaitT  float64 `yaml:"over_min_wait_t,omitempty" json:"over_min_wait_t,omitempty"`
}

// WithDefaults returns r with every zero threshold at its default.
func (r ConnsRoles) WithDefaults() ConnsRoles {
	if r.SizedMaxWaitT == 0 {
		r.SizedMaxWaitT = 0.02
	}
	if r.OverMinWaitT == 0 {
		r.OverMinWaitT = 0.1
	}
	return r
}
