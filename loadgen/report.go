package loadgen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Validity limits (DESIGN §4, "Validity").
const (
	// RateTolerance is the largest relative shortfall or excess of sends in a
	// phase against the schedule. At least one request of slack is allowed,
	// because a request due just before a phase boundary and sent a moment
	// late is counted in the next phase.
	RateTolerance = 0.01
	// HarnessErrorLimit is the largest share of harness errors in a phase.
	HarnessErrorLimit = 0.001
)

// Report is the outcome of Run. Windows are sorted by Index (then by target
// order); Phases lists every endpoint × phase that started, phase-major.
type Report struct {
	// Start is t0: every target's send schedule is offset from it (request
	// n due at Start + n/rate for a constant rate).
	Start time.Time `json:"start"`
	// End is when the last result was recorded.
	End     time.Time    `json:"end"`
	Windows []Window     `json:"-"`
	Phases  []PhaseStats `json:"phases"`
	// Valid is true when the run was not interrupted and every phase not
	// excluded from validity is valid.
	Valid bool `json:"valid"`
	// Interrupted is true when ctx ended the run early.
	Interrupted bool `json:"interrupted,omitempty"`
	// Bursts are the records of Config.Bursts, in that order (a burst the
	// run did not reach is Abandoned with nothing counted). They take no
	// part in Windows, Phases or Valid.
	Bursts []rundata.BurstStats `json:"bursts,omitempty"`
}

// verdictInput is what a phase verdict needs beyond PhaseStats.
type verdictInput struct {
	span, planned time.Duration
	lagThreshold  time.Duration
	// canary is set for a canary target, whose lag is not judged and whose
	// latency p99 must stay under canaryMaxP99 (0: no limit).
	canary       bool
	canaryMaxP99 time.Duration
	// health is the health rule when it applies to this phase, else nil.
	health *Health
}

// judge sets Valid and Reasons on ps.
func judge(ps *PhaseStats, in verdictInput) {
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
	ps.Valid, ps.Reasons = len(rs) == 0, rs
}

// unhealthy returns the reasons ps breaks the health rule h, each naming
// the failure classes that dominate, e.g. "baseline unhealthy: 100 %
// transport_error on /a". Requests the client gave up on on purpose
// (Cancelled) are left out of both shares.
func unhealthy(ps *PhaseStats, h Health) []string {
	tot := ps.Counts.Total() - ps.Cancelled
	if tot <= 0 && ps.Cancelled > 0 {
		return nil // the client gave up on every request: nothing to judge
	}
	if tot <= 0 {
		return []string{fmt.Sprintf("%s unhealthy: no results from /%s", ps.Phase, ps.Endpoint)}
	}
	ok := float64(ps.Counts[ClassOK]) / float64(tot)
	unreachable := float64(ps.Counts[ClassTransportError]+ps.Counts[ClassClientTimeout]-ps.Cancelled) / float64(tot)
	if ok >= h.MinSuccess && unreachable <= h.MaxUnreachable {
		return nil
	}
	var parts []string
	for c := ClassRejected; c < NumClasses; c++ {
		if n := ps.Counts[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%.3g %% %s", 100*float64(n)/float64(tot), c))
		}
	}
	return []string{fmt.Sprintf("%s unhealthy: %s on /%s (success %.3g %%, needs ≥ %.3g %%; no answer %.3g %%, needs ≤ %.3g %%)",
		ps.Phase, strings.Join(parts, ", "), ps.Endpoint, 100*ok, 100*h.MinSuccess, 100*unreachable, 100*h.MaxUnreachable)}
}

// phaseStats builds the per-phase statistics after the last sample. stop is
// the offset at which the run ended (the planned duration unless
// interrupted); sent[i] is how many requests endpoint i's pacer released.
func (a *aggregator) phaseStats(stop int64, sent []int64, cfg Config) []PhaseStats {
	var out []PhaseStats
	for pi, sp := range a.cfg.phases {
		if sp.start >= stop {
			break
		}
		end := min(sp.end, stop)
		for ei, e := range a.eps {
			p := e.phases[pi]
			ps := PhaseStats{
				Endpoint: e.name, Phase: sp.name,
				Start:           a.cfg.t0.Add(time.Duration(sp.start)),
				End:             a.cfg.t0.Add(time.Duration(end)),
				Counts:          p.counts,
				Latency:         p.h.lat.quantiles(),
				LatencyOK:       p.h.ok.quantiles(),
				LatencyIntended: p.h.intended.quantiles(),
				TargetRate:      e.sched.rateAt(sp.start),
				AchievedRate:    float64(p.sent) / time.Duration(end-sp.start).Seconds(),
				Expected:        e.sched.countIn(sp.start, end),
				Sent:            p.sent,
				HarnessErrors:   p.harness,
				Cancelled:       p.cancelled,
				RetryCounts:     p.retry,
				Excluded:        slices.Contains(cfg.ExcludeFromValidity, sp.name),
			}
			if stop >= a.cfg.duration && ei < len(sent) {
				// requests sent[ei].. were never released by the pacer
				ps.Dropped = max(0, e.sched.countBefore(sp.end)-max(e.sched.countBefore(sp.start), sent[ei]))
			}
			lag := p.h.lag.quantiles()
			ps.LagP99, ps.LagMax = lag.P99, lag.Max
			for c, h := range p.byClass {
				if h != nil && h.n > 0 {
					if ps.ByClass == nil {
						ps.ByClass = map[string]Quantiles{}
					}
					ps.ByClass[Class(c).String()] = h.quantiles()
				}
			}
			if len(p.other) > 0 {
				ps.Unclassified = map[string]int64{}
				for code, n := range p.other {
					ps.Unclassified[statusKey(code)] = n
				}
			}
			if ps.TargetRate == 0 {
				// Paused: nothing was due, so there is nothing to judge.
				ps.Paused, ps.Excluded, ps.Valid = true, true, true
			} else {
				a.judgePhase(&ps, e, ei, sp, end, stop, cfg)
			}
			out = append(out, ps)
		}
	}
	return out
}

// judgePhase sets the validity verdict of ps, endpoint ei's record of
// phase sp, which ended at end (the run at stop).
func (a *aggregator) judgePhase(ps *PhaseStats, e *epAgg, ei int, sp phaseSpan, end, stop int64, cfg Config) {
	in := verdictInput{span: time.Duration(end - sp.start), planned: time.Duration(sp.end - sp.start),
		lagThreshold: time.Duration(a.cfg.lagThreshold)}
	if ei < len(cfg.Targets) && cfg.Targets[ei].Canary {
		in.canary, in.canaryMaxP99 = true, cfg.CanaryMaxP99
	}
	if h := cfg.Health; h != nil && slices.Contains(h.Phases, sp.name) {
		in.health = h
	}
	judge(ps, in)
	if h := in.health; h != nil && h.Stationary != nil && !in.canary && stop >= sp.end {
		if why := notStationary(a.phaseWindows(e.name, sp.name), *h.Stationary); why != "" {
			ps.Valid, ps.Reasons = false, append(ps.Reasons, why)
		}
	}
}

// statusKey names a status code in PhaseStats.Unclassified: the code, or
// "no response" for 0.
func statusKey(code uint16) string {
	if code == 0 {
		return "no response"
	}
	return strconv.Itoa(int(code))
}

// phaseWindows returns endpoint ep's closed windows of phase, in order.
func (a *aggregator) phaseWindows(ep, phase string) []Window {
	var out []Window
	for _, w := range a.windows {
		if w.Endpoint == ep && w.Phase == phase {
			out = append(out, w)
		}
	}
	return out
}
