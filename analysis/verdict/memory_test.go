package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// memRun is a run summary of the memory claim in mode under cond: the
// calls in flight grew at growth × λ over the fault (late × λ in its
// second half), and the service's memory from 30 MiB by rss of it.
func memRun(mode, cond string, repeat int, growth, late, rss float64) measure.RunSummary {
	const lambda = 200
	return measure.RunSummary{ID: fmt.Sprintf("%s-%s-r%d", cond, mode, repeat), Mode: mode, Condition: cond, Repeat: repeat,
		Status: rundata.StatusComplete, Valid: true, TimeoutMs: 5000,
		Endpoints: []measure.EndpointStats{
			{Endpoint: "a", BaselineP99Ms: 15, FaultP99Ms: 2000, FaultOKRate: 0},
			{Endpoint: "b", BaselineP99Ms: 15, FaultP99Ms: 16, FaultOKRate: 100}},
		Memory: &measure.MemoryRun{Source: measure.InflightFromService, OfferedPerS: lambda,
			InflightStart: 2, InflightEnd: measure.Num(2 + growth*lambda*3), InflightPeak: measure.Num(2 + growth*lambda*3),
			InflightSlope: measure.Num(growth * lambda), FirstHalfSlope: measure.Num(growth * lambda), SecondHalfSlope: measure.Num(late * lambda),
			GrowthShare: measure.Num(growth), LateGrowthShare: measure.Num(late),
			RSSStartBytes: 30 << 20, RSSEndBytes: measure.Num((1 + rss) * (30 << 20)), RSSPeakBytes: measure.Num((1 + rss) * (30 << 20)),
			RSSGrowth: measure.Num(rss), RSSSlope: measure.Num(rss * (30 << 20) / 3), BytesPerCall: 256 << 10}}
}

// TestUnboundedGrows: the claim holds when, unbounded, the calls in flight
// grow at λ to the fault's end and the memory with them while the bounded
// mode's stop growing and its memory stays; it fails when nothing grew
// (A not slow), when the calls stop growing within the fault (a bound, or
// a dependency faster than the fault is long), when the memory did not
// follow, and when the control grew as well (two unbounded modes).
func TestUnboundedGrows(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Memory = &rundata.MemoryRoles{}
	for _, tc := range []struct {
		name    string
		ub, ctl measure.RunSummary
		want    Outcome
		reason  string
	}{
		{"unbounded grows, bulkhead bounded", memRun("unbounded", "slow", 1, 0.97, 0.96, 4.5), memRun("bulkhead", "slow", 1, 0.01, 0, 0.05), Supported, ""},
		{"A not slow: nothing grows", memRun("unbounded", "slow", 1, 0.0, 0.0, 0.02), memRun("bulkhead", "slow", 1, 0, 0, 0.02), NotSupported,
			"growth over the fault ÷ /a's arrival rate, unbounded = 0 share, needs >= 0.75"},
		{"growth stops within the fault", memRun("unbounded", "slow", 1, 0.6, 0.0, 1.5), memRun("bulkhead", "slow", 1, 0.01, 0, 0.05), NotSupported,
			"the same over the fault's second half (still growing), unbounded = 0 share"},
		{"memory does not follow", memRun("unbounded", "slow", 1, 0.97, 0.96, 0.05), memRun("bulkhead", "slow", 1, 0.01, 0, 0.05), NotSupported,
			"service memory growth over the fault (RSS end ÷ start − 1), unbounded = 0.05 share, needs >= 0.25"},
		{"the control grows too", memRun("unbounded", "slow", 1, 0.97, 0.96, 4.5), memRun("bulkhead", "slow", 1, 0.97, 0.96, 4.5), NotSupported,
			"growth over the fault's second half ÷ arrival rate, bulkhead = 0.96 share, needs <= 0.25"},
	} {
		v := verdictOn(t, claims.UnboundedGrows, buildCells([]measure.RunSummary{tc.ub, tc.ctl}, ex), ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
	}

	// Three repeats with the memory's growth of one of them just under the
	// threshold: the interval straddles it, INCONCLUSIVE, not a failure.
	var three []measure.RunSummary
	for i, g := range []float64{4.5, 4.2, 0.2} {
		three = append(three, memRun("unbounded", "slow", i+1, 0.97, 0.96, g), memRun("bulkhead", "slow", i+1, 0.01, 0, 0.05))
	}
	if v := verdictOn(t, claims.UnboundedGrows, buildCells(three, ex), ex); v.Outcome == NotSupported {
		t.Errorf("one repeat of three under the threshold: %s (%s), want not NOT SUPPORTED", v.Outcome, v.Reason)
	}

	// The memory guard stopped the unbounded run: evidence of growth,
	// judged on its numbers up to the stop; a bounded mode it had to stop
	// was not bounded.
	stopped := func(r measure.RunSummary) measure.RunSummary {
		r.Status, r.Valid = rundata.StatusStopped, false
		r.Problems = []string{"stopped by the memory guard"}
		r.MemoryStop = &rundata.MemoryStop{RSSBytes: 70 << 20, LimitBytes: 64 << 20, Phase: rundata.PhaseFault}
		return r
	}
	v := verdictOn(t, claims.UnboundedGrows, buildCells([]measure.RunSummary{stopped(memRun("unbounded", "slow", 1, 0.97, 0.96, 1.3)), memRun("bulkhead", "slow", 1, 0.01, 0, 0.05)}, ex), ex)
	if v.Outcome != Supported || !strings.Contains(v.Reason, "slow-unbounded-r1: stopped by the memory guard at 70 MiB (ceiling 64 MiB)") {
		t.Errorf("the unbounded run stopped by the guard: %s (%s), want SUPPORTED naming the stop", v.Outcome, v.Reason)
	}
	v = verdictOn(t, claims.UnboundedGrows, buildCells([]measure.RunSummary{memRun("unbounded", "slow", 1, 0.97, 0.96, 4), stopped(memRun("bulkhead", "slow", 1, 0.01, 0, 0.05))}, ex), ex)
	if v.Outcome != NotSupported || !strings.Contains(v.Reason, "runs of bulkhead the memory guard stopped = 1.00 runs, needs <= 0") {
		t.Errorf("the bounded run stopped by the guard: %s (%s), want NOT SUPPORTED", v.Outcome, v.Reason)
	}

	// Roles of their own: a condition and modes named otherwise.
	named := rundata.DefaultExpectations()
	named.Memory = &rundata.MemoryRoles{Mode: "loop", Control: "semaphore", Condition: "stall"}
	v = verdictOn(t, claims.UnboundedGrows, buildCells([]measure.RunSummary{memRun("loop", "stall", 1, 1, 1, 3), memRun("semaphore", "stall", 1, 0, 0, 0)}, named), named)
	if v.Outcome != Supported {
		t.Errorf("named roles: %s (%s), want SUPPORTED", v.Outcome, v.Reason)
	}
}
