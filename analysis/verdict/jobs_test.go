package verdict

import (
	"math"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// jobsRunSummary is a run of the background-jobs matrix at T = 250 ms:
// /checkout and /invoice with a baseline p99 of 30 ms and the fault p99
// and error rate given (both alike), and started jobs of the burst run in
// the fault phase (0 for a condition without one).
func jobsRunSummary(cond, mode string, p99, errRate, started float64) measure.RunSummary {
	ep := func(name string) measure.EndpointStats {
		return measure.EndpointStats{Endpoint: name, BaselineP99Ms: 30, FaultP99Ms: measure.Num(p99), FaultErrorRate: measure.Num(errRate), FaultOKRate: 100,
			Phases: []measure.PhaseNumbers{{Phase: rundata.PhaseBaseline, ErrorRate: 0}}}
	}
	j := &measure.JobsRun{Mode: rundata.JobsOwn, Workers: 8, Enqueued: 0, StartedInFault: measure.Num(started), DoneInFault: measure.Num(started),
		DonePerS: measure.Num(started / 4), PeakDepth: 0, DepthAtFaultEnd: 0, MeanBusy: measure.Undefined, DrainS: measure.Undefined, Left: measure.Undefined}
	if started > 0 {
		j.Count, j.Enqueued, j.PeakDepth, j.MeanBusy, j.DrainS, j.Left = 1000, 1000, 990, 8, 6.2, 0
		j.Live = []measure.LiveInDrain{{Endpoint: "checkout", Results: 400, OKShare: measure.Num(1 - errRate), P99Ms: measure.Num(p99)},
			{Endpoint: "invoice", Results: 80, OKShare: measure.Num(1 - errRate), P99Ms: measure.Num(p99)}}
	}
	return measure.RunSummary{ID: cond + "-" + mode + "-r1", Mode: mode, Condition: cond, Repeat: 1, Status: rundata.StatusComplete, Valid: true,
		TimeoutMs: 250, Endpoints: []measure.EndpointStats{ep("checkout"), ep("invoice")}, Jobs: j,
		Pools: []measure.PoolStats{{Pool: "shared", Limit: 16, PeakInUse: 16}}}
}

// jobsExpectations name the roles: drain against healthy, shared-workers
// against own-workers, /checkout and /invoice live.
func jobsExpectations() rundata.Expectations {
	ex := rundata.DefaultExpectations()
	ex.Victim, ex.Culprit = "checkout", "invoice"
	ex.Jobs = &rundata.JobsRoles{Condition: "drain", Shared: "shared-workers", Bounded: []string{"own-workers"}, Live: []string{"checkout", "invoice"}}
	return ex
}

// TestJobsIsolated: with bounded workers of their own the live endpoints
// stay at their baseline while the queue drains (SUPPORTED); the jobs on
// the request pool judged as the bounded layout starve them (NOT
// SUPPORTED), as does a slower live endpoint; a drain in which no job ran
// tests nothing (INCONCLUSIVE); without the control it is SKIPPED.
func TestJobsIsolated(t *testing.T) {
	ex := jobsExpectations()
	healthy := jobsRunSummary("healthy", "own-workers", 32, 0, 0)
	for _, tc := range []struct {
		name   string
		runs   []measure.RunSummary
		want   Outcome
		reason string
	}{
		{"own workers: live traffic at its baseline", []measure.RunSummary{healthy, jobsRunSummary("drain", "own-workers", 35, 0, 640)}, Supported, ""},
		{"the jobs on the request pool: live traffic refused", []measure.RunSummary{healthy, jobsRunSummary("drain", "own-workers", 45, 0.8, 1000)}, NotSupported,
			"/checkout fault error rate in own-workers, drain = 0.8 share, needs <= 0.01"},
		{"live traffic slowed only", []measure.RunSummary{healthy, jobsRunSummary("drain", "own-workers", 130, 0, 640)}, NotSupported,
			"/invoice p99 rise in own-workers, drain − healthy = 0.392 T, needs <= 0.25"},
		{"no job ran", []measure.RunSummary{healthy, jobsRunSummary("drain", "own-workers", 35, 0.8, 0)}, Inconclusive,
			"no job ran in the fault phase of drain/own-workers"},
		{"no control run", []measure.RunSummary{jobsRunSummary("drain", "own-workers", 35, 0, 640)}, Skipped, "healthy/own-workers"},
	} {
		v := verdictOn(t, claims.JobsIsolated, buildCells(tc.runs, ex), ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
		if tc.want != Supported {
			continue
		}
		for _, want := range []struct {
			name  string
			value float64
		}{{"/checkout ok share while the queue drained in own-workers, drain", 1}, {"jobs done in the fault phase in own-workers, drain", 640},
			{"peak queue depth in own-workers, drain", 990}, {"drain time from the burst in own-workers, drain", 6.2}, {"job workers in own-workers, drain", 8}} {
			if got := measureNamed(v, want.name); got == nil || got.Op != "" || math.Abs(got.Value.Mean-want.value) > 1e-9 {
				t.Errorf("%s: measure %q = %+v, want %v for information", tc.name, want.name, got, want.value)
			}
		}
		if !strings.Contains(v.Claim, "own-workers") || !strings.Contains(v.Claim, "(/checkout, /invoice)") {
			t.Errorf("claim %q, want the bounded modes and the live endpoints named", v.Claim)
		}
	}
	none := rundata.DefaultExpectations()
	for _, v := range judge(&Summary{Cells: buildCells([]measure.RunSummary{healthy}, none), Expectations: none}) {
		if v.Name == claims.JobsIsolated || v.Name == claims.JobsStarve {
			t.Errorf("without expectations.jobs: %s judged, want not", v.Name)
		}
	}
}

// TestJobsStarve: with the jobs on the request pool the drain takes both
// live endpoints off their baseline (SUPPORTED); own workers judged as the
// shared layout do not (NOT SUPPORTED); a p99 that rose as much under the
// control shows no harm of the drain's; no job run: INCONCLUSIVE.
func TestJobsStarve(t *testing.T) {
	ex := jobsExpectations()
	healthy := jobsRunSummary("healthy", "shared-workers", 32, 0, 0)
	for _, tc := range []struct {
		name   string
		runs   []measure.RunSummary
		want   Outcome
		reason string
	}{
		{"shared workers: live traffic refused", []measure.RunSummary{healthy, jobsRunSummary("drain", "shared-workers", 45, 0.78, 1000)}, Supported, ""},
		{"the own workers judged as the shared layout", []measure.RunSummary{healthy, jobsRunSummary("drain", "shared-workers", 35, 0, 640)}, NotSupported,
			"/checkout harm in shared-workers, drain against healthy"},
		{"a p99 the control shows too", []measure.RunSummary{jobsRunSummary("healthy", "shared-workers", 120, 0, 0), jobsRunSummary("drain", "shared-workers", 125, 0, 640)},
			NotSupported, "/invoice harm in shared-workers, drain against healthy"},
		{"no job ran", []measure.RunSummary{healthy, jobsRunSummary("drain", "shared-workers", 45, 0.78, 0)}, Inconclusive, "no job ran"},
	} {
		v := verdictOn(t, claims.JobsStarve, buildCells(tc.runs, ex), ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
		if tc.want == Supported {
			if m := measureNamed(v, "/checkout harm in shared-workers, drain against healthy: max(p99 rise / P2's limit, error rate / P2's limit)"); m == nil || math.Abs(m.Value.Mean-78) > 1e-9 {
				t.Errorf("%s: harm %+v, want 78 (0.78 / 0.01)", tc.name, m)
			}
		}
	}
}
