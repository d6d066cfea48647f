package spec

import (
	"fmt"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// aftermathPart is a spec as its aftermath family sees it: recovery, the
// probes after the fault and what they can observe.
type aftermathPart struct{ *Spec }

// Hold span of RECOVERY (the analysis' RecoveryHoldT, RecoveryHoldWindows
// and RecoveryHoldResults): the longest of 4 T, 4 windows and the time for
// 100 results of the slowest endpoint.
const (
	recoveryHoldT       = 4
	recoveryHoldWindows = 4
	recoveryHoldResults = 100
)

// RecoveryHold is the hold span RECOVERY judges "back at baseline" over.
func (s *Spec) RecoveryHold() time.Duration {
	// The spec may not be resolved yet (the default check list is chosen
	// before it is): every duration is resolved here.
	t := s.Service.Timeout.Resolve(0)
	w := s.Load.Window.Resolve(t)
	hold := max(recoveryHoldT*t, recoveryHoldWindows*w)
	slowest := math.Inf(1)
	for _, e := range s.Endpoints {
		if r := s.Load.Rates[e.Name]; r > 0 {
			slowest = math.Min(slowest, r)
		}
	}
	if !math.IsInf(slowest, 1) && w > 0 {
		windows := math.Ceil(recoveryHoldResults / (slowest * w.Seconds()))
		hold = max(hold, time.Duration(windows)*w)
	}
	return hold
}

// RecoveryNeeds is the shortest recovery phase that decides RECOVERY in
// every mode: the bound (expectations.recovery_max_t × T, plus the longest
// breaker delay of a mode) and one hold span after it.
func (s *Spec) RecoveryNeeds() time.Duration {
	t := s.Service.Timeout.Resolve(0)
	var allowance time.Duration
	for i := range s.Modes {
		for _, p := range s.Modes[i].Policies {
			if p.Breaker != nil {
				allowance = max(allowance, p.Breaker.Delay.Resolve(t))
			}
		}
	}
	bound := time.Duration(s.Expectations.RecoveryMaxT*float64(t)) + allowance
	return (bound + s.RecoveryHold()).Round(time.Millisecond)
}

// observesPermits reports whether every mode's service shows its permits
// in use: the built-in service does, a user's only through
// external.metrics.
func (s aftermathPart) observesPermits() bool {
	if s.External == nil {
		return true
	}
	for i := range s.Modes {
		if m := s.ExternalOf(&s.Modes[i]).Metrics; m == nil || (m.InUse == "" && m.Available == "") {
			return false
		}
	}
	return true
}

// declaresLimits reports whether every mode's pools have known limits: the
// built-in service's, a user's declared under external.pools or exported
// under external.metrics.limit.
func (s aftermathPart) declaresLimits() bool {
	if s.External == nil {
		return true
	}
	for i := range s.Modes {
		x := s.ExternalOf(&s.Modes[i])
		m := x.Metrics
		if len(x.Pools) == 0 && (m == nil || (m.Limit == "" && (m.Conns == nil || m.Conns.Limit == ""))) {
			return false
		}
	}
	return true
}

// unseen says why the service does not show what a claim must see (its
// needs' Sight), "" when it does.
func (s aftermathPart) unseen(pred string, sight claims.Sight) string {
	switch sight {
	case claims.SeesRecovery:
		if need, have := s.RecoveryNeeds(), s.Phases.Recovery.Resolve(s.Service.Timeout.Resolve(0)); have < need {
			return fmt.Sprintf("%s needs a recovery phase of at least %v (recovery_max_t × T, a breaker's delay, and a hold span of %v after it); phases.recovery is %v",
				pred, need, s.RecoveryHold(), have)
		}
	case claims.SeesPermits:
		if !s.observesPermits() && s.Load.Probe == nil {
			return pred + " sees a permit lost without a service error only through the service's pool metrics (external.metrics in_use or available) or probe bursts (load.probe)"
		}
	case claims.SeesLimits:
		// A limit inferred from the proxies is judged only in the fault
		// phase it was seen in, which a slow fault leaves out: it cannot
		// decide the claim on its own.
		if !s.declaresLimits() && s.Load.Probe == nil {
			return pred + " needs a limit that exists to hold the proxies' peaks to: declared pools (external.pools), exported limits (external.metrics.limit, or external.metrics.conns for connection pools), or probe bursts (load.probe)"
		}
	}
	return ""
}

// aftermathWarnings say which of the verdicts on what a fault leaves
// behind the matrix cannot decide, and why: a service can leak, or never
// come back, without any other verdict noticing.
func (s aftermathPart) aftermathWarnings() []string {
	if s.Audit != nil {
		return nil // an audit's result is its map, not these verdicts
	}
	var out []string
	for _, p := range claims.Of(claims.Aftermath) {
		if why := s.Undecidable(p); why != "" {
			out = append(out, why)
		}
	}
	return out
}
