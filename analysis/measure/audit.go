package measure

import (
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// FirstDegradedS is the time, in seconds from fault start, to the end of
// endpoint ep's first window in the fault phase whose p99 rose by riseT ×
// T above the lower of its baseline p99 and refP99Ms (the control run's
// p99; NaN: none), or whose error rate reached errRate: a blast-radius
// audit's time to degrade, by the audit's absolute thresholds. NaN when
// no window did, or the run had no fault.
func FirstDegradedS(data *rundir.Run, ep string, riseT, errRate, refP99Ms float64) Num {
	rise := riseT * Millis(data.Meta.Timeout)
	d, ok := endpointWindows{data}.firstDegraded(ep, func(w rundata.Window, base float64) bool {
		if refP99Ms > 0 && (!(base > 0) || refP99Ms < base) {
			base = refP99Ms
		}
		tot := w.Counts.Total()
		return tot > 0 && (float64(w.Counts.Failed())/float64(tot) >= errRate || (base > 0 && Millis(w.Latency.P99) >= base+rise))
	})
	if !ok {
		return Undefined
	}
	return Num(d.Seconds())
}

// EndpointPool is the pool endpoint ep draws from in the run ("" if the
// run does not say).
func EndpointPool(data *rundir.Run, ep string) string {
	for _, e := range data.Meta.Endpoints {
		if e.Name == ep {
			return e.Pool
		}
	}
	return ""
}

// sharedPoolName is the name of the built-in service's pool (and
// connection pool) that every endpoint shares.
const sharedPoolName = "shared"

// ResourceOf is the first resource of the run's exhaustion ranking that
// endpoint ep draws on: its pool, its connection pool (its own or the
// shared one), a limit inferred from the proxies over a dependency it
// calls, or a process-wide one (CPU, memory); for a service whose pools
// are not observed, a limit inferred over a dependency it calls; else the
// first one ranked (another endpoint's, the shared resource being
// unobserved). A limit inferred over dependencies ep does not call is not
// its resource. Empty when none ran out.
func ResourceOf(s RunSummary, data *rundir.Run, ep string) ResourceHit {
	pool := EndpointPool(data, ep)
	calls := callGraph{data}.calls()[ep]
	drawsOn := func(h ResourceHit) bool {
		if h.Resource == ResourcePoolInferred {
			return slices.ContainsFunc(strings.Split(h.Name, "+"), func(d string) bool { _, ok := calls[d]; return ok })
		}
		return h.Name == "" || h.Name == pool || h.Name == ep || h.Name == sharedPoolName
	}
	var inferred []ResourceHit
	for _, l := range s.Inferred {
		inferred = append(inferred, l.hit())
	}
	for _, hs := range [][]ResourceHit{s.Exhausted.Ranked, inferred} {
		for _, h := range hs {
			if drawsOn(h) {
				return h
			}
		}
	}
	if len(s.Exhausted.Ranked) > 0 {
		return s.Exhausted.Ranked[0]
	}
	return ResourceHit{}
}
