package claims

// Names of the claims, as summary.json, the report and expectations.check
// write them.
const (
	// The hypothesis' own predictions (docs/design.md §1).
	P1 = "P1"
	P2 = "P2"
	// FailFast is P2's second half, judged on its own.
	FailFast  = "FAILFAST"
	P3        = "P3"
	P4        = "P4"
	Exhausted = "EXHAUSTED"

	// What a fault leaves behind (docs/aftermath.md).
	Recovery   = "RECOVERY"
	NoLeak     = "NO-LEAK"
	LimitHolds = "LIMIT-HOLDS"

	// Policies (docs/policies.md).
	BreakerLate      = "BREAKER-LATE"
	BreakerIsolated  = "BREAKER-ISOLATED"
	AdaptiveIsolates = "ADAPTIVE-ISOLATES"
	AdaptiveCost     = "ADAPTIVE-COST"
	RetryAmplifies   = "RETRY-AMPLIFIES"
	RetryHurts       = "RETRY-HURTS"
	RetryContained   = "RETRY-CONTAINED"

	// Bulkhead sizing.
	SizingTooSmall = "SIZING-TOO-SMALL"
	SizingTooLarge = "SIZING-TOO-LARGE"
	SizingLittle   = "SIZING-LITTLE"

	// Connection pools.
	ConnsNoWall = "CONNS-NO-WALL"
	ConnsSized  = "CONNS-SIZED"

	// CPU.
	CPUNotIsolated = "CPU-NOT-ISOLATED"

	// Fleets.
	FleetMultiplies = "FLEET-MULTIPLIES"
	FleetBudget     = "FLEET-BUDGET"

	// Priorities (criticality classes in one pool).
	PriorityReserved = "PRIORITY-RESERVED"
	// Layouts without a pool: a rate limiter is not a bulkhead, and
	// nothing bounds an event loop's awaits.
	RateLimitNotBulkhead = "RATELIMIT-NOT-BULKHEAD"
	UnboundedGrows       = "UNBOUNDED-GROWS"
	// Tenants.
	TenantsDoS      = "TENANTS-DOS"
	TenantsIsolated = "TENANTS-ISOLATED"
	// Background jobs: a queue drain beside live traffic.
	JobsStarve   = "JOBS-STARVE"
	JobsIsolated = "JOBS-ISOLATED"
	// Processes as walls: which isolation a shared pool, bulkheads in one
	// process and a process per endpoint give, and at what cost.
	ProcessWall = "PROCESS-WALL"
)

// A Family is a group of claims judged together: one file of
// analysis/verdict, its run numbers one file of analysis/measure.
type Family string

// The families, in report order.
const (
	Hypothesis Family = "hypothesis"
	Aftermath  Family = "aftermath"
	Policy     Family = "policy"
	Sizing     Family = "sizing"
	Conns      Family = "conns"
	CPU        Family = "cpu"
	Fleet      Family = "fleet"
	Priority   Family = "priority"
	RateLimit  Family = "ratelimit"
	Memory     Family = "memory"
	Tenants    Family = "tenants"
	Jobs       Family = "jobs"
	Processes  Family = "processes"
)

// A Role is a condition or a mode of the matrix that the expectations name
// for the claims: the key of the field that names it.
type Role string

// The roles a claim's cells are named by.
const (
	Healthy      Role = "healthy"
	Slow         Role = "slow"
	Failing      Role = "failing"
	Busy         Role = "busy"
	SharedMode   Role = "shared_mode"
	BulkheadMode Role = "bulkhead_mode"
	CPUCondition Role = "cpu.condition"
	CPUControl   Role = "cpu.control"
	CPUMode      Role = "cpu.mode"
	// The rate-limit claim's: its condition and its rate-limited mode
	// (expectations.ratelimit), beside the bulkhead mode.
	RateLimitCondition Role = "ratelimit.condition"
	RateLimitMode      Role = "ratelimit.mode"
	// The memory claim's: its condition, the mode with no bound and the
	// bounded mode it is compared with (expectations.memory).
	MemoryCondition Role = "memory.condition"
	MemoryMode      Role = "memory.mode"
	MemoryControl   Role = "memory.control"
)

