package verdict

import (
	"math"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// prioritySummary is a run summary of the priority claim under surge in
// mode: /checkout (the victim, critical) has a baseline p99 of 110 ms and
// the fault p99 and error rate given; /recommend (the culprit, sheddable)
// is refused the share given, fastShare of its failures fast; reserved
// permits (0: none) of a pool of 24 of which idle sat idle.
func prioritySummary(mode string, p99, errRate, refused, fastShare, reserved, idle float64) measure.RunSummary {
	return measure.RunSummary{ID: "surge-" + mode + "-r1", Mode: mode, Condition: "surge", Repeat: 1, Status: rundata.StatusComplete, Valid: true,
		TimeoutMs: 250,
		Endpoints: []measure.EndpointStats{
			{Endpoint: "checkout", BaselineP99Ms: 110, FaultP99Ms: measure.Num(p99), FaultErrorRate: measure.Num(errRate), FaultOKRate: measure.Num(30 * (1 - errRate))},
			{Endpoint: "recommend", BaselineP99Ms: 110, FaultP99Ms: 115, FaultErrorRate: measure.Num(refused), FaultOKRate: measure.Num(300 * (1 - refused)),
				FastRejectShare: measure.Num(fastShare)}},
		Priority: &measure.PriorityRun{Pool: "shared", Size: 24, Reserved: measure.Num(reserved), CriticalPerS: 30, CriticalCallMs: 100,
			CriticalDemand: 3, CriticalInFlight: 3, IdleReserved: measure.Num(idle), PredictedIdle: measure.Num(max(0, reserved-3)),
			SheddableRejectedShare: measure.Num(refused), SheddableRejectedPerS: measure.Num(300 * refused)}}
}

func priorityExpectations() rundata.Expectations {
	ex := rundata.DefaultExpectations()
	ex.Victim, ex.Culprit = "checkout", "recommend"
	ex.Priority = &rundata.PriorityRoles{Condition: "surge", Reserved: "reserved", Unreserved: "shared"}
	return ex
}

// TestPriorityReserved: the claim holds when /checkout stays at its
// baseline with the reservation, /recommend's excess is refused fast and
// /checkout is hurt without it; it fails on each half, on a reservation
// too small (the critical class refused with the rest) and on the shared
// pool judged as the reserved layout. The cost is reported, not judged.
func TestPriorityReserved(t *testing.T) {
	ex := priorityExpectations()
	shared := prioritySummary("shared", 140, 0.33, 0.33, 1, 0, 0)
	reserved := prioritySummary("reserved", 120, 0, 0.56, 1, 10, 7)
	for _, tc := range []struct {
		name   string
		ex     func(*rundata.Expectations)
		runs   []measure.RunSummary
		want   Outcome
		reason string
	}{
		{"reserved: /checkout at baseline; shared: hurt", nil, []measure.RunSummary{shared, reserved}, Supported, ""},
		{"reservation too small: /checkout refused", nil,
			[]measure.RunSummary{shared, prioritySummary("reserved", 125, 0.27, 0.39, 1, 2, 0.4)}, NotSupported,
			"/checkout fault error rate in reserved = 0.27 share, needs <= 0.01"},
		{"reserved /checkout slow", nil, []measure.RunSummary{shared, prioritySummary("reserved", 200, 0, 0.56, 1, 10, 7)}, NotSupported,
			"/checkout fault p99 − baseline p99 in reserved = 0.36 T"},
		{"/recommend's excess waits instead of failing fast", nil,
			[]measure.RunSummary{shared, prioritySummary("reserved", 120, 0, 0.56, 0.2, 10, 7)}, NotSupported,
			"/recommend failures that were fast rejections in reserved = 0.2 share"},
		{"the surge does not hurt /checkout without a reservation", nil,
			[]measure.RunSummary{prioritySummary("shared", 115, 0, 0.1, 1, 0, 0), reserved}, NotSupported,
			"/checkout harm in shared"},
		{"the shared pool judged as the reserved layout", func(e *rundata.Expectations) {
			e.Priority = &rundata.PriorityRoles{Condition: "surge", Reserved: "shared", Unreserved: "reserved"}
		}, []measure.RunSummary{shared, reserved}, NotSupported, "/checkout fault error rate in shared = 0.33 share"},
		{"no run of the unreserved layout", nil, []measure.RunSummary{reserved}, Skipped, "no complete run of surge/shared"},
	} {
		e := ex
		if tc.ex != nil {
			p := *ex.Priority
			e.Priority = &p
			tc.ex(&e)
		}
		v := verdictOn(t, claims.PriorityReserved, buildCells(tc.runs, e), e)
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reason)
		}
		if tc.want != Supported {
			continue
		}
		for _, want := range []struct {
			name  string
			value float64
		}{{"permits held for /checkout in reserved", 10}, {"cost: held permits left idle in reserved", 7},
			{"cost: held permits left idle, predicted (held − demand) in reserved", 7}, {"cost: held permits left idle, share of the pool in reserved", 7.0 / 24},
			{"/recommend refused in reserved", 168}} {
			if got := measureNamed(v, want.name); got == nil || got.Op != "" || math.Abs(got.Value.Mean-want.value) > 1e-9 {
				t.Errorf("%s: measure %q = %+v, want %v for information", tc.name, want.name, got, want.value)
			}
		}
	}

	none := rundata.DefaultExpectations()
	for _, v := range judge(&Summary{Cells: buildCells([]measure.RunSummary{shared, reserved}, none), Expectations: none}) {
		if v.Name == claims.PriorityReserved {
			t.Errorf("without expectations.priority: %s judged, want not", v.Name)
		}
	}
}

// measureNamed returns v's measure called name, nil for none.
func measureNamed(v Verdict, name string) *Measure {
	for i := range v.Measures {
		if v.Measures[i].Name == name {
			return &v.Measures[i]
		}
	}
	return nil
}
