package loadgen

import (
	"fmt"
	"slices"
	"time"
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
	// Advice is appended to the reason, e.g. "raise phases.warmup (2s)".
	Advice string
}

// Default thresholds of Stationarity.
const (
	DefaultMaxP50Ratio    = 1.5
	DefaultMinP50Diff     = time.Millisecond
	DefaultMaxSuccessDrop = 0.02
)

// notStationary returns why endpoint's windows of one phase are not
// steady, or "" (also when there are fewer than 4 windows with results).
func notStationary(ws []Window, st Stationarity) string {
	var p50s [2][]time.Duration
	var ok, tot [2]int64
	var used []Window
	for _, w := range ws {
		if w.Counts.Total() > 0 {
			used = append(used, w)
		}
	}
	if len(used) < 4 {
		return ""
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
	var why string
	switch {
	case st.MaxP50Ratio > 0 && float64(m0) > st.MaxP50Ratio*float64(m1) && m0-m1 > st.MinP50Diff:
		why = fmt.Sprintf("p50 %v in its first half vs %v in its second", m0.Round(10*time.Microsecond), m1.Round(10*time.Microsecond))
	case st.MaxSuccessDrop > 0 && s1-s0 > st.MaxSuccessDrop:
		why = fmt.Sprintf("success %.3g %% in its first half vs %.3g %% in its second", 100*s0, 100*s1)
	default:
		return ""
	}
	r := fmt.Sprintf("warm-up too short (%s not stationary): /%s %s", used[0].Phase, used[0].Endpoint, why)
	if st.Advice != "" {
		r += "; " + st.Advice
	}
	return r
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
