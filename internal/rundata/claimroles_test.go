package rundata

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// named fills in every section of the expectations with distinct names.
func named() Expectations {
	e := DefaultExpectations()
	e.Policy = &PolicyClaims{
		Breaker:  &BreakerRoles{Condition: "hang", Shared: "shared-breaker", Bulkhead: "bulkhead-breaker"},
		Adaptive: &AdaptiveRoles{Mode: "adaptive"},
		Retry:    &RetryRoles{Condition: "hang", Control: "shared", Storm: "shared-retry", Contained: []string{"shared-retry-budget"}},
	}
	e.Sizing = &SizingRoles{Mode: "limited"}
	e.Conns = &ConnsRoles{Condition: "slow", NoWall: "one-pool", Walled: "two-pools", Sized: "sized", Over: "over"}
	e.CPU = &CPURoles{Condition: "payload"}
	e.Fleet = &FleetRoles{Modes: []string{"fleet"}, Budget: "budget", Condition: "busy"}
	e.Priority = &PriorityRoles{Condition: "surge", Reserved: "reserved", Unreserved: "shared"}
	e.RateLimit = &RateLimitRoles{}
	e.Memory = &MemoryRoles{}
	e.Tenants = &TenantsRoles{Condition: "surge", Shared: "shared", Isolated: []string{"partitioned"}}
	e.Jobs = &JobsRoles{Condition: "drain", Shared: "shared-workers", Bounded: []string{"own-workers"}}
	e.Processes = &ProcessesRoles{CPU: "payload"}
	return e
}

// TestClaimSectionsAndRoles: every section and role a registered claim
// needs resolves on expectations that name everything, and no section on
// expectations that name none: a claim registered with a section these
// expectations do not know is never judged.
func TestClaimSectionsAndRoles(t *testing.T) {
	full, none := named(), DefaultExpectations()
	for _, c := range claims.All() {
		for _, s := range c.Needs.Sections {
			if !full.Names(s) {
				t.Errorf("%s: section %s is not filled in by expectations naming everything", c.Name, s)
			}
			if none.Names(s) {
				t.Errorf("%s: section %s is filled in by the defaults", c.Name, s)
			}
		}
		if !full.NamesAll(c) {
			t.Errorf("%s: not judged with every section named", c.Name)
		}
		conds, modes := full.Cells(c)
		if len(conds) != len(c.Needs.Conditions) || len(modes) != len(c.Needs.Modes) {
			t.Errorf("%s: cells %v × %v for roles %v × %v", c.Name, conds, modes, c.Needs.Conditions, c.Needs.Modes)
		}
		for _, name := range append(conds, modes...) {
			if name == "" {
				t.Errorf("%s: a role of %v × %v names nothing", c.Name, c.Needs.Conditions, c.Needs.Modes)
			}
		}
	}
	// Sections that need more than their parent: each is its own test.
	for _, tt := range []struct {
		s    claims.Section
		edit func(*Expectations)
	}{
		{claims.ContainedModes, func(e *Expectations) { e.Policy.Retry.Contained = nil }},
		{claims.ConnsSizedRuns, func(e *Expectations) { e.Conns.Over = "" }},
		{claims.BudgetMode, func(e *Expectations) { e.Fleet.Budget = "" }},
		{claims.TenantsSharedMode, func(e *Expectations) { e.Tenants.Shared = "" }},
		{claims.JobsSharedMode, func(e *Expectations) { e.Jobs.Shared = "" }},
	} {
		e := named()
		tt.edit(&e)
		if e.Names(tt.s) {
			t.Errorf("section %s filled in without what it names", tt.s)
		}
	}
}

// TestCPURolesDefault: the CPU claim's control and mode default as its
// verdict reads them.
func TestCPURolesDefault(t *testing.T) {
	e := DefaultExpectations()
	if got := e.Role(claims.CPUCondition); got != "" {
		t.Errorf("CPU condition without expectations.cpu: %q, want none", got)
	}
	e.CPU = &CPURoles{Condition: "payload"}
	c, _ := claims.Lookup(claims.CPUNotIsolated)
	conds, modes := e.Cells(c)
	if len(conds) != 2 || conds[0] != "payload" || conds[1] != e.Healthy || len(modes) != 1 || modes[0] != "bulkhead" {
		t.Errorf("CPU cells %v × %v, want [payload healthy] × [bulkhead]", conds, modes)
	}
}

// TestTenantRolesDefault: the tenant claims' control, noisy and quiet
// tenants default to the expectations' healthy condition, culprit and
// victim; what is written stays.
func TestTenantRolesDefault(t *testing.T) {
	e := DefaultExpectations()
	if e.TenantRoles() != nil {
		t.Fatal("tenant roles without expectations.tenants")
	}
	e.Victim, e.Culprit = "quiet", "noisy"
	e.Tenants = &TenantsRoles{Condition: "surge", Isolated: []string{"partitioned"}}
	r := e.TenantRoles()
	if r.Control != "healthy" || r.Noisy != "noisy" || len(r.Quiet) != 1 || r.Quiet[0] != "quiet" {
		t.Errorf("defaults %+v, want control healthy, noisy noisy, quiet [quiet]", *r)
	}
	e.Tenants = &TenantsRoles{Condition: "surge", Control: "calm", Noisy: "batch", Quiet: []string{"q1", "q2"}}
	if r := e.TenantRoles(); r.Control != "calm" || r.Noisy != "batch" || len(r.Quiet) != 2 {
		t.Errorf("written roles changed: %+v", *r)
	}
	if e.Tenants.Control != "calm" || e.Tenants.Quiet[1] != "q2" {
		t.Error("TenantRoles changed the expectations")
	}
}

// TestJobsRolesDefault: the job claims' control and live endpoints default
// to the expectations' healthy condition and victim; what is written stays.
func TestJobsRolesDefault(t *testing.T) {
	e := DefaultExpectations()
	if e.JobsRoles() != nil {
		t.Fatal("job roles without expectations.jobs")
	}
	e.Victim = "checkout"
	e.Jobs = &JobsRoles{Condition: "drain", Bounded: []string{"own"}}
	r := e.JobsRoles()
	if r.Control != "healthy" || len(r.Live) != 1 || r.Live[0] != "checkout" {
		t.Errorf("defaults %+v, want control healthy, live [checkout]", *r)
	}
	e.Jobs = &JobsRoles{Condition: "drain", Control: "calm", Bounded: []string{"own"}, Live: []string{"checkout", "invoice"}}
	if r := e.JobsRoles(); r.Control != "calm" || len(r.Live) != 2 {
		t.Errorf("written roles changed: %+v", *r)
	}
	if e.Jobs.Control != "calm" || e.Jobs.Live[1] != "invoice" {
		t.Error("JobsRoles changed the expectations")
	}
}
