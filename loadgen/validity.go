package loadgen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The validity rule: a run is evidence only if the load generator kept the
// open model in every judged phase and the target answered. An endpoint's
// phase that breaks any part of the rule is INVALID (PhaseStats.Valid false,
// with the reasons); a run with an INVALID phase is INVALID (Report.Valid
// false), and the analysis never counts it for or against the hypothesis.

// Validity limits (docs/design.md §4, "Validity").
const (
	// RateTolerance is the largest relative shortfall or excess of sends in a
	// phase against the schedule. At least one request of slack is allowed,
	// because a request due just before a phase boundary and sent a moment
	// late is counted in the next phase.
	RateTolerance = 0.01
	// HarnessErrorLimit is the largest share of harness errors in a phase.
	HarnessErrorLimit = 0.001
)

// validityInput is what the validity rule needs of a phase beyond its
// PhaseStats.
type validityInput struct {
	span, planned time.Duration
	lagThreshold  time.Duration
	// canary is set for a canary target, whose lag is not judged and whose
	// latency p99 must stay under canaryMaxP99 (0: no limit).
	canary       bool
	canaryMaxP99 time.Duration
	// health is the health rule when it applies to this phase, else nil.
	health *Health
}

// invalidReasons is the validity rule of one endpoint's phase: why it is
// INVALID (interrupted; sends off the schedule's rate; schedule lag; load
// generator errors; requests never sent; a slow canary; an unhealthy
// target), nil when it is valid.
func invalidReasons(ps *PhaseStats, in validityInput) []string {
	var rs []string
	if in.span < in.planned {
		rs = append(rs, fmt.Sprintf("interrupted after %v of %v", in.span.Round(time.Millisecond), in.planned))
	}
	if diff, tol := math.Abs(float64(ps.Sent-ps.Expected)), math.Max(RateTolerance*float64(ps.Expected), 1); diff > tol {
		rs = append(rs, fmt.Sprintf("achieved rate %.2f/s vs target %.2f/s: %d sends where the schedule had %d (tolerance %.0f)",
			ps.AchievedRate, ps.TargetRate, ps.Sent, ps.Expected, tol))
	}
	// A canary's few requests make its lag p99 nearly its maximum: the
	// load generator's lag is judged on the endpoints, not on it.
	if ps.LagP99 >= in.lagThreshold && !in.canary {
		rs = append(rs, fmt.Sprintf("schedule lag p99 %v is not under the %v threshold (max %v)",
			ps.LagP99, in.lagThreshold, ps.LagMax))
	}
	if ps.HarnessErrors > 0 && float64(ps.HarnessErrors) >= HarnessErrorLimit*float64(max(ps.Expected, 1)) {
		rs = append(rs, fmt.Sprintf("%d load-generator errors (%.3f%% of %d, limit %.1f%%)", ps.HarnessErrors,
			100*float64(ps.HarnessErrors)/float64(max(ps.Expected, 1)), ps.Expected, 100*HarnessErrorLimit))
	}
	if ps.Dropped > 0 {
		rs = append(rs, fmt.Sprintf("%d scheduled requests were never sent", ps.Dropped))
	}
	if in.canary && in.canaryMaxP99 > 0 && ps.Latency.Count > 0 && ps.Latency.P99 > in.canaryMaxP99 {
		rs = append(rs, fmt.Sprintf("canary p99 %v exceeds %v (a request that does no work was slow: the service or the machine was starved)",
			ps.Latency.P99.Round(10*time.Microsecond), in.canaryMaxP99))
	}
	if in.health != nil {
		rs = append(rs, unhealthy(ps, *in.health)...)
	}
	return rs
}

// unhealthy returns the reasons ps breaks the health rule h, each naming
// the failure classes that dominate, e.g. "baseline unhealthy: 100 %
// transport_error on /a". Requests the client gave up on on purpose
// (Cancelled) and requests answered after the phase ended (Overran: the
// next phase's fault may have answered them) are left out of both shares.
func unhealthy(ps *PhaseStats, h Health) []string {
	var counts Counts
	for c := range counts {
		counts[c] = ps.Counts[c] - ps.Overran[c]
	}
	if counts.Total() <= ps.Cancelled {
		// Every answer came after the phase (a target that hangs): they
		// are the phase's own, to be judged.
		counts = ps.Counts
	}
	tot := counts.Total() - ps.Cancelled
	if tot <= 0 && ps.Cancelled > 0 {
		return nil // the client gave up on every request: nothing to judge
	}
	if tot <= 0 {
		return []string{fmt.Sprintf("%s unhealthy: no results from /%s", ps.Phase, ps.Endpoint)}
	}
	ok := float64(counts[ClassOK]) / float64(tot)
	unreachable := float64(counts[ClassTransportError]+counts[ClassClientTimeout]-ps.Cancelled) / float64(tot)
	if ok >= h.MinSuccess && unreachable <= h.MaxUnreachable {
		return nil
	}
	var parts []string
	for c := ClassRejected; c < NumClasses; c++ {
		if n := counts[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%.3g %% %s", 100*float64(n)/float64(tot), c))
		}
	}
	return []string{fmt.Sprintf("%s unhealthy: %s on /%s (success %.3g %%, needs ≥ %.3g %%; no answer %.3g %%, needs ≤ %.3g %%)",
		ps.Phase, strings.Join(parts, ", "), ps.Endpoint, 100*ok, 100*h.MinSuccess, 100*unreachable, 100*h.MaxUnreachable)}
}

// judgeValidity sets ps.Valid and ps.Reasons, endpoint ei's record of phase
// sp, which ended at end (the run at stop): INVALID for any of
// invalidReasons, or for a baseline that was not stationary.
func (a *aggregator) judgeValidity(ps *PhaseStats, e *epAgg, ei int, sp phaseSpan, end, stop int64, cfg Config) {
	in := validityInput{span: time.Duration(end - sp.start), planned: time.Duration(sp.end - sp.start),
		lagThreshold: time.Duration(a.cfg.lagThreshold)}
	if ei < len(cfg.Targets) && cfg.Targets[ei].Canary {
		in.canary, in.canaryMaxP99 = true, cfg.CanaryMaxP99
	}
	if h := cfg.Health; h != nil && slices.Contains(h.Phases, sp.name) {
		in.health = h
	}
	rs := invalidReasons(ps, in)
	ps.Valid, ps.Reasons = len(rs) == 0, rs
	if h := in.health; h != nil && h.Stationary != nil && !in.canary && stop >= sp.end {
		if why := notStationary(a.phaseWindows(e.name, sp.name), *h.Stationary); why != "" {
			ps.Valid, ps.Reasons = false, append(ps.Reasons, why)
		}
	}
}
