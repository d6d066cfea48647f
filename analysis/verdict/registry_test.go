package verdict

import (
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// verdictOn judges registered claim name on cells under ex, as Evaluate
// does.
func verdictOn(t testing.TB, name string, cells []Cell, ex rundata.Expectations) Verdict {
	t.Helper()
	c, ok := claims.Lookup(name)
	if !ok {
		t.Fatalf("no claim %s registered", name)
	}
	return judgeClaim(&Summary{Cells: cells, Expectations: ex}, c)
}

// everyRole fills in every section of the expectations.
func everyRole() rundata.Expectations {
	e := rundata.DefaultExpectations()
	e.Policy = &rundata.PolicyClaims{
		Breaker:  &rundata.BreakerRoles{Condition: "hang", Shared: "shared-breaker", Bulkhead: "bulkhead-breaker"},
		Adaptive: &rundata.AdaptiveRoles{Mode: "adaptive"},
		Retry:    &rundata.RetryRoles{Condition: "hang", Control: "shared", Storm: "shared-retry", Contained: []string{"shared-retry-budget"}},
	}
	e.Sizing = &rundata.SizingRoles{Mode: "limited"}
	e.Conns = &rundata.ConnsRoles{Condition: "slow", NoWall: "one-pool", Walled: "two-pools", Sized: "sized", Over: "over"}
	e.CPU = &rundata.CPURoles{Condition: "payload"}
	e.Fleet = &rundata.FleetRoles{Modes: []string{"fleet"}, Budget: "budget", Condition: "busy"}
	e.Priority = &rundata.PriorityRoles{Condition: "surge", Reserved: "reserved", Unreserved: "shared"}
	e.RateLimit = &rundata.RateLimitRoles{}
	e.Memory = &rundata.MemoryRoles{}
	e.Tenants = &rundata.TenantsRoles{Condition: "batch", Shared: "shared", Isolated: []string{"partitioned"}}
	e.Jobs = &rundata.JobsRoles{Condition: "drain", Shared: "shared-workers", Bounded: []string{"own-workers"}}
	e.Processes = &rundata.ProcessesRoles{CPU: "payload"}
	return e
}

// TestRegistryCoverage: the decisions are exactly the registered claims,
// each with a text and a decision, and the analysis judges exactly the
// registered claims whose sections the expectations fill in, in the
// registry's order, each stating its claim: a claim added to the registry
// or to a family's table alone fails here.
func TestRegistryCoverage(t *testing.T) {
	registered := map[string]bool{}
	for _, n := range claims.Names() {
		registered[n] = true
		if _, ok := decisionOf[n]; !ok {
			t.Errorf("claim %s is registered without a decision in any family's table", n)
		}
	}
	count := 0
	for _, f := range families {
		for _, d := range f {
			count++
			switch {
			case !registered[d.name]:
				t.Errorf("decision %q is not a registered claim (package claims)", d.name)
			case d.text == nil || d.decide == nil:
				t.Errorf("decision %s lacks its text or its decision", d.name)
			}
		}
	}
	if count != len(decisionOf) {
		t.Errorf("%d decisions for %d claims: a claim is decided twice", count, len(decisionOf))
	}

	for _, tt := range []struct {
		name string
		ex   rundata.Expectations
	}{
		{"every section named", everyRole()},
		{"no section named", rundata.DefaultExpectations()},
		{"retries without contained modes", func() rundata.Expectations {
			e := everyRole()
			e.Policy.Retry.Contained = nil
			return e
		}()},
		{"a fleet without a budget", func() rundata.Expectations {
			e := everyRole()
			e.Fleet.Budget = ""
			return e
		}()},
		{"tenants without a shared mode", func() rundata.Expectations {
			e := everyRole()
			e.Tenants.Shared = ""
			return e
		}()},
		{"jobs without a shared mode", func() rundata.Expectations {
			e := everyRole()
			e.Jobs.Shared = ""
			return e
		}()},
	} {
		var want []string
		for _, c := range claims.All() {
			if tt.ex.NamesAll(c) {
				want = append(want, c.Name)
			}
		}
		s := Summary{Expectations: tt.ex, Sizing: buildSizing(nil, nil, tt.ex)}
		var got []string
		for _, v := range judge(&s) {
			got = append(got, v.Name)
			if v.Claim == "" || v.Outcome == "" {
				t.Errorf("%s: %s has claim %q, outcome %q", tt.name, v.Name, v.Claim, v.Outcome)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: judged %v, want %v", tt.name, got, want)
		}
	}
}

// TestRegisteredCellsAreJudged: a claim whose needs name its cells' roles
// is judged on exactly those cells, conditions first: with none of them
// in the matrix it is SKIPPED naming each.
func TestRegisteredCellsAreJudged(t *testing.T) {
	ex := everyRole()
	for _, c := range claims.All() {
		conds, modes := ex.Cells(c)
		if len(conds) == 0 {
			continue
		}
		var cells []string
		for _, cond := range conds {
			for _, m := range modes {
				cells = append(cells, cond+"/"+m)
			}
		}
		v := verdictOn(t, c.Name, nil, ex)
		if want := "no complete run of " + strings.Join(cells, ", "); v.Outcome != Skipped || v.Reason != want {
			t.Errorf("%s on no cells: %s (%s), want SKIPPED (%s)", c.Name, v.Outcome, v.Reason, want)
		}
	}
}
