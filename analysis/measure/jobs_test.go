package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// jobsRun is a run whose fault phase lasts 4 s from t0+2s, with 1000 jobs
// of /invoice enqueued 0.5 s into it: the service's samples every 250 ms
// come from sample(t) (seconds since t0), and /checkout's windows of
// 250 ms from window(t).
func jobsRun(info rundata.JobsInfo, sample func(t float64) map[string]float64, window func(t float64) (ok, failed int64, p99 time.Duration)) *Run {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := &rundir.Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "checkout", Dependency: "payments"}, {Name: "invoice", Dependency: "billing"}},
		Phases:    []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: t0.Add(2 * time.Second), End: t0.Add(6 * time.Second)}},
		Jobs:      &info,
	}}
	for i := 0; i <= 40; i++ {
		at := t0.Add(time.Duration(i) * 250 * time.Millisecond)
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: sample(at.Sub(t0).Seconds())})
		if i < 40 {
			ok, failed, p99 := window(at.Sub(t0).Seconds())
			w := rundata.Window{Endpoint: "checkout", Index: i, Start: at, Duration: 250 * time.Millisecond}
			w.Counts[rundata.ClassOK], w.Counts[rundata.ClassRejected] = ok, failed
			w.Latency = rundata.Quantiles{Count: ok + failed, P50: p99 / 2, P90: p99 * 9 / 10, P99: p99, P999: p99, Max: p99}
			r.Windows = append(r.Windows, w)
		}
	}
	return &Run{Data: r}
}

