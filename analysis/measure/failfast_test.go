package measure

import (
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestFastRejectShareLeavesOutAdmittedTimeouts: /a behind a bulkhead of 10
// over a 2.5 s fault phase with T = 250 ms: its pool can admit at most
// 10 × 2.5 s / 0.25 s = 100 calls that time out at the dependency. Those
// are the dependency's failures, not the pool's; every other failure must
// be a fast rejection. A service without a pool limit gets no allowance,
// and timeouts beyond what the pool could have admitted count.
func TestFastRejectShareLeavesOutAdmittedTimeouts(t *testing.T) {
	ex := rundata.DefaultExpectations()
	run := func(pool string, limit int, rejectedFast, rejectedSlow, depTimeouts int64) EndpointStats {
		r := &Run{Data: &rundir.Run{}}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		r.Data.Meta = rundata.RunMeta{Timeout: synth.T, Window: synth.T,
			Phases:    []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: start, End: start.Add(2500 * time.Millisecond)}},
			Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A", Pool: pool, Rate: 200}}}
		if pool != "" {
			r.Data.Meta.Pools = []rundata.PoolInfo{{Name: pool, Limit: limit, Endpoints: []string{"a"}}}
		}
		ps := rundata.PhaseStats{Endpoint: "a", Phase: rundata.PhaseFault, ByClass: map[string]rundata.Quantiles{}}
		ps.Counts[rundata.ClassOK] = 100
		ps.Counts[rundata.ClassRejected] = rejectedFast + rejectedSlow
		ps.Counts[rundata.ClassDepTimeout] = depTimeouts
		// The rejections' latency: the fast ones at 1–2 ms, the slow ones
		// at 150 ms (0.6 T, a queue wait before the no).
		switch {
		case rejectedSlow == 0:
			ps.ByClass[rundata.ClassRejected.String()] = synth.Q(1, 2, rejectedFast)
		case rejectedFast == 0:
			ps.ByClass[rundata.ClassRejected.String()] = synth.Q(150, 160, rejectedSlow)
		}
		r.Data.Phases = []rundata.PhaseStats{ps}
		return endpointWindows{r.Data}.endpointStats("a", rundata.PhaseFault, ex)
	}
	for _, tt := range []struct {
		name             string
		st               EndpointStats
		lo, hi, admCalls float64 // the share within [lo, hi]
	}{
		{"a bulkhead whose admitted calls the machine pushed past T", run("a", 10, 390, 0, 40), 1, 1, 40},
		{"more timeouts than the bulkhead could admit", run("a", 10, 300, 0, 300), 0.6, 0.6, 100},
		// The slow rejections' 0.6 T is estimated from their quantiles,
		// which put a little of their mass below 0.1 T.
		{"a bulkhead that waits before it says no", run("a", 10, 0, 390, 40), 0, 0.2, 40},
		{"no pool limit: every timeout counts", run("", 0, 0, 0, 490), 0, 0, 0},
	} {
		if got := float64(tt.st.FastRejectShare); got < tt.lo-1e-9 || got > tt.hi+1e-9 {
			t.Errorf("%s: fast-reject share %v, want within [%v, %v]", tt.name, got, tt.lo, tt.hi)
		}
		if got := float64(tt.st.AdmittedTimeouts); got != tt.admCalls {
			t.Errorf("%s: admitted timeouts %v, want %v", tt.name, got, tt.admCalls)
		}
	}
}
