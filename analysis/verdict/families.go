package verdict

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// A decision is how the analysis judges one registered claim (package
// claims): the claim as the report states it, and its verdict from the
// runs. decide gets a builder that already holds the claim's name, its text
// and the cells its needs name (claims.Needs), in order; it adds any other
// cell it compares, its measures and notes, and decides.
type decision struct {
	name   string
	text   func(s *Summary) string
	decide func(b *builder, s *Summary) Verdict
}

// families are the claim families' decisions: each table is one file of
// this package, its run numbers one file of package measure. A new claim is
// its entry in package claims and its decision in its family's table; a new
// family is a table here and a line in measure's runFamilies.
var families = [][]decision{
	predictionDecisions, // predictions.go: P1–P4, FAILFAST, EXHAUSTED
	aftermathDecisions,  // aftermath.go: RECOVERY, NO-LEAK, LIMIT-HOLDS
	policyDecisions,     // policy.go: breakers, adaptive limits, retries
	sizingDecisions,     // sizing.go: the sizing curve's verdicts
	connsDecisions,      // conns.go: connection pools
	cpuDecisions,        // cpu.go: CPU not isolated
	fleetDecisions,      // fleet.go: the fleet's multiplication
	priorityDecisions,   // priority.go: permits reserved for the critical class
	rateLimitDecisions,  // ratelimit.go: a rate limiter is not a bulkhead
	memoryDecisions,     // memory.go: nothing bounds an event loop's awaits
	tenantDecisions,     // tenants.go: one tenant's load against the others
	jobsDecisions,       // jobs.go: a queue drain beside live traffic
	processesDecisions,  // processes.go: processes as walls, and what they cost
}

// decisionOf is every family's decision by claim name.
var decisionOf = func() map[string]decision {
	m := map[string]decision{}
	for _, f := range families {
		for _, d := range f {
			m[d.name] = d
		}
	}
	return m
}()

// judge returns the verdict of every registered claim whose sections the
// expectations fill in, in report order (claims.All).
func judge(s *Summary) []Verdict {
	var out []Verdict
	for _, c := range claims.All() {
		if s.Expectations.NamesAll(c) {
			out = append(out, judgeClaim(s, c))
		}
	}
	return out
}

// judgeClaim decides claim c on the summary's cells. A registered claim
// without a decision is a programming error (TestRegistryCoverage).
func judgeClaim(s *Summary, c claims.Claim) Verdict {
	d, ok := decisionOf[c.Name]
	if !ok {
		panic(fmt.Sprintf("verdict: claim %s is registered without a decision", c.Name))
	}
	b := newBuilder(c.Name, d.text(s), s.Cells, s.Expectations)
	conds, modes := s.Expectations.Cells(c)
	for _, cond := range conds {
		for _, mode := range modes {
			b.need([2]string{cond, mode})
		}
	}
	return d.decide(b, s)
}
