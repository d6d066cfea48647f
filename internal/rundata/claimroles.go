package rundata

import "github.com/bulkheadlab/bulkheadlab/internal/claims"

// Role is the condition or mode the expectations name for role r; "" when
// they name none (the CPU roles without expectations.cpu).
func (e Expectations) Role(r claims.Role) string {
	var cpu CPURoles
	if e.CPU != nil {
		cpu = e.CPU.WithDefaults(e.Healthy)
	}
	switch r {
	case claims.Healthy:
		return e.Healthy
	case claims.Slow:
		return e.Slow
	case claims.Failing:
		return e.Failing
	case claims.Busy:
		return e.Busy
	case claims.SharedMode:
		return e.SharedMode
	case claims.BulkheadMode:
		return e.BulkheadMode
	case claims.CPUCondition:
		return cpu.Condition
	case claims.CPUControl:
		return cpu.Control
	case claims.CPUMode:
		return cpu.Mode
	case claims.RateLimitCondition, claims.RateLimitMode:
		return e.rateLimitRole(r)
	case claims.MemoryCondition, claims.MemoryMode, claims.MemoryControl:
		return e.memoryRole(r)
	}
	return ""
}

// Names reports whether the expectations fill in section s, naming the
// runs of the claims that need it.
func (e Expectations) Names(s claims.Section) bool {
	p := e.Policy
	switch s {
	case claims.BreakerRuns:
		return p != nil && p.Breaker != nil
	case claims.AdaptiveRuns:
		return p != nil && p.Adaptive != nil
	case claims.RetryRuns:
		return p != nil && p.Retry != nil
	case claims.ContainedModes:
		return p != nil && p.Retry != nil && len(p.Retry.Contained) > 0
	case claims.SizingSweep:
		return e.Sizing != nil
	case claims.ConnsRuns:
		return e.Conns != nil
	case claims.ConnsSizedRuns:
		return e.Conns != nil && e.Conns.Sized != "" && e.Conns.Over != ""
	case claims.CPURuns:
		return e.CPU != nil
	case claims.FleetRuns:
		return e.Fleet != nil
	case claims.BudgetMode:
		return e.Fleet != nil && e.Fleet.Budget != ""
	case claims.PriorityRuns:
		return e.Priority != nil
	case claims.RateLimitRuns:
		return e.RateLimit != nil
	case claims.MemoryRuns:
		return e.Memory != nil
	case claims.TenantsRuns:
		return e.Tenants != nil
	case claims.TenantsSharedMode:
		return e.Tenants != nil && e.Tenants.Shared != ""
	case claims.JobsRuns:
		return e.Jobs != nil
	case claims.JobsSharedMode:
		return e.Jobs != nil && e.Jobs.Shared != ""
	case claims.ProcessesRuns:
		return e.Processes != nil
	}
	return false
}

// NamesAll reports whether the expectations fill in every section claim c
// needs: whether it is judged at all.
func (e Expectations) NamesAll(c claims.Claim) bool {
	for _, s := range c.Needs.Sections {
		if !e.Names(s) {
			return false
		}
	}
	return true
}

// Cells are the conditions and modes claim c compares, as these
// expectations name its roles: every condition × every mode.
func (e Expectations) Cells(c claims.Claim) (conds, modes []string) {
	for _, r := range c.Needs.Conditions {
		conds = append(conds, e.Role(r))
	}
	for _, r := range c.Needs.Modes {
		modes = append(modes, e.Role(r))
	}
	return conds, modes
}
