package measure

import (
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// PriorityRun is what a run held for the critical endpoint (the victim)
// and what that cost, over the fault phase: the permits held for it — those
// its pool reserves for the critical class (the service's priority stage),
// or, when it draws from a pool of its own, that pool — its demand on them
// by Little's law, and how many of them it left idle while the sheddable
// endpoint (the culprit) was refused.
type PriorityRun struct {
	// Pool is the pool the victim draws from; Size its permits.
	Pool string `json:"pool"`
	Size int    `json:"size"`
	// Reserved is the permits held for the victim: the pool's reserved
	// permits (0: none reserved), or a pool of its own's size
	// (Partition); null when the service's samples do not say.
	Reserved  Num  `json:"reserved"`
	Partition bool `json:"partition,omitempty"`
	// CriticalPerS is the victim's offered rate, CriticalCallMs the mean
	// duration of its dependency calls (how long each holds a permit: the
	// pool has no queue to wait in, or a short one), and CriticalDemand
	// their product: the permits its calls need, by Little's law.
	CriticalPerS   Num `json:"critical_per_s"`
	CriticalCallMs Num `json:"critical_call_ms"`
	CriticalDemand Num `json:"critical_demand"`
	// CriticalInFlight is the mean of the critical class's calls in the
	// pool (the stage's gauge), or of the victim's own pool's permits in
	// use.
	CriticalInFlight Num `json:"critical_in_flight"`
	// IdleReserved is the mean of the permits held for the victim that it
	// left unused (the stage's time integral of its idle reserved permits
	// over the phase; for a partition, its pool's free permits): permits a
	// sheddable call may not take. PredictedIdle is max(0, Reserved −
	// CriticalDemand).
	IdleReserved  Num `json:"idle_reserved"`
	PredictedIdle Num `json:"predicted_idle"`
	// SheddableRejectedShare and SheddableRejectedPerS are the culprit's
	// requests the service refused (its share over, or the pool full), of
	// its results and per second.
	SheddableRejectedShare Num `json:"sheddable_rejected_share"`
	SheddableRejectedPerS  Num `json:"sheddable_rejected_per_s"`
}

// priorityFamily adds what the run held for the critical endpoint, when
// the experiment names the priority claim.
func priorityFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	if ex.Priority != nil {
		s.Priority = priorityStats(r, ex, s.Endpoint(ex.Victim), s.Endpoint(ex.Culprit))
	}
}

// priorityStats computes the run's PriorityRun for the victim ex.Victim
// (critical) and the culprit ex.Culprit (sheddable).
func priorityStats(run *rundir.Run, ex rundata.Expectations, victim, culprit EndpointStats) *PriorityRun {
	pool := run.EndpointInfo(ex.Victim).Pool
	info := run.PoolInfo(pool)
	p := &PriorityRun{Pool: pool, Size: info.Limit, Reserved: Undefined, CriticalPerS: Undefined, CriticalCallMs: Undefined,
		CriticalDemand: Undefined, CriticalInFlight: Undefined, IdleReserved: Undefined, PredictedIdle: Undefined,
		SheddableRejectedShare: RejectedShare(culprit), SheddableRejectedPerS: Undefined}
	from, ok := run.FaultStart()
	if !ok {
		from = run.Origin()
	}
	to := run.FaultEnd()
	secs := to.Sub(from).Seconds()
	if secs > 0 {
		p.CriticalPerS = Num(float64(victim.FaultCounts.Total()) / secs)
		p.SheddableRejectedPerS = Num(float64(culprit.FaultCounts[rundata.ClassRejected]) / secs)
	}
	l := rundata.L("dependency", ex.Victim)
	sum, ok1 := rundir.DeltaOver(run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationSum, l)), from, to)
	cnt, ok2 := rundir.DeltaOver(run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationCount, l)), from, to)
	if ok1 && ok2 && cnt > 0 {
		p.CriticalCallMs = Num(1000 * sum / cnt)
		p.CriticalDemand = p.CriticalPerS * p.CriticalCallMs / 1000
	}
	svc := rundata.ServiceComponent
	switch reserved := run.Metric(svc, rundir.PoolKey(rundata.MetricPriorityReserved, pool)); {
	case len(reserved) > 0:
		p.Reserved = Num(reserved[len(reserved)-1].Value)
		p.CriticalInFlight = meanOver(run.Metric(svc, rundata.Key(rundata.MetricPriorityInflight,
			rundata.L("pool", pool), rundata.L("class", rundata.PriorityCritical))), from, to)
		p.IdleReserved = rateOver(run.Metric(svc, rundir.PoolKey(rundata.MetricPriorityIdleSeconds, pool)), from, to)
	case len(info.Endpoints) == 1 && info.Endpoints[0] == ex.Victim && info.Limit > 0:
		p.Reserved, p.Partition = Num(info.Limit), true
		p.CriticalInFlight = meanOver(run.Metric(svc, rundir.PoolKey(rundata.MetricPoolInUse, pool)), from, to)
		p.IdleReserved = Num(float64(info.Limit)) - p.CriticalInFlight
	case observes(run, rundata.MetricPoolLimit):
		// A pool the service exports without a priority stage: nothing is
		// held for the victim, and nothing of it is idle.
		p.Reserved, p.IdleReserved = 0, 0
	}
	if res, d := float64(p.Reserved), float64(p.CriticalDemand); !math.IsNaN(res) && !math.IsNaN(d) {
		p.PredictedIdle = Num(max(0, res-d))
	}
	return p
}

// rateOver is the increase per second of a counter series between its
// samples nearest from and to (the latest at or before each): the mean of
// the gauge the counter integrates over that span.
func rateOver(s []rundir.Point, from, to time.Time) Num {
	a, b := latestAt(s, from), latestAt(s, to)
	if a < 0 || b < 0 || !s[b].Time.After(s[a].Time) {
		return Undefined
	}
	return Num((s[b].Value - s[a].Value) / s[b].Time.Sub(s[a].Time).Seconds())
}

// latestAt is the index of the latest point at or before t, −1 for none.
func latestAt(s []rundir.Point, t time.Time) int {
	i := -1
	for j, p := range s {
		if p.Time.After(t) {
			break
		}
		i = j
	}
	return i
}
