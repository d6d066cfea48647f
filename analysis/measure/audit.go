package measure

import (
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// FirstDegradedS is the time, in seconds from fault start, to the end of
// endpoint ep's first window in the fault phase whose p99 rose above its
// baseline p99 by riseT × T or whose error rate reached errRate: a blast-
// radius audit's time to degrade, by the audit's absolute thresholds. NaN
// when no window did, or the run had no fault.
func FirstDegradedS(data *rundir.Run, ep string, riseT, errRate float64) Num {
	r := Run{data}
	rise := riseT * Millis(r.Meta.Timeout)
	d, ok := r.firstDegraded(ep, func(w rundata.Window, base float64) bool {
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
// shared one), or a process-wide one (CPU, memory); else the first one
// ranked (another endpoint's, the shared resource being unobserved). Empty
// when none ran out.
func ResourceOf(s RunSummary, data *rundir.Run, ep string) ResourceHit {
	pool := EndpointPool(data, ep)
	for _, h := range s.Exhausted.Ranked {
		if h.Name == "" || h.Name == pool || h.Name == ep || h.Name == sharedPoolName {
			return h
		}
	}
	if len(s.Exhausted.Ranked) > 0 {
		return s.Exhausted.Ranked[0]
	}
	return ResourceHit{}
}
