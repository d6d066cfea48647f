package measure

import (
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// JobsRun is what the built-in service's job queue did in one run (from
// its metrics, rundata.MetricJobs*) and what the live traffic got while
// the queue drained: seed-004's "bound background and job workloads
// separately from request-serving, so a queue drain cannot starve live
// traffic".
type JobsRun struct {
	// Mode is where the jobs ran (rundata.JobsShared: on the request
	// pools; rundata.JobsOwn: on workers of their own), Workers the most
	// that ran at once.
	Mode    string `json:"mode"`
	Workers int    `json:"workers"`
	// Endpoint is the service's endpoint through which the jobs called
	// their dependency; Count the jobs the condition sent (0: none).
	Endpoint string `json:"endpoint,omitempty"`
	Count    int    `json:"count"`
	// Enqueued are the jobs the queue accepted over the run, Refused those
	// it had no room for.
	Enqueued Num `json:"enqueued"`
	Refused  Num `json:"refused"`
	// StartedInFault, DoneInFault and FailedInFault are the jobs a worker
	// took, that succeeded and that failed over the fault phase;
	// DonePerS the succeeded ones per second of it.
	StartedInFault Num `json:"started_in_fault"`
	DoneInFault    Num `json:"done_in_fault"`
	FailedInFault  Num `json:"failed_in_fault"`
	DonePerS       Num `json:"done_per_s"`
	// PeakDepth is the most jobs waiting in any sample of the fault phase,
	// DepthAtFaultEnd those waiting at its end; MeanBusy the mean of the
	// workers running a job (in shared mode, holding or waiting for a
	// permit) over the drain.
	PeakDepth       Num `json:"peak_depth"`
	DepthAtFaultEnd Num `json:"depth_at_fault_end"`
	MeanBusy        Num `json:"mean_busy_workers"`
	// DrainS is the time from the burst until the queue was empty and no
	// worker busy (to within a sample interval); null when that did not
	// happen by the run's end, and Left the jobs still queued or running
	// at its last sample.
	DrainS Num `json:"drain_s"`
	Left   Num `json:"left"`
	// DrainFrom and DrainTo are the span the live numbers cover: from the
	// burst to the drain's end or the fault phase's, whichever is first.
	DrainFrom time.Time `json:"drain_from,omitzero"`
	DrainTo   time.Time `json:"drain_to,omitzero"`
	// Live is each endpoint's traffic over that span.
	Live []LiveInDrain `json:"live,omitempty"`
}

// LiveInDrain is one endpoint's results while the queue drained.
type LiveInDrain struct {
	Endpoint string `json:"endpoint"`
	Results  int64  `json:"results"`
	// OKShare is the share of its results that were ok; P99Ms the p99 of
	// their latencies.
	OKShare Num `json:"ok_share"`
	P99Ms   Num `json:"p99_ms"`
}

// jobsFamily adds the job queue's numbers to a run whose service had one.
func jobsFamily(r *rundir.Run, s *RunSummary, _ rundata.Expectations) {
	if r.Meta.Jobs != nil {
		s.Jobs = jobQueue{r}.jobsStats(*r.Meta.Jobs)
	}
}

// jobQueue reads the service's job queue and the live traffic beside its
// drain.
type jobQueue struct{ run *rundir.Run }

// jobsStats computes the run's JobsRun.
func (jq jobQueue) jobsStats(info rundata.JobsInfo) *JobsRun {
	j := &JobsRun{Mode: info.Mode, Workers: info.Workers, Endpoint: info.Endpoint, Count: info.Count,
		Enqueued: Undefined, Refused: Undefined, StartedInFault: Undefined, DoneInFault: Undefined, FailedInFault: Undefined,
		DonePerS: Undefined, PeakDepth: Undefined, DepthAtFaultEnd: Undefined, MeanBusy: Undefined, DrainS: Undefined, Left: Undefined}
	svc := rundata.ServiceComponent
	sum := func(name string) []rundir.Point { return jq.run.MetricSum(svc, name) }
	enq, depth, busy := sum(rundata.MetricJobsEnqueued), jq.run.Metric(svc, rundata.MetricJobsQueueDepth), jq.run.Metric(svc, rundata.MetricJobsBusy)
	if len(depth) == 0 {
		return j // the service exported nothing of its queue
	}
	from, ok := jq.run.FaultStart()
	if !ok {
		from = jq.run.Origin()
	}
	to := jq.run.FaultEnd()
	end := jq.run.End()
	// The counters start at 0 with the service: their last values are
	// the run's.
	if len(enq) > 0 {
		j.Enqueued = Num(enq[len(enq)-1].Value)
	}
	if ref := sum(rundata.MetricJobsRefused); len(ref) > 0 {
		j.Refused = Num(ref[len(ref)-1].Value)
	}
	delta := func(name string) Num {
		if d, ok := rundir.DeltaOver(sum(name), from, to); ok {
			return Num(d)
		}
		return Undefined
	}
	j.StartedInFault, j.DoneInFault, j.FailedInFault = delta(rundata.MetricJobsStarted), delta(rundata.MetricJobsDone), delta(rundata.MetricJobsFailed)
	if secs := to.Sub(from).Seconds(); secs > 0 {
		j.DonePerS = j.DoneInFault / Num(secs)
	}
	peak := math.NaN()
	for _, p := range depth {
		if inRange(p.Time, from, to) && (math.IsNaN(peak) || p.Value > peak) {
			peak = p.Value
		}
	}
	j.PeakDepth = Num(peak)
	if v, ok := rundir.ValueAt(depth, to); ok {
		j.DepthAtFaultEnd = Num(v)
	}
	if info.Count == 0 {
		return j
	}
	// The drain: from the burst until a sample after it saw the queue
	// empty and every worker idle.
	burst := from.Add(info.At)
	before := 0.0 // the jobs accepted before the burst (the counter starts at 0 with the service)
	arrived := time.Time{}
	for _, p := range enq {
		if p.Time.Before(burst) {
			before = p.Value
			continue
		}
		if p.Value > before {
			arrived = p.Time
			break
		}
	}
	drained := time.Time{}
	if !arrived.IsZero() {
		for i, p := range depth {
			b, ok := rundir.ValueAt(busy, p.Time)
			if !p.Time.Before(arrived) && p.Value == 0 && ok && b == 0 {
				drained = depth[i].Time
				break
			}
		}
	}
	if drained.IsZero() {
		if last := len(depth) - 1; last >= 0 {
			b, _ := rundir.ValueAt(busy, depth[last].Time)
			j.Left = Num(depth[last].Value + b)
		}
	} else {
		j.DrainS, j.Left = Num(drained.Sub(burst).Seconds()), 0
	}
	j.DrainFrom, j.DrainTo = burst, to
	if !drained.IsZero() && drained.Before(to) {
		j.DrainTo = drained
	}
	if drained.IsZero() && end.Before(j.DrainTo) {
		j.DrainTo = end
	}
	j.MeanBusy = meanOver(busy, j.DrainFrom, j.DrainTo)
	for _, ep := range jq.run.Endpoints() {
		j.Live = append(j.Live, jq.liveInDrain(ep, j.DrainFrom, j.DrainTo))
	}
	return j
}

// liveInDrain is endpoint ep's results in its windows that start within
// [from, to): its ok share and p99.
func (jq jobQueue) liveInDrain(ep string, from, to time.Time) LiveInDrain {
	l := LiveInDrain{Endpoint: ep, OKShare: Undefined, P99Ms: Undefined}
	var ws []rundata.Window
	for _, w := range jq.run.EndpointWindows(ep) {
		if !w.Start.Before(from) && w.Start.Before(to) {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return l
	}
	m := mergeWindows(ws)
	if l.Results = m.Counts.Total(); l.Results > 0 {
		l.OKShare = Num(float64(m.Counts[rundata.ClassOK]) / float64(l.Results))
		l.P99Ms = Num(Millis(m.Latency.P99))
	}
	return l
}

// JobsOf returns r's job numbers, nil when its service had no queue.
func JobsOf(r RunSummary) *JobsRun { return r.Jobs }

// LiveOf returns endpoint ep's results while r's queue drained, all
// undefined when there are none.
func (j *JobsRun) LiveOf(ep string) LiveInDrain {
	if j != nil {
		for _, l := range j.Live {
			if l.Endpoint == ep {
				return l
			}
		}
	}
	return LiveInDrain{Endpoint: ep, OKShare: Undefined, P99Ms: Undefined}
}