// A Section is a part of the expectations that names a claim's runs: a
// claim that needs one is judged only when the experiment fills it in.
// Sections are compared by value.
type Section struct {
	// Key is where it is under expectations ("policy.breaker"); Names what
	// it must name there ("its runs").
	Key, Names string
}

// String is the requirement as validate states it: "expectations.conns
// names its runs".
func (s Section) String() string { return "expectations." + s.Key + " names " + s.Names }

// The sections the claim families are named by.
var (
	BreakerRuns    = Section{"policy.breaker", "its runs"}
	AdaptiveRuns   = Section{"policy.adaptive", "its runs"}
	RetryRuns      = Section{"policy.retry", "its runs"}
	ContainedModes = Section{"policy.retry.contained", "the modes it judges"}
	SizingSweep    = Section{"sizing", "a swept mode"}
	ConnsRuns      = Section{"conns", "its runs"}
	ConnsSizedRuns = Section{"conns", "its sized and over modes"}
	CPURuns        = Section{"cpu", "its condition"}
	FleetRuns      = Section{"fleet", "the fleets compared"}
	BudgetMode     = Section{"fleet.budget", "the remedy's mode"}
	PriorityRuns   = Section{"priority", "its condition and modes"}
	RateLimitRuns  = Section{"ratelimit", "its rate-limited mode"}
	MemoryRuns     = Section{"memory", "its unbounded mode"}
	// TenantsRuns and TenantsSharedMode name the tenant claims' runs.
	TenantsRuns       = Section{"tenants", "its condition and partitioned modes"}
	TenantsSharedMode = Section{"tenants.shared", "the mode without partitions"}
	// JobsRuns and JobsSharedMode name the background-job claims' runs.
	JobsRuns       = Section{"jobs", "its condition and bounded modes"}
	JobsSharedMode = Section{"jobs.shared", "the mode whose jobs share the request pools"}
	// ProcessesRuns names the processes claim's conditions and modes.
	ProcessesRuns = Section{"processes", "its CPU condition"}
)

// A Sight is what of the service a claim must see beyond the results of
// its cells' runs.
type Sight int

// The sights.
const (
	// SeesResults: the results alone.
	SeesResults Sight = iota
	// SeesRecovery: a recovery phase long enough to tell an endpoint back
	// at its baseline.
	SeesRecovery
	// SeesPermits: the permits in use (the service's pool metrics, or probe
	// bursts).
	SeesPermits
	// SeesLimits: a limit that exists (declared or exported, or probe
	// bursts).
	SeesLimits
)

// Needs is what an experiment must hold for a claim to be decided.
type Needs struct {
	// Sections must all be filled in, in order: the first that is not
	// says why the claim is not judged.
	Sections []Section
	// Conditions and Modes are the roles of the cells the claim compares:
	// every condition × every mode, conditions first. A claim with none
	// compares the cells its sections name (their validation checks them
	// against the matrix) or, with a Sight, judges every cell.
	Conditions, Modes []Role
	// Sees is what of the service it must see.
	Sees Sight
}

// Zero reports whether n asks for nothing: no claim may be registered so.
func (n Needs) Zero() bool {
	return len(n.Sections) == 0 && len(n.Conditions) == 0 && len(n.Modes) == 0 && n.Sees == SeesResults
}

// Claim is one registered claim.
type Claim struct {
	Name   string
	Family Family
	Needs  Needs
}

