package loadgen

import (
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Stationarity is the validity rule that a phase (the baseline) is already
// steady: a service still warming up (a JIT compiling, caches and pools
// filling) answers its first requests slower or worse than its later ones,
// and a baseline measured then is not the service's normal behaviour.
//
// The phase's windows are split into halves; the rule fails when the
// median of the first half's per-window p50 latency exceeds the second
// half's by MaxP50Ratio and by MinP50Diff, or its success share falls
// short of the second half's by more than MaxSuccessDrop (requests the
// client gave up on on purpose left out of the shares).
type Stationarity struct {
	MaxP50Ratio    float64
	MinP50Diff     time.Duration
	MaxSuccessDrop float64
	// Warmup is the warm-up before the phase, recorded in a break so that
	// its words can advise raising it.
	Warmup time.Duration
}

// Default thresholds of Stationarity.
const (
	DefaultMaxP50Ratio    = 1.5
	DefaultMinP50Diff     = time.Millisecond
	DefaultMaxSuccessDrop = 0.02
)

// notStationary returns the record of endpoint's windows of one phase not
// being steady, and whether they are not (never with fewer than 4 windows
// with results).
func notStationary(ws []Window, st Stationarity) (rundata.Broken, bool) {
	var p50s [2][]time.Duration
	var ok, tot [2]int64
	var used []Window
	for _, w := range ws {
		if w.Counts.Total() > 0 {
			used = append(used, w)
		}
	}
	if len(used) < 4 {
		return rundata.Broken{}, false
	}
	for i, w := range used {
		h := 0
		if i >= len(used)/2 {
			h = 1
		}
		p50s[h] = append(p50s[h], w.Latency.P50)
		ok[h] += w.Counts[ClassOK]
		tot[h] += w.Counts.Total() - w.Cancelled
	}
	m0, m1 := median(p50s[0]), median(p50s[1])
	s0, s1 := float64(ok[0])/float64(tot[0]), float64(ok[1])/float64(tot[1])
	b := rundata.Broken{Rule: rundata.RuleStationary, Endpoint: used[0].Endpoint, Phase: used[0].Phase, Warmup: st.Warmup}
	switch {
	case st.MaxP50Ratio > 0 && float64(m0) > st.MaxP50Ratio*float64(m1) && m0-m1 > st.MinP50Diff:
		b.Measured, b.Limit, b.Unit = float64(m0), float64(m1), rundata.UnitNanos
	case st.MaxSuccessDrop > 0 && s1-s0 > st.MaxSuccessDrop:
		b.Measured, b.Limit, b.Unit = 100*s0, 100*s1, rundata.UnitPercent
	default:
		return rundata.Broken{}, false
	}
	return b, true
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