// TestJobsStats: the job queue's numbers over the fault phase and the
// drain — jobs accepted and run, the queue's peak and its depth at the
// fault's end, the drain's time from the burst to an empty queue and idle
// workers, the workers busy meanwhile — and the live traffic's ok share
// and p99 while it drained; a drain not over by the run's end has no time
// and counts the jobs left; a run without a burst has no drain.
func TestJobsStats(t *testing.T) {
	info := rundata.JobsInfo{Mode: rundata.JobsShared, Workers: 32, Queue: 10000, Count: 1000, At: 500 * time.Millisecond, Dependency: "billing", Endpoint: "invoice"}
	lbl := func(name string) string { return rundata.Key(name, rundata.L("dependency", "invoice")) }
	// The burst lands at 2.5 s; its jobs start and finish evenly until the
	// queue is empty at drainEnd; 32 workers are busy meanwhile.
	queue := func(drainEnd float64) func(t float64) map[string]float64 {
		return func(t float64) map[string]float64 {
			v := map[string]float64{lbl(rundata.MetricJobsEnqueued): 0, lbl(rundata.MetricJobsStarted): 0, lbl(rundata.MetricJobsDone): 0,
				lbl(rundata.MetricJobsFailed): 0, rundata.MetricJobsQueueDepth: 0, rundata.MetricJobsBusy: 0, rundata.MetricJobsRefused: 0,
				rundata.Key(rundata.MetricJobsEnqueued, rundata.L("dependency", "checkout")): 0}
			if t < 2.5 {
				return v
			}
			done := math.Min(1000, 1000*(t-2.5)/(drainEnd-2.5))
			v[lbl(rundata.MetricJobsEnqueued)] = 1000
			v[lbl(rundata.MetricJobsStarted)], v[lbl(rundata.MetricJobsDone)] = done, done
			if t < drainEnd {
				v[rundata.MetricJobsQueueDepth], v[rundata.MetricJobsBusy] = 1000-done, 32
			}
			return v
		}
	}
	// /checkout: 25 results a window, all refused (3 ms) while the queue
	// drains from 2.5 s to 5.5 s, all ok (20 ms) otherwise.
	starved := func(t float64) (int64, int64, time.Duration) {
		if t >= 2.5 && t < 5.5 {
			return 1, 24, 3 * time.Millisecond
		}
		return 25, 0, 20 * time.Millisecond
	}
	j := jobQueue{jobsRun(info, queue(5.5), starved).Data}.jobsStats(info)
	check := func(name string, got Num, want float64) {
		t.Helper()
		if !(math.IsNaN(want) && math.IsNaN(float64(got))) && math.Abs(float64(got)-want) > 1e-6 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("enqueued", j.Enqueued, 1000)
	check("refused", j.Refused, 0)
	check("started in fault", j.StartedInFault, 1000)
	check("done in fault", j.DoneInFault, 1000)
	check("done per s", j.DonePerS, 250)
	check("peak depth", j.PeakDepth, 1000)
	check("depth at fault end", j.DepthAtFaultEnd, 0)
	check("drain s", j.DrainS, 3)
	check("left", j.Left, 0)
	check("mean busy", j.MeanBusy, 32*12.0/13) // the samples of (2.5 s, 5.5 s]: 32 busy but at 5.5
	if want := j.DrainFrom.Add(3 * time.Second); !j.DrainTo.Equal(want) {
		t.Errorf("drain to %v, want %v", j.DrainTo, want)
	}
	live := j.LiveOf("checkout")
	if live.Results != 12*25 {
		t.Errorf("/checkout results while draining %d, want %d", live.Results, 12*25)
	}
	check("/checkout ok share while draining", live.OKShare, 1.0/25)
	check("/checkout p99 while draining", live.P99Ms, 3)
	check("/nope ok share", j.LiveOf("nope").OKShare, math.NaN())

	// 8 workers of their own: not drained by the run's end (10 s).
	own := info
	own.Mode, own.Workers = rundata.JobsOwn, 8
	slow := func(t float64) map[string]float64 {
		v := map[string]float64{lbl(rundata.MetricJobsEnqueued): 0, lbl(rundata.MetricJobsStarted): 0, lbl(rundata.MetricJobsDone): 0,
			rundata.MetricJobsQueueDepth: 0, rundata.MetricJobsBusy: 0}
		if t >= 2.5 {
			done := 100 * (t - 2.5)
			v[lbl(rundata.MetricJobsEnqueued)], v[lbl(rundata.MetricJobsStarted)], v[lbl(rundata.MetricJobsDone)] = 1000, done, done
			v[rundata.MetricJobsQueueDepth], v[rundata.MetricJobsBusy] = 1000-done-8, 8
		}
		return v
	}
	fine := func(float64) (int64, int64, time.Duration) { return 25, 0, 20 * time.Millisecond }
	j = jobQueue{jobsRun(own, slow, fine).Data}.jobsStats(own)
	check("own: drain s", j.DrainS, math.NaN())
	check("own: left", j.Left, 250)
	check("own: done per s", j.DonePerS, 87.5)
	check("own: depth at fault end", j.DepthAtFaultEnd, 1000-350-8)
	check("own: /checkout ok share", j.LiveOf("checkout").OKShare, 1)
	if want := j.DrainFrom.Add(3500 * time.Millisecond); !j.DrainTo.Equal(want) {
		t.Errorf("own: live numbers until %v, want the fault's end %v", j.DrainTo, want)
	}

	// A condition without jobs: the queue's numbers, no drain.
	idle := info
	idle.Count, idle.At = 0, 0
	j = jobQueue{jobsRun(idle, slow, fine).Data}.jobsStats(idle)
	if !math.IsNaN(float64(j.DrainS)) || j.Live != nil || !j.DrainFrom.IsZero() {
		t.Errorf("without a burst: drain %v, live %+v, from %v; want none", j.DrainS, j.Live, j.DrainFrom)
	}
	// A service that exports nothing of a queue: every number undefined.
	j = jobQueue{jobsRun(info, func(float64) map[string]float64 { return map[string]float64{} }, fine).Data}.jobsStats(info)
	if !math.IsNaN(float64(j.Enqueued)) || !math.IsNaN(float64(j.StartedInFault)) || j.Live != nil {
		t.Errorf("without metrics: %+v, want every number undefined", *j)
	}

	var s RunSummary
	jobsFamily(&rundir.Run{}, &s, rundata.DefaultExpectations())
	if s.Jobs != nil {
		t.Errorf("without a job queue: %+v, want none", s.Jobs)
	}
}

// TestJobsDeclaredLimit: jobs on workers of their own call their
// dependency beside the pool, so its calls are bounded by the pool and the
// workers together; on the request pool, or without a burst, by the pool.
func TestJobsDeclaredLimit(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		count int
		want  map[string]int
	}{
		{rundata.JobsOwn, 1000, map[string]int{"billing": 24, "payments": 16}},
		{rundata.JobsShared, 1000, map[string]int{"billing": 16, "payments": 16}},
		{rundata.JobsOwn, 0, map[string]int{"billing": 16, "payments": 16}},
	} {
		r := &Run{Data: &rundir.Run{Meta: rundata.RunMeta{
			Endpoints: []rundata.EndpointInfo{{Name: "checkout", Dependency: "payments", Pool: "shared"}, {Name: "invoice", Dependency: "billing", Pool: "shared"}},
			Pools:     []rundata.PoolInfo{{Name: "shared", Limit: 16, Endpoints: []string{"checkout", "invoice"}}},
			Jobs:      &rundata.JobsInfo{Mode: tc.mode, Workers: 8, Count: tc.count, Dependency: "billing", Endpoint: "invoice"},
		}}}
		for d, want := range tc.want {
			if got, src := (limitChecker{r.Data}).declaredLimit(d); got != want || src != LimitDeclared {
				t.Errorf("%s jobs, %d of them: the limit on %s is %d (%s), want %d (declared)", tc.mode, tc.count, d, got, src, want)
			}
		}
	}
}
