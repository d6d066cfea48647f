//go:build e2e

package main

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestPriorityReservePreset: /checkout (critical) and /recommend
// (sheddable) share one pool of 24 over one dependency, and /recommend's
// load surges 7.5-fold. With 12 permits reserved for the critical class
// /checkout stays at its baseline while /recommend's excess is refused at
// once, and without a reservation /checkout is refused with the rest:
// PRIORITY-RESERVED SUPPORTED, exit 0, with the idle reserved permits
// measured (Little's law: 12 − 3 ≈ 9). The same runs judged with a layout
// that breaks the claim as the reserved one — the reservation of 2, below
// /checkout's demand of 3, and the shared pool without any — are NOT
// SUPPORTED; separate pools of 12 and 12 hold like the reservation.
func TestPriorityReservePreset(t *testing.T) {
	text := shortPreset(t, "priority-reserve",
		"phases: {warmup: 1s, baseline: 3s, fault: 6s, recovery: 4500ms}", "phases: {warmup: 1s, baseline: 3s, fault: 3s, recovery: 3s}")
	code, out, dir := runSpecJudged(t, "priority-reserve", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		p := r.Priority
		if p == nil {
			t.Fatalf("run %s has no priority numbers", r.ID)
		}
		e := r.Endpoint("checkout")
		t.Logf("%s: /checkout errors %.3f, p99 %.0f ms (baseline %.0f); held %v, demand %.2f, idle %.2f (predicted %.2f); /recommend refused %.0f/s",
			r.ID, e.FaultErrorRate, e.FaultP99Ms, e.BaselineP99Ms, p.Reserved, p.CriticalDemand, p.IdleReserved, p.PredictedIdle, p.SheddableRejectedPerS)
		switch r.Mode {
		case "reserved":
			if p.Reserved != 12 || !(p.IdleReserved > 6 && p.IdleReserved < 11.5) {
				t.Errorf("%s: %v reserved, %v idle; want 12 reserved, about 9 idle (12 − /checkout's 3)", r.ID, p.Reserved, p.IdleReserved)
			}
		case "too-small":
			if p.Reserved != 2 || !(e.FaultErrorRate > 0.05) {
				t.Errorf("%s: %v reserved, /checkout errors %v; want 2 reserved and /checkout refused", r.ID, p.Reserved, e.FaultErrorRate)
			}
		case "shared":
			if p.Reserved != 0 || p.IdleReserved != 0 || !(e.FaultErrorRate > 0.1) {
				t.Errorf("%s: %v reserved, %v idle, /checkout errors %v; want none held, none idle, /checkout refused", r.ID, p.Reserved, p.IdleReserved, e.FaultErrorRate)
			}
		case "per-endpoint":
			if !p.Partition || p.Reserved != 12 {
				t.Errorf("%s: %+v, want /checkout's own pool of 12", r.ID, *p)
			}
		}
	}
	t.Logf("idle reserved permits %.2f (%.0f %% of the pool)", measureOf(s, "PRIORITY-RESERVED", "cost: held permits left idle in"),
		100*measureOf(s, "PRIORITY-RESERVED", "cost: held permits left idle, share"))

	for _, tc := range []struct {
		roles rundata.PriorityRoles
		want  verdict.Outcome
	}{
		{rundata.PriorityRoles{Condition: "surge", Reserved: "too-small", Unreserved: "shared"}, verdict.NotSupported},
		{rundata.PriorityRoles{Condition: "surge", Reserved: "shared", Unreserved: "reserved"}, verdict.NotSupported},
		{rundata.PriorityRoles{Condition: "surge", Reserved: "per-endpoint", Unreserved: "shared"}, verdict.Supported},
	} {
		roles := tc.roles
		if o := rejudge(t, dir, "PRIORITY-RESERVED", func(ex *rundata.Expectations) { ex.Priority = &roles }); o != tc.want {
			t.Errorf("PRIORITY-RESERVED with %+v: %s, want %s", tc.roles, o, tc.want)
		}
	}
}
