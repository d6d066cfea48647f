package measure

import (
	"math"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// AtBaseline reports whether an endpoint is at its baseline — the one rule
// of every claim that an endpoint stays at, or comes back to, its baseline
// (P2 and the claims judged like it, RECOVERY, the sizing curve's good
// region): its p99 rose at most P2MaxP99RiseT above its baseline p99
// (riseT, in T), and its error rate is at most P2MaxErrorRate above its
// baseline error rate (MaxErrorRate). A number that is undefined (NaN: no
// baseline p99, no results) does not count against it.
func AtBaseline(riseT, errRate, baseErrRate float64, ex rundata.Expectations) bool {
	return !(riseT > ex.P2MaxP99RiseT) && !(errRate > MaxErrorRate(baseErrRate, ex))
}

// MaxErrorRate is the highest error rate at which an endpoint whose
// baseline error rate was baseErrRate is still at its baseline: P2's
// tolerance above it. Without errors at baseline it is P2MaxErrorRate.
func MaxErrorRate(baseErrRate float64, ex rundata.Expectations) float64 {
	return baseErrRate + ex.P2MaxErrorRate
}

// Harm is how far an endpoint is from its baseline in units of what
// AtBaseline tolerates: the larger of its p99 rise over P2MaxP99RiseT and
// its error rate's rise over P2MaxErrorRate. Above 1 it is not at its
// baseline; NaN when its p99 rise is undefined.
func Harm(riseT, errRate, baseErrRate float64, ex rundata.Expectations) float64 {
	return max(riseT/ex.P2MaxP99RiseT, (errRate-baseErrRate)/ex.P2MaxErrorRate)
}

// baselineErrorRate is ep's error rate over the baseline phase (0 without
// results there).
func (ew endpointWindows) baselineErrorRate(ep string) float64 {
	return orZero(float64(ew.phaseNumbers(ep, rundata.PhaseBaseline).ErrorRate))
}

// BaselineErrorRate is the endpoint's error rate over the baseline phase,
// from its phases' numbers (0 without results there).
func (e EndpointStats) BaselineErrorRate() float64 {
	for _, p := range e.Phases {
		if p.Phase == rundata.PhaseBaseline {
			return orZero(float64(p.ErrorRate))
		}
	}
	return 0
}

func orZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
