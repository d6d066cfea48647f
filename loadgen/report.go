package loadgen

import (
	"slices"
	"strconv"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
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
	// Shards are the records of the shards of a load sent by a Remote, in
	// index order; nil otherwise.
	Shards []ShardStats `json:"shards,omitempty"`
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
				Overran:         p.overran,
				RetryCounts:     p.retry,
				Excluded:        slices.Contains(cfg.ExcludeFromValidity, sp.name),
			}
			if stop >= a.cfg.duration && ei < len(sent) {
				// requests sent[ei].. were never released by the pacer
				ps.Dropped = max(0, e.sched.countBefore(sp.end)-max(e.sched.countBefore(sp.start), sent[ei]))
			}
			lag := p.h.lag.quantiles()
			ps.LagP99, ps.LagMax = lag.P99, lag.Max
			ps.ServerTiming = p.timing.record()
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
				a.judgeValidity(&ps, e, ei, sp, end, stop, cfg)
			}
			out = append(out, ps)
		}
	}
	return out
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
