package measure

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Whether the pool ran out first (Exhaustion.PoolFirst), as EXHAUSTED reads
// it.
const (
	PoolFirstYes     = "yes"
	PoolFirstNo      = "no"
	PoolFirstUnknown = "unknown"
)

// PoolFirstRule documents how EXHAUSTED tells a pool from what else ran out
// first; the report prints it with the exhaustion rules.
const PoolFirstRule = "the pool ran out first when the first resource is a pool the service exports; a limit inferred from the proxies when it equals a declared pool's size (within the plateau's tolerance), or whenever no pool is declared (the cap is then the service's bulkhead, whatever it is built of; one that matches no declared pool cannot be told apart from a limit of another kind); " +
	"for a service that exports its connection pools and no worker pools, a connection pool when it is its bulkhead (it equals a declared pool, or none is declared) — the same gauges give the same answer under external.metrics.in_use and external.metrics.conns"

// poolFirstRule decides whether a pool, not the dependency, ran out first.
type poolFirstRule struct{ run *rundir.Run }

// poolFirst says whether the pool ran out first in e, and why not or why it
// cannot be told.
func (pf poolFirstRule) poolFirst(e Exhaustion, inferred []InferredLimit) (string, string) {
	switch e.Resource {
	case ResourcePool:
		return PoolFirstYes, ""
	case ResourceNotObservable:
		return PoolFirstUnknown, "the service's pools are not observable and no cap showed in the proxies: name its pool metrics under external.metrics"
	case ResourcePoolInferred:
		return pf.inferredIsPool(inferred)
	case ResourceConnections:
		if pf.run.Meta.External && !observesPools(pf.run) && len(e.Ranked) > 0 {
			return pf.connPoolIsPool(e.Ranked[0].Name)
		}
	}
	return PoolFirstNo, ""
}

// inferredIsPool judges the earliest limit inferred from the proxies.
func (pf poolFirstRule) inferredIsPool(inferred []InferredLimit) (string, string) {
	if len(inferred) == 0 {
		return PoolFirstUnknown, "no limit was inferred"
	}
	l := inferred[0]
	for _, x := range inferred[1:] {
		if x.AfterFaultS < l.AfterFaultS {
			l = x
		}
	}
	if declared := declaredSizes(pf.run); len(declared) > 0 {
		if matchesSize(l.Limit, declared) {
			return PoolFirstYes, ""
		}
		return PoolFirstUnknown, fmt.Sprintf("%s, which is no declared pool's size (%s): a limit of another kind?", l, joinInts(declared))
	}
	// With no pool declared, a cap seen from outside is the service's
	// bulkhead, whatever it is built of — a connection pool of the same
	// limit it exports included (its only pool is its bulkhead).
	return PoolFirstYes, ""
}

// connPoolIsPool judges a connection pool that ran out first in a service
// that exports no worker pools: it is the bulkhead when it equals a
// declared pool, or when none is declared.
func (pf poolFirstRule) connPoolIsPool(pool string) (string, string) {
	declared := declaredSizes(pf.run)
	if len(declared) == 0 {
		return PoolFirstYes, ""
	}
	lim := int(metricMax(pf.run, rundir.PoolKey(rundata.MetricConnPoolLimit, pool)))
	if matchesSize(lim, declared) {
		return PoolFirstYes, ""
	}
	return PoolFirstNo, fmt.Sprintf("connection pool %s (limit %d) is no declared pool (%s)", pool, lim, joinInts(declared))
}

// declaredSizes are the limits of the run's declared pools and their sums
// over pools sharing dependencies (a limit seen on A+B may be the sum of
// two pools).
func declaredSizes(run *rundir.Run) []int {
	var out []int
	sum := 0
	for _, p := range run.Meta.Pools {
		if p.Limit > 0 {
			out = append(out, p.Limit)
			sum += p.Limit
		}
	}
	if len(out) > 1 {
		out = append(out, sum)
	}
	return out
}

// matchesSize reports whether limit is one of sizes within the plateau's
// tolerance (an inferred cap can sit a permit below the pool's size).
func matchesSize(limit int, sizes []int) bool {
	return slices.ContainsFunc(sizes, func(s int) bool {
		return s > 0 && math.Abs(float64(limit-s)) <= plateauTol(float64(s))
	})
}

func joinInts(v []int) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}
