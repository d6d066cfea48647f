package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// runFinding is what a matrix-wide claim reads of one run: whether it could
// be judged, whether the claim held in it, a number to show, and the
// evidence when it did not hold.
type runFinding struct {
	judged, holds bool
	value         float64
	evidence      string
}

// matrixClaim judges a claim that must hold in every usable run of the
// matrix. A run where it failed decides NOT SUPPORTED whatever the other
// cells' runs were; SUPPORTED needs every cell to have usable runs, each
// judged (INVALID when a cell had only INVALID runs, INCONCLUSIVE when a
// usable run could not be judged).
//
// With majority, a cell decides NOT SUPPORTED only when at least half of
// its judged runs failed; a cell where fewer did makes the verdict
// INCONCLUSIVE, naming them (a noisy run, or a service that does not
// always fail), for a claim whose single run can be moved by the machine.
func matrixClaim(name, claim string, cells []Cell, ex rundata.Expectations, valueName, valueUnit string, majority bool,
	read func(measure.RunSummary) runFinding) Verdict {
	var need [][2]string
	for _, c := range cells {
		if len(c.UsedRuns) > 0 {
			need = append(need, [2]string{c.Condition, c.Mode})
		}
	}
	b := newBuilder(name, claim, cells, ex, need...)
	var held, values, cellsHeld []float64
	var failed, unjudged, minority []string
	for _, c := range b.cells {
		var cellFailed []string
		judged := 0
		for _, r := range c.UsedRuns {
			f := read(r)
			switch {
			case !f.judged:
				unjudged = append(unjudged, r.ID)
				continue
			case f.holds:
				held = append(held, 1)
			default:
				held = append(held, 0)
				cellFailed = append(cellFailed, r.ID+": "+f.evidence)
			}
			judged++
			values = append(values, f.value)
		}
		switch {
		case judged == 0:
		case majority && 2*len(cellFailed) < judged:
			cellsHeld = append(cellsHeld, 1)
			for _, f := range cellFailed {
				minority = append(minority, fmt.Sprintf("%s (in %d of %d runs of %s/%s)", f, len(cellFailed), judged, c.Condition, c.Mode))
			}
		case len(cellFailed) > 0:
			cellsHeld = append(cellsHeld, 0)
			failed = append(failed, cellFailed...)
		default:
			cellsHeld = append(cellsHeld, 1)
		}
	}
	if majority {
		b.info("runs in which it held", "share", measure.EstimateOf(held))
		b.check("cells where it held in more than half the runs", "share", measure.EstimateOf(cellsHeld), ">=", 1)
	} else {
		b.check("runs in which it held", "share", measure.EstimateOf(held), ">=", 1)
	}
	if len(minority) > 0 && len(failed) == 0 {
		b.unsure = append(b.unsure, "it failed in fewer than half the runs of a cell: "+strings.Join(minority, "; "))
	}
	b.info(valueName, valueUnit, maxEstimate(values))
	if len(failed) > 0 {
		b.notes = append(b.notes, strings.Join(failed, "; "))
		return b.decide()
	}
	var allInvalid []string
	var leftOut []Exclusion
	for i := range cells {
		if c := &cells[i]; len(c.UsedRuns) == 0 && len(c.excluded) > 0 {
			allInvalid = append(allInvalid, cellLeftOut(c))
			leftOut = append(leftOut, c.Excluded...)
		}
	}
	if len(allInvalid) > 0 {
		v := b.decide()
		v.Outcome, v.Reason = Invalid, "no valid run to judge — "+strings.Join(allInvalid, "; ")
		v.Excluded = append(v.Excluded, leftOut...)
		return v
	}
	if len(unjudged) > 0 {
		b.unsure = append(b.unsure, "could not be judged in "+strings.Join(unjudged, ", "))
	}
	v := b.decide()
	if len(held) == 0 && v.Outcome != Skipped {
		v.Outcome, v.Reason = Skipped, "no run it can judge"
		if len(unjudged) > 0 {
			v.Reason += " (" + strings.Join(unjudged, ", ") + ")"
		}
	}
	return v
}

// maxEstimate is the largest of v (NaN dropped) as a point estimate.
func maxEstimate(v []float64) measure.Estimate {
	m, n := math.NaN(), 0
	for _, x := range v {
		if math.IsNaN(x) {
			continue
		}
		n++
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return measure.Estimate{Mean: m, Lo: math.NaN(), Hi: math.NaN(), N: n}
}

// recoveryVerdict: after the fault every endpoint is back at its baseline
// within the bound and stays there (RecoveryRule), in every run.
func recoveryVerdict(cells []Cell, ex rundata.Expectations) Verdict {
	return matrixClaim("RECOVERY", fmt.Sprintf("after the fault every endpoint is back at its baseline within %s T and stays there", measure.FmtG(ex.RecoveryMaxT)),
		cells, ex, "longest time to recover", "T", true, func(r measure.RunSummary) runFinding {
			rec := r.Recovery
			if rec == nil {
				return runFinding{}
			}
			f := runFinding{judged: rec.Judged, holds: rec.Recovered, value: float64(rec.TimeT)}
			var bad []string
			for _, e := range rec.Endpoints {
				if !e.Recovered {
					bad = append(bad, e.String())
				}
			}
			f.evidence = strings.Join(bad, ", ")
			return f
		})
}

// noLeakVerdict: no run lost a permit after its fault (LeakRule).
func noLeakVerdict(cells []Cell, ex rundata.Expectations) Verdict {
	return matrixClaim("NO-LEAK", "a fault leaves no permit taken: after it every pool has all its permits back",
		cells, ex, "most permits lost in a run", "permits", false, func(r measure.RunSummary) runFinding {
			l := r.Leaks
			if l == nil {
				return runFinding{}
			}
			f := runFinding{judged: l.Judged || l.Leaked > 0, holds: l.Leaked == 0, value: float64(l.Leaked)}
			var bad []string
			for _, p := range l.Pools {
				if p.Leaked > 0 {
					bad = append(bad, p.String())
				}
			}
			f.evidence = strings.Join(bad, ", ")
			return f
		})
}

// limitVerdict: no dependency ever had more calls in flight than its limit
// (LimitRule).
func limitVerdict(cells []Cell, ex rundata.Expectations) Verdict {
	return matrixClaim("LIMIT-HOLDS", "no dependency ever has more calls in flight than the limit on them, bursts included",
		cells, ex, "largest excess over a limit", "calls", false, func(r measure.RunSummary) runFinding {
			if len(r.Limits) == 0 {
				return runFinding{}
			}
			f := runFinding{judged: true, holds: true}
			for _, c := range r.Limits {
				f.holds = f.holds && c.Holds
				f.value = math.Max(f.value, float64(c.Excess))
			}
			f.evidence = measure.DescribeLimits(r.Limits)
			return f
		})
}

// aftermathVerdicts are the verdicts on what a fault leaves behind.
func aftermathVerdicts(cells []Cell, ex rundata.Expectations) []Verdict {
	return []Verdict{recoveryVerdict(cells, ex), noLeakVerdict(cells, ex), limitVerdict(cells, ex)}
}
