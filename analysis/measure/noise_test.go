package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestNoiseFloorMachineSteal: busy and steal are shares of the machine's
// CPU time over the judged phases; steal is undefined where the run did
// not sample it.
func TestNoiseFloorMachineSteal(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sample := func(s int, total, busy, steal float64, withSteal bool) rundata.MetricSample {
		v := map[string]float64{rundata.MetricMachineCPUSeconds: total, rundata.MetricMachineBusySeconds: busy}
		if withSteal {
			v[rundata.MetricMachineStealSeconds] = steal
		}
		return rundata.MetricSample{Time: t0.Add(time.Duration(s) * time.Second), Component: rundata.MachineComponent, Values: v}
	}
	for _, tc := range []struct {
		name            string
		withSteal       bool
		wantBusy, steal float64
	}{{"sampled", true, 0.75, 0.25}, {"not sampled", false, 0.75, math.NaN()}} {
		r := &Run{Data: &rundir.Run{Meta: rundata.RunMeta{Phases: []rundata.PhaseSpan{
			{Name: rundata.PhaseWarmup, Start: t0, End: t0.Add(2 * time.Second)},
			{Name: rundata.PhaseBaseline, Start: t0.Add(2 * time.Second), End: t0.Add(6 * time.Second)},
		}}, Metrics: []rundata.MetricSample{
			sample(0, 0, 0, 0, tc.withSteal), sample(2, 4, 1, 0, tc.withSteal), sample(6, 12, 7, 2, tc.withSteal),
		}}}
		n := r.NoiseFloor()
		if got := float64(n.MachineBusy); math.Abs(got-tc.wantBusy) > 1e-9 {
			t.Errorf("%s: MachineBusy = %v, want %v", tc.name, got, tc.wantBusy)
		}
		if got := float64(n.MachineSteal); !(math.IsNaN(tc.steal) && math.IsNaN(got)) && math.Abs(got-tc.steal) > 1e-9 {
			t.Errorf("%s: MachineSteal = %v, want %v", tc.name, got, tc.steal)
		}
	}
}

// TestNoiseFloorMachineAllowance: the allowance is read off the canary's
// fault phase alone, and only once it took over half its limit there.
func TestNoiseFloorMachineAllowance(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name            string
		baseline, fault time.Duration
		limit           time.Duration
		canary          bool
		wantAllowanceMs float64
	}{
		{"a quiet machine", 2 * ms, 3 * ms, 25 * ms, true, 0},
		{"busy in the fault phase", 2 * ms, 20 * ms, 25 * ms, true, 60},
		{"busy only in the baseline", 20 * ms, 3 * ms, 25 * ms, true, 0},
		{"no canary", 2 * ms, 20 * ms, 25 * ms, false, 0},
	} {
		d := &rundir.Run{Phases: []rundata.PhaseStats{
			{Endpoint: rundata.CanaryEndpoint, Phase: rundata.PhaseBaseline, Latency: rundata.Quantiles{Count: 40, P99: tc.baseline}},
			{Endpoint: rundata.CanaryEndpoint, Phase: rundata.PhaseFault, Latency: rundata.Quantiles{Count: 60, P99: tc.fault}},
		}}
		if tc.canary {
			d.Meta.Canary = &rundata.CanaryInfo{Rate: 20, MaxP99: tc.limit}
		}
		if got := float64((&Run{Data: d}).NoiseFloor().MachineAllowanceMs); got != tc.wantAllowanceMs {
			t.Errorf("%s: MachineAllowanceMs = %v, want %v", tc.name, got, tc.wantAllowanceMs)
		}
	}
}