// registry holds every claim in report order: a new claim is one entry
// here and its decision in analysis/verdict.
var registry = []Claim{
	{P1, Hypothesis, Needs{Conditions: []Role{Slow}, Modes: []Role{SharedMode}}},
	{P2, Hypothesis, Needs{Conditions: []Role{Slow}, Modes: []Role{BulkheadMode}}},
	{FailFast, Hypothesis, Needs{Conditions: []Role{Slow}, Modes: []Role{BulkheadMode}}},
	{P3, Hypothesis, Needs{Conditions: []Role{Busy}, Modes: []Role{SharedMode, BulkheadMode}}},
	{P4, Hypothesis, Needs{Conditions: []Role{Slow, Failing}, Modes: []Role{SharedMode, BulkheadMode}}},
	// EXHAUSTED of a service without metrics reads the limits inferred
	// from the proxies in the slow condition (a run where no cap showed is
	// INCONCLUSIVE, named): it needs no sight of its own.
	{Exhausted, Hypothesis, Needs{Conditions: []Role{Slow}, Modes: []Role{SharedMode, BulkheadMode}}},

	{Recovery, Aftermath, Needs{Sees: SeesRecovery}},
	{NoLeak, Aftermath, Needs{Sees: SeesPermits}},
	{LimitHolds, Aftermath, Needs{Sees: SeesLimits}},

	{BreakerLate, Policy, Needs{Sections: []Section{BreakerRuns}}},
	{BreakerIsolated, Policy, Needs{Sections: []Section{BreakerRuns}}},
	{AdaptiveIsolates, Policy, Needs{Sections: []Section{AdaptiveRuns}}},
	{AdaptiveCost, Policy, Needs{Sections: []Section{AdaptiveRuns}}},
	{RetryAmplifies, Policy, Needs{Sections: []Section{RetryRuns}}},
	{RetryHurts, Policy, Needs{Sections: []Section{RetryRuns}}},
	{RetryContained, Policy, Needs{Sections: []Section{RetryRuns, ContainedModes}}},

	{SizingTooSmall, Sizing, Needs{Sections: []Section{SizingSweep}}},
	{SizingTooLarge, Sizing, Needs{Sections: []Section{SizingSweep}}},
	{SizingLittle, Sizing, Needs{Sections: []Section{SizingSweep}}},

	{ConnsNoWall, Conns, Needs{Sections: []Section{ConnsRuns}}},
	{ConnsSized, Conns, Needs{Sections: []Section{ConnsRuns, ConnsSizedRuns}}},

	{CPUNotIsolated, CPU, Needs{Sections: []Section{CPURuns}, Conditions: []Role{CPUCondition, CPUControl}, Modes: []Role{CPUMode}}},

	{FleetMultiplies, Fleet, Needs{Sections: []Section{FleetRuns}}},
	{FleetBudget, Fleet, Needs{Sections: []Section{FleetRuns, BudgetMode}}},

	{PriorityReserved, Priority, Needs{Sections: []Section{PriorityRuns}}},
	{RateLimitNotBulkhead, RateLimit, Needs{Sections: []Section{RateLimitRuns}, Conditions: []Role{RateLimitCondition}, Modes: []Role{RateLimitMode, BulkheadMode}}},
	{UnboundedGrows, Memory, Needs{Sections: []Section{MemoryRuns}, Conditions: []Role{MemoryCondition}, Modes: []Role{MemoryMode, MemoryControl}}},
	{TenantsDoS, Tenants, Needs{Sections: []Section{TenantsRuns, TenantsSharedMode}}},
	{TenantsIsolated, Tenants, Needs{Sections: []Section{TenantsRuns}}},
	{JobsStarve, Jobs, Needs{Sections: []Section{JobsRuns, JobsSharedMode}}},
	{JobsIsolated, Jobs, Needs{Sections: []Section{JobsRuns}}},
	{ProcessWall, Processes, Needs{Sections: []Section{ProcessesRuns}}},
}

// All returns every claim in report order (a copy).
func All() []Claim {
	return append([]Claim(nil), registry...)
}

// Names returns every claim's name in report order.
func Names() []string {
	out := make([]string, len(registry))
	for i, c := range registry {
		out[i] = c.Name
	}
	return out
}

// Of returns the names of family f's claims in report order.
func Of(f Family) []string {
	var out []string
	for _, c := range registry {
		if c.Family == f {
			out = append(out, c.Name)
		}
	}
	return out
}

// Lookup returns the claim named name; false when there is none.
func Lookup(name string) (Claim, bool) {
	for _, c := range registry {
		if c.Name == name {
			return c, true
		}
	}
	return Claim{}, false
}
