package loadgen

import (
	"math"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// The validity rule: a run is evidence only if the load generator kept the
// open model in every judged phase and the target answered. An endpoint's
// phase that breaks any part of the rule is INVALID (PhaseStats.Valid false,
// with a rundata.Broken record of each part it broke: the rule, the
// numbers, never words); a run with an INVALID phase is INVALID
// (Report.Valid false), and the analysis never counts it for or against the
// hypothesis.

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

// brokenRules is the validity rule of one endpoint's phase: the records of
// the parts it breaks (interrupted; sends off the schedule's rate;
// schedule lag; load generator errors; requests never sent; a slow canary;
// an unhealthy target), nil when it is valid.
func brokenRules(ps *PhaseStats, in validityInput) []rundata.Broken {
	at := func(rule rundata.Rule, measured, limit float64, unit rundata.Unit) rundata.Broken {
		return rundata.Broken{Rule: rule, Endpoint: ps.Endpoint, Phase: ps.Phase, Measured: measured, Limit: limit, Unit: unit}
	}
	var bs []rundata.Broken
	if in.span < in.planned {
		bs = append(bs, at(rundata.RuleInterrupted, float64(in.span), float64(in.planned), rundata.UnitNanos))
	}
	if diff, tol := math.Abs(float64(ps.Sent-ps.Expected)), math.Max(RateTolerance*float64(ps.Expected), 1); diff > tol {
		b := at(rundata.RuleRate, ps.AchievedRate, ps.TargetRate, rundata.UnitPerSecond)
		b.Count, b.Of, b.Tolerance = ps.Sent, ps.Expected, tol
		bs = append(bs, b)
	}
	// A canary's few requests make its lag p99 nearly its maximum: the
	// load generator's lag is judged on the endpoints, not on it.
	if ps.LagP99 >= in.lagThreshold && !in.canary {
		b := at(rundata.RuleLag, float64(ps.LagP99), float64(in.lagThreshold), rundata.UnitNanos)
		b.Max = float64(ps.LagMax)
		bs = append(bs, b)
	}
	if ps.HarnessErrors > 0 && float64(ps.HarnessErrors) >= HarnessErrorLimit*float64(max(ps.Expected, 1)) {
		b := at(rundata.RuleHarness, 100*float64(ps.HarnessErrors)/float64(max(ps.Expected, 1)), 100*HarnessErrorLimit, rundata.UnitPercent)
		b.Count, b.Of = ps.HarnessErrors, ps.Expected
		bs = append(bs, b)
	}
	if ps.Dropped > 0 {
		bs = append(bs, at(rundata.RuleUnsent, float64(ps.Dropped), 0, rundata.UnitCount))
	}
	if in.canary && in.canaryMaxP99 > 0 && ps.Latency.Count > 0 && ps.Latency.P99 > in.canaryMaxP99 {
		bs = append(bs, at(rundata.RuleCanary, float64(ps.Latency.P99), float64(in.canaryMaxP99), rundata.UnitNanos))
	}
	if in.health != nil {
		if b, ok := unhealthy(ps, *in.health); ok {
			bs = append(bs, b)
		}
	}
	return bs
}

// unhealthy returns the record of ps breaking the health rule h, with the
// share of every failure class, and whether it does. Requests the client
// gave up on on purpose (Cancelled) and requests answered after the phase
// ended (Overran: the next phase's fault may have answered them) are left
// out of every share.
func unhealthy(ps *PhaseStats, h Health) (rundata.Broken, bool) {
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
		return rundata.Broken{}, false // the client gave up on every request: nothing to judge
	}
	b := rundata.Broken{Rule: rundata.RuleHealth, Endpoint: ps.Endpoint, Phase: ps.Phase, Limit: 100 * h.MinSuccess,
		Unit: rundata.UnitPercent, MaxUnanswered: 100 * h.MaxUnreachable}
	if tot <= 0 {
		return b, true // no results at all
	}
	ok := float64(counts[ClassOK]) / float64(tot)
	unreachable := float64(counts[ClassTransportError]+counts[ClassClientTimeout]-ps.Cancelled) / float64(tot)
	if ok >= h.MinSuccess && unreachable <= h.MaxUnreachable {
		return rundata.Broken{}, false
	}
	b.Measured, b.Unanswered, b.Count = 100*ok, 100*unreachable, tot
	for c := ClassRejected; c < NumClasses; c++ {
		if n := counts[c]; n > 0 {
			b.Classes = append(b.Classes, rundata.ClassShare{Class: c, Share: 100 * float64(n) / float64(tot)})
		}
	}
	return b, true
}

// judgeValidity sets ps.Valid and ps.Broken, endpoint ei's record of phase
// sp, which ended at end (the run at stop): INVALID for any of
// brokenRules, or for a baseline that was not stationary.
func (a *aggregator) judgeValidity(ps *PhaseStats, e *epAgg, ei int, sp phaseSpan, end, stop int64, cfg Config) {
	in := validityInput{span: time.Duration(end - sp.start), planned: time.Duration(sp.end - sp.start),
		lagThreshold: time.Duration(a.cfg.lagThreshold)}
	if ei < len(cfg.Targets) && cfg.Targets[ei].Canary {
		in.canary, in.canaryMaxP99 = true, cfg.CanaryMaxP99
	}
	if h := cfg.Health; h != nil && slices.Contains(h.Phases, sp.name) {
		in.health = h
	}
	ps.Broken = brokenRules(ps, in)
	if h := in.health; h != nil && h.Stationary != nil && !in.canary && stop >= sp.end {
		if b, ok := notStationary(a.phaseWindows(e.name, sp.name), *h.Stationary); ok {
			ps.Broken = append(ps.Broken, b)
		}
	}
	ps.Valid = len(ps.Broken) == 0
}

// judgeRun sets rep.Valid, the run's verdict: it was not interrupted, and
// every phase that counts towards validity (not Excluded) is valid.
func judgeRun(rep *Report) {
	rep.Valid = !rep.Interrupted
	for _, ps := range rep.Phases {
		rep.Valid = rep.Valid && (ps.Valid || ps.Excluded)
	}
}
