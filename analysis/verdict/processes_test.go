package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// wallRun is a run summary of the processes claim in mode under cond (T
// = 100 ms): the victim's baseline p99 is 15 ms, its fault p99 victimP99
// ms with errRate of errors (its spans the same throughout the fault); the
// service ran as procs processes of 30 MiB each.
func wallRun(mode, cond string, victimP99, errRate float64, procs int) measure.RunSummary {
	spans := make([]measure.SpanStat, 8)
	for i := range spans {
		spans[i] = measure.SpanStat{EndT: measure.Num(float64(i+1) * 0.5), P99Ratio: measure.Num(victimP99 / 15), ErrorRate: measure.Num(errRate)}
	}
	return measure.RunSummary{ID: fmt.Sprintf("%s-%s-r1", cond, mode), Mode: mode, Condition: cond, Repeat: 1, Status: rundata.StatusComplete, Valid: true,
		TimeoutMs: 100,
		Endpoints: []measure.EndpointStats{
			{Endpoint: "a", BaselineP99Ms: 15, FaultP99Ms: 60, FaultErrorRate: 0, FaultOKRate: 45},
			{Endpoint: "b", BaselineP99Ms: 15, FaultP99Ms: measure.Num(victimP99), FaultErrorRate: measure.Num(errRate), FaultOKRate: 200}},
		VictimSpans: spans,
		Processes: &measure.ProcessesRun{Processes: procs, BaselineRSSBytes: measure.Num(procs * 30 << 20), RSSBytes: measure.Num(procs * 32 << 20),
			PeakRSSBytes: measure.Num(procs * 35 << 20), GOMAXPROCS: measure.Num(procs), Cores: 0.6}}
}

// wallMatrix is the claim's matrix: the victim's fault p99 (ms) and error
// rate in each cell, keyed "condition/mode"; a cell missing from p99 has
// no run.
func wallMatrix(p99 map[string]float64, errs map[string]float64) []measure.RunSummary {
	var out []measure.RunSummary
	for _, cond := range []string{"healthy", "payload", "slow"} {
		for _, mode := range []string{"shared", "bulkhead", "processes"} {
			v, ok := p99[cond+"/"+mode]
			if !ok {
				continue
			}
			procs := 1
			if mode == "processes" {
				procs = 2
			}
			out = append(out, wallRun(mode, cond, v, errs[cond+"/"+mode], procs))
		}
	}
	return out
}

// TestProcessWall: the claim holds when the processes keep /b at its
// baseline under the CPU payload and the slow A, the one-process
// bulkheads only under the slow A, and the shared pool under neither; it
// fails when the walls are the one-process bulkheads (the CPU reaches /b
// through them), when the processes let /b down, when one process's
// bulkheads are unhurt by the payload (nothing the processes add), when
// the bulkheads do not hold a slow A, and when the shared pool holds it
// (the slow fault was no test). The cost is reported for each layout.
func TestProcessWall(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Processes = &rundata.ProcessesRoles{CPU: "payload"}
	good := map[string]float64{
		"healthy/shared": 16, "healthy/bulkhead": 16, "healthy/processes": 16,
		"payload/shared": 60, "payload/bulkhead": 55, "payload/processes": 18,
		"slow/shared": 110, "slow/bulkhead": 17, "slow/processes": 17,
	}
	slowErrs := map[string]float64{"slow/shared": 0.4}
	with := func(k string, v float64) map[string]float64 {
		m := map[string]float64{}
		for kk, vv := range good {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	walledByBulkhead := rundata.DefaultExpectations()
	walledByBulkhead.Processes = &rundata.ProcessesRoles{CPU: "payload", Mode: "bulkhead"}
	for _, tc := range []struct {
		name   string
		ex     rundata.Expectations
		p99    map[string]float64
		errs   map[string]float64
		want   Outcome
		reason string
	}{
		{"processes hold both, bulkheads the slow A only, shared neither", ex, good, slowErrs, Supported, ""},
		{"the walls named as the one-process bulkheads", walledByBulkhead, good, slowErrs, NotSupported,
			"/b fault p99 under payload − under healthy, bulkhead = 0.39 T, needs <= 0.1"},
		{"the processes let the CPU through", ex, with("payload/processes", 50), slowErrs, NotSupported,
			"/b fault p99 under payload − under healthy, processes = 0.34 T, needs <= 0.1"},
		{"the payload does not reach /b in one process either", ex, with("payload/bulkhead", 19), slowErrs, NotSupported,
			"/b fault p99 under payload − under healthy, bulkhead = 0.03 T, needs >= 0.1"},
		{"the bulkheads let a slow A through", ex, with("slow/bulkhead", 90), slowErrs, NotSupported,
			"/b fault p99 under slow − under healthy, bulkhead = 0.74 T, needs <= 0.25"},
		{"the shared pool holds a slow A: no test", ex, with("slow/shared", 17), nil, NotSupported,
			"repeats in which /b degraded, slow, shared = 0 share, needs >= 1"},
		{"the processes lose requests under the payload", ex, good, map[string]float64{"slow/shared": 0.4, "payload/processes": 0.05}, NotSupported,
			"/b fault error rate, payload, processes = 0.05 share"},
	} {
		v := verdictOn(t, claims.ProcessWall, buildCells(wallMatrix(tc.p99, tc.errs), tc.ex), tc.ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
	}

	// Another program on the machine disturbed the one process's payload
	// baseline (p99 60 ms): its fault phase against the control's still
	// shows the harm, where a rise over its own baseline would not.
	disturbed := wallMatrix(good, slowErrs)
	for i := range disturbed {
		if disturbed[i].Condition == "payload" && disturbed[i].Mode == "bulkhead" {
			disturbed[i].Endpoints[1].BaselineP99Ms = 60
		}
	}
	if v := verdictOn(t, claims.ProcessWall, buildCells(disturbed, ex), ex); v.Outcome != Supported {
		t.Errorf("a disturbed baseline: %s (%s), want SUPPORTED", v.Outcome, v.Reason)
	}

	v := verdictOn(t, claims.ProcessWall, buildCells(wallMatrix(good, slowErrs), ex), ex)
	cost := map[string]float64{}
	for _, m := range v.Measures {
		cost[m.Name] = m.Value.Mean
	}
	for name, want := range map[string]float64{
		"service processes, processes": 2, "service processes, bulkhead": 1, "service processes, shared": 1,
		"service memory before the fault (RSS, all its processes), processes": 60, "service memory before the fault (RSS, all its processes), bulkhead": 30,
		"GOMAXPROCS, all its processes, processes": 2, "service memory, peak under payload, processes": 70,
	} {
		if got, ok := cost[name]; !ok || got != want {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}

	// Without the shared pool's slow run the claim is SKIPPED; without
	// expectations.processes it is not judged.
	missing := with("slow/shared", 0)
	delete(missing, "slow/shared")
	if v := verdictOn(t, claims.ProcessWall, buildCells(wallMatrix(missing, nil), ex), ex); v.Outcome != Skipped || !strings.Contains(v.Reason, "slow/shared") {
		t.Errorf("without slow/shared: %s (%s), want SKIPPED naming it", v.Outcome, v.Reason)
	}
	none := rundata.DefaultExpectations()
	for _, v := range judge(&Summary{Cells: buildCells(wallMatrix(good, slowErrs), none), Expectations: none}) {
		if v.Name == claims.ProcessWall {
			t.Errorf("without expectations.processes: %s judged", v.Name)
		}
	}
}
