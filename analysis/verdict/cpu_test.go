package verdict

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// cpuSummary is a run summary of the CPU claim: the victim's baseline p99
// is 12 ms and its fault p99 faultP99; the service's exhausted resource
// and peak pool share as given.
func cpuSummary(id, cond string, faultP99 float64, exhausted string, peak float64) measure.RunSummary {
	return measure.RunSummary{ID: id, Mode: "bulkhead", Condition: cond, Repeat: 1, Status: rundata.StatusComplete, Valid: true,
		TimeoutMs: 250, Exhausted: measure.Exhaustion{Resource: exhausted},
		Endpoints: []measure.EndpointStats{
			{Endpoint: "a", BaselineP99Ms: 12, FaultP99Ms: 40, FaultErrorRate: 0, FaultOKRate: 120},
			{Endpoint: "b", BaselineP99Ms: 12, FaultP99Ms: measure.Num(faultP99), FaultErrorRate: 0, FaultOKRate: 200}},
		CPU: &measure.CPURun{Cores: 0.7, BaselineCores: 0.05, GOMAXPROCS: 1, GCShare: 0.15, SchedP99Ms: 25, DecodeMs: 5, PeakPoolShare: measure.Num(peak)}}
}

func TestCPUNotIsolated(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.CPU = &rundata.CPURoles{Condition: "payload"}
	healthy := cpuSummary("healthy-bulkhead-r1", "healthy", 14, measure.ResourceNone, 0.3)
	for _, tc := range []struct {
		name   string
		heavy  measure.RunSummary
		want   Outcome
		reason string
	}{
		{"large payloads: /b hurt, pools free, CPU first", cpuSummary("p", "payload", 70, measure.ResourceCPU, 0.35), Supported, ""},
		{"GC first counts too", cpuSummary("p", "payload", 70, measure.ResourceGC, 0.35), Supported, ""},
		{"small payloads: /b unhurt, nothing ran out", cpuSummary("p", "payload", 15, measure.ResourceNone, 0.3), NotSupported, "/b p99 rise under payload − under healthy = 0.004 T, needs >= 0.1"},
		{"a full pool explains it", cpuSummary("p", "payload", 70, measure.ResourcePool, 1), NotSupported, "no worker pool reached its limit = 0 share"},
	} {
		cells := buildCells([]measure.RunSummary{healthy, tc.heavy}, ex)
		v := verdictOn(t, claims.CPUNotIsolated, cells, ex)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
	}
	noCPU := rundata.DefaultExpectations()
	for _, v := range judge(&Summary{Cells: buildCells([]measure.RunSummary{healthy}, noCPU), Expectations: noCPU}) {
		if v.Name == claims.CPUNotIsolated {
			t.Errorf("without expectations.cpu: %s judged, want not", v.Name)
		}
	}
	v := verdictOn(t, claims.CPUNotIsolated, buildCells([]measure.RunSummary{healthy}, ex), ex)
	if v.Outcome != Skipped {
		t.Errorf("without a payload run: %s, want SKIPPED", v.Outcome)
	}
}
