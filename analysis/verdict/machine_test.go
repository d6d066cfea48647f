package verdict

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestMachineAllowanceOnTheIsolatedSide: a valid run on a busy machine
// (the canary over half its limit in the fault phase) may carry a stall
// into the victim's p99 that no wall could keep out; the at-baseline
// checks (P2 and those judged like it, here CONNS-NO-WALL's walled side)
// take off what the machine alone could have added (measure.MachineRule)
// and say so. The same rise on a quiet machine, and a broken wall on a
// busy one, still fail. T = 250 ms, so P2's limit is 62.5 ms.
func TestMachineAllowanceOnTheIsolatedSide(t *testing.T) {
	ex := rundata.DefaultExpectations()
	ex.Conns = &rundata.ConnsRoles{Condition: ex.Slow, NoWall: "shared-db", Walled: "db-per-class"}
	limit := 25 * time.Millisecond
	for _, tt := range []struct {
		name      string
		faultP99  float64 // the victim's, baseline 12 ms
		canaryP99 time.Duration
		want      Outcome
		says      string
	}{
		{"a rise of 0.38 T on a busy but valid machine", 107, 15 * time.Millisecond, Supported, "up to 45 ms of it the machine's"},
		{"the same rise with the canary under half its limit", 107, 12 * time.Millisecond, NotSupported, "fault p99 − baseline p99"},
		{"the same rise on a quiet machine", 107, 2 * time.Millisecond, NotSupported, "fault p99 − baseline p99"},
		{"a broken wall on a machine at the canary's limit", 400, limit, NotSupported, "fault p99 − baseline p99"},
		{"at baseline on a busy machine", 14, 20 * time.Millisecond, Supported, "every deciding number met its threshold"},
	} {
		allowance := measure.MachineCouldAddMs(tt.canaryP99, limit)
		victim := func(cond, mode string, rep int, faultP99 float64, exhausted string) measure.RunSummary {
			return measure.RunSummary{ID: fmt.Sprintf("%s-%s-r%d", cond, mode, rep), Condition: cond, Mode: mode, Repeat: rep,
				Status: rundata.StatusComplete, Valid: true, TimeoutMs: 250,
				Noise:     measure.NoiseFloor{MachineAllowanceMs: measure.Num(allowance)},
				Exhausted: measure.Exhaustion{Resource: exhausted},
				Endpoints: []measure.EndpointStats{{Endpoint: ex.Victim, BaselineP99Ms: 12, FaultP99Ms: measure.Num(faultP99),
					Phases: []measure.PhaseNumbers{{Phase: rundata.PhaseBaseline}, {Phase: rundata.PhaseFault}}}}}
		}
		var runs []measure.RunSummary
		for rep := 1; rep <= 2; rep++ {
			runs = append(runs,
				victim(ex.Slow, ex.BulkheadMode, rep, tt.faultP99, measure.ResourceNone),
				victim(ex.Slow, "db-per-class", rep, tt.faultP99, measure.ResourceNone),
				victim(ex.Slow, "shared-db", rep, 300, measure.ResourceConnections))
		}
		cells := buildCells(runs, ex)
		for _, name := range []string{claims.P2, claims.ConnsNoWall} {
			v := verdictOn(t, name, cells, ex)
			if v.Outcome != tt.want || !strings.Contains(v.Reason, tt.says) {
				t.Errorf("%s: %s %s (%s), want %s with %q", tt.name, name, v.Outcome, v.Reason, tt.want, tt.says)
			}
		}
	}
}

// TestMachineCouldAdd: nothing while the canary stays at or under half
// its limit (or there is none), three hops of its delay above that.
func TestMachineCouldAdd(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		canary, limit time.Duration
		want          float64
	}{{0, 25 * ms, 0}, {12 * ms, 25 * ms, 0}, {12500 * time.Microsecond, 25 * ms, 0}, {13 * ms, 25 * ms, 39}, {40 * ms, 25 * ms, 120}, {40 * ms, 0, 0}} {
		if got := measure.MachineCouldAddMs(tt.canary, tt.limit); got != tt.want {
			t.Errorf("MachineCouldAddMs(%v, %v) = %v, want %v", tt.canary, tt.limit, got, tt.want)
		}
	}
	r := measure.RunSummary{TimeoutMs: 250, Noise: measure.NoiseFloor{MachineAllowanceMs: 50},
		Endpoints: []measure.EndpointStats{{Endpoint: "b", BaselineP99Ms: 10, FaultP99Ms: 110}, {Endpoint: "c", BaselineP99Ms: 10, FaultP99Ms: 30}, {Endpoint: "d", BaselineP99Ms: 30, FaultP99Ms: 10}}}
	for ep, want := range map[string]float64{"b": 0.2, "c": 0, "d": -0.08} {
		if got := float64(r.P99RiseBeyondMachineT(ep)); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("/%s: rise beyond the machine %v T, want %v", ep, got, want)
		}
	}
}
