package runner

import (
	"slices"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// TargetDownShare is the share of a phase's results that must be transport
// errors (refused, reset, closed: no HTTP answer) for its broken health
// rule to count as the target's own failure.
const TargetDownShare = 0.5

// targetDown reports whether rep, INVALID, is so because the target did
// not answer: a phase broke the health rule (rundata.RuleHealth) with
// transport errors in at least TargetDownShare of its results. A busy
// machine delays requests, it does not refuse or reset connections: running
// such a run again only meets the same dead target, whatever other rule
// (lag, canary…) the same run also broke. A run INVALID by other rules
// alone may be the machine's, and is worth another attempt.
func targetDown(rep *loadgen.Report) bool {
	for _, ps := range rep.Phases {
		if ps.Valid || ps.Excluded || !slices.ContainsFunc(ps.Broken, isHealth) {
			continue
		}
		if tot := ps.Counts.Total(); tot > 0 && float64(ps.Counts[rundata.ClassTransportError]) >= TargetDownShare*float64(tot) {
			return true
		}
	}
	return false
}

// isHealth reports whether b is a break of the health rule.
func isHealth(b rundata.Broken) bool { return b.Rule == rundata.RuleHealth }
