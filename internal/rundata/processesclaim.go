package rundata

// ProcessesRoles name the runs of the processes-as-walls claim (seed-004:
// "same-process bulkheads still share memory, the event loop and the GC;
// separate processes do not", and "a semaphore per dependency inside one
// process gives most of the benefit for none of the operational cost").
// Three layouts of the same pools are compared under two faults of the
// culprit's dependency, each against Control (PROCESS-WALL):
//
//   - under CPU (the culprit's calls cost the service CPU: a payload it
//     decodes) the victim stays at its baseline in Mode (a process per
//     pool: processes: per-endpoint) — its fault-phase p99 at most
//     MaxP99RiseT above its fault-phase p99 under Control, its error rate
//     within P2's — while in InProcess (the same bulkheads in one process)
//     its p99 is at least MinP99RiseT above: the CPU is the wall one
//     process lacks;
//   - under Slow (the culprit's dependency slow) the victim stays at its
//     baseline by P2's thresholds (its fault-phase p99 at most P2's rise
//     above Control's, its error rate) in Mode and in InProcess alike (the
//     semaphore's benefit), and degrades in Shared (one pool, P1's rule):
//     the fault was one a wall had to stop.
//
// What each layout costs is measured beside: its processes, their resident
// memory and GOMAXPROCS together.
type ProcessesRoles struct {
	// CPU is the condition whose calls cost CPU (required); Slow the slow
	// condition (default: the expectations' slow); Control the condition
	// compared against (default: the expectations' healthy).
	CPU     string `yaml:"cpu" json:"cpu"`
	Slow    string `yaml:"slow,omitempty" json:"slow,omitempty"`
	Control string `yaml:"control,omitempty" json:"control,omitempty"`
	// Mode is the layout judged as walls (default "processes"); InProcess
	// the bulkheads in one process (default: the expectations' bulkhead
	// mode); Shared the one pool (default: the expectations' shared mode).
	Mode      string `yaml:"mode,omitempty" json:"mode,omitempty"`
	InProcess string `yaml:"in_process,omitempty" json:"in_process,omitempty"`
	Shared    string `yaml:"shared,omitempty" json:"shared,omitempty"`
	// MaxP99RiseT is the largest excess of the victim's fault-phase p99
	// under CPU over its fault-phase p99 under Control that counts as held,
	// in units of T (default DefaultProcessesMaxRiseT);
	// MinP99RiseT the least that counts as hurt (default
	// DefaultProcessesMinRiseT).
	MaxP99RiseT float64 `yaml:"max_p99_rise_t,omitempty" json:"max_p99_rise_t,omitempty"`
	MinP99RiseT float64 `yaml:"min_p99_rise_t,omitempty" json:"min_p99_rise_t,omitempty"`
}

// Defaults of ProcessesRoles.
const (
	DefaultProcessesMode     = "processes"
	DefaultProcessesMaxRiseT = 0.1
	DefaultProcessesMinRiseT = 0.1
)

// WithDefaults returns r with every zero field at its default, from the
// expectations' healthy and slow conditions and their shared and bulkhead
// modes.
func (r ProcessesRoles) WithDefaults(healthy, slow, shared, bulkhead string) ProcessesRoles {
	if r.Slow == "" {
		r.Slow = slow
	}
	if r.Control == "" {
		r.Control = healthy
	}
	if r.Mode == "" {
		r.Mode = DefaultProcessesMode
	}
	if r.InProcess == "" {
		r.InProcess = bulkhead
	}
	if r.Shared == "" {
		r.Shared = shared
	}
	if r.MaxP99RiseT == 0 {
		r.MaxP99RiseT = DefaultProcessesMaxRiseT
	}
	if r.MinP99RiseT == 0 {
		r.MinP99RiseT = DefaultProcessesMinRiseT
	}
	return r
}

// ProcessRoles returns the processes claim's roles with their defaults;
// nil when the expectations name none.
func (e Expectations) ProcessRoles() *ProcessesRoles {
	if e.Processes == nil {
		return nil
	}
	r := e.Processes.WithDefaults(e.Healthy, e.Slow, e.SharedMode, e.BulkheadMode)
	return &r
}
