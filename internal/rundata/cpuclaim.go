package rundata

// CPURoles name the runs of the CPU claim (seed-004: "same-process
// bulkheads assumed to isolate CPU: a dependency that returns huge payloads
// still blocks the loop or dominates garbage collection for everyone").
// Under Condition (the culprit's dependency answers large JSON bodies the
// service decodes), in mode Mode (bulkheads), the victim's p99 rises above
// what it does under Control although no worker pool reached its limit,
// and the first exhausted resource is the service's CPU or its GC
// (CPU-NOT-ISOLATED).
type CPURoles struct {
	Condition string `yaml:"condition" json:"condition"`
	// Control is the condition compared against (default: the
	// expectations' healthy); Mode the layout judged (default bulkhead).
	Control string `yaml:"control,omitempty" json:"control,omitempty"`
	Mode    string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// MinP99RiseT is the least rise of the victim's fault-phase p99 over
	// its baseline, beyond the rise under Control, that counts as hurt, in
	// units of T (default 0.1).
	MinP99RiseT float64 `yaml:"min_p99_rise_t,omitempty" json:"min_p99_rise_t,omitempty"`
}

// WithDefaults returns r with every zero field at its default, healthy
// being the expectations' healthy condition.
func (r CPURoles) WithDefaults(healthy string) CPURoles {
	if r.Control == "" {
		r.Control = healthy
	}
	if r.Mode == "" {
		r.Mode = "bulkhead"
	}
	if r.MinP99RiseT == 0 {
		r.MinP99RiseT = 0.1
	}
	return r
}
