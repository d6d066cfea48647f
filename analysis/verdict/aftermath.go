package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// runFinding is what a matrix-wide claim reads of one run: whether it could
// be judged, whether the claim held in it, a number to show, and the
// evidence when it did not hold.
type runFinding struct {
	judged, holds bool
	value         float64
	evidence      string
	// doubt, on a run where the claim did not hold, says why that is not
	// certain on its own (the machine could have caused it, the limit was
	// only inferred); empty: the run is a counterexample.
	doubt string
	// unsure, on a run that could not be judged, says why that leaves a
	// violation possible; empty: the run cannot exercise the claim at all
	// (no fault, no limit to hold), which is no doubt about it.
	unsure string
}

// matrixClaim judges an invariant, a claim that must hold in every usable
// run of the matrix, by counterexample:
//   - NOT SUPPORTED as soon as one valid, complete run shows a violation
//     whose evidence is itself certain (whatever the other cells' runs
//     were: a cell that cannot exercise the failure never dilutes it), or
//     when violations with a doubt repeat in at least two runs and half the
//     judged runs of a cell (the doubt does not explain them away);
//   - INVALID when no counterexample was found and a cell had only INVALID
//     runs;
//   - INCONCLUSIVE when a violation's evidence is uncertain (each run named,
//     with why) or a run that could show one could not be judged;
//   - SKIPPED when no run could be judged at all;
//   - SUPPORTED when every cell has usable runs and none violates it.
func matrixClaim(b *builder, cells []Cell, valueName, valueUnit string, read func(measure.RunSummary) runFinding) Verdict {
	for _, c := range cells {
		if len(c.UsedRuns) > 0 {
			b.need([2]string{c.Condition, c.Mode})
		}
	}
	var held, values []float64
	var counter, repeated, doubts, unjudged []string
	inapplicable, runs := 0, 0
	for _, c := range b.cells {
		var cellDoubts []string
		judged := 0
		for _, r := range c.UsedRuns {
			runs++
			f := read(r)
			switch {
			case !f.judged && f.unsure != "":
				unjudged = append(unjudged, r.ID+" ("+f.unsure+")")
				continue
			case !f.judged:
				inapplicable++
				continue
			case f.holds:
				held = append(held, 1)
			case f.doubt == "":
				held = append(held, 0)
				counter = append(counter, r.ID+": "+f.evidence)
			default:
				held = append(held, 0)
				cellDoubts = append(cellDoubts, r.ID+": "+f.evidence+" — "+f.doubt)
			}
			judged++
			values = append(values, f.value)
		}
		if len(cellDoubts) >= 2 && 2*len(cellDoubts) >= judged {
			for _, d := range cellDoubts {
				repeated = append(repeated, fmt.Sprintf("%s (in %d of %d runs of %s/%s)", d, len(cellDoubts), judged, c.Condition, c.Mode))
			}
		} else {
			doubts = append(doubts, cellDoubts...)
		}
	}
	b.info("runs in which it held", "share", measure.EstimateOf(held))
	b.info(valueName, valueUnit, maxEstimate(values))
	if inapplicable > 0 && len(held) > 0 {
		b.notes = append(b.notes, fmt.Sprintf("judged in %d of %s: the others could not exercise it", len(held)+len(unjudged), Runs(runs)))
	}
	if len(counter)+len(repeated) > 0 {
		v := b.decide()
		v.Outcome = NotSupported
		v.Reason = "violated in " + strings.Join(append(counter, repeated...), "; ")
		return v
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
	if len(doubts) > 0 {
		b.unsure = append(b.unsure, "a violation whose evidence is not certain: "+strings.Join(doubts, "; "))
	}
	if len(unjudged) > 0 {
		b.unsure = append(b.unsure, "could not be judged in "+strings.Join(unjudged, ", "))
	}
	v := b.decide()
	if len(held) == 0 && v.Outcome != Skipped && len(doubts) == 0 {
		v.Outcome, v.Reason = Skipped, "no run it can judge"
		if len(unjudged) > 0 {
			v.Reason += ": " + strings.Join(unjudged, ", ")
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

// aftermathDecisions are the verdicts on what a fault leaves behind, each
// judged in every cell of the matrix.
var aftermathDecisions = []decision{
	{claims.Recovery, func(s *Summary) string {
		return fmt.Sprintf("after the fault every endpoint is back at its baseline within %s T and stays there", measure.FmtG(s.Expectations.RecoveryMaxT))
	}, recoveryVerdict},
	{claims.NoLeak, func(*Summary) string {
		return "a fault leaves no permit taken: after it every pool has all its permits back"
	}, noLeakVerdict},
	{claims.LimitHolds, func(*Summary) string {
		return "no dependency ever has more calls in flight than the limit on them, bursts included"
	}, limitVerdict},
}

// recoveryVerdict: after the fault every endpoint is back at its baseline
// within the bound and stays there (RecoveryRule), in every run. An
// endpoint still failing at the end of the recovery phase is a
// counterexample; one that came back late, or is still slow but not
// failing, is a violation with a doubt (a busy machine delays; a longer
// recovery phase would tell a slow recovery from none).
func recoveryVerdict(b *builder, s *Summary) Verdict {
	ex := s.Expectations
	return matrixClaim(b, s.Cells, "longest time to recover", "T", func(r measure.RunSummary) runFinding {
		rec := r.Recovery
		if rec == nil {
			return runFinding{}
		}
		f := runFinding{judged: rec.Judged, holds: rec.Recovered, value: float64(rec.TimeT)}
		var bad, doubts, unsure []string
		certain := false
		for _, e := range rec.Endpoints {
			switch {
			case !e.Judged && e.Noisy:
				unsure = append(unsure, "/"+e.Endpoint+" missed in latency alone while the canary was slow")
			case !e.Judged:
				unsure = append(unsure, "/"+e.Endpoint+"'s recovery phase ended too soon after it came back to tell")
			case e.Recovered:
			case math.IsNaN(float64(e.TimeT)) && float64(e.LastErrorRate) > ex.DegradedErrorRate:
				certain = true
				bad = append(bad, e.String())
			case math.IsNaN(float64(e.TimeT)):
				bad = append(bad, e.String())
				doubts = append(doubts, "/"+e.Endpoint+" was still slow but not failing at the end: a longer recovery phase would tell a slow recovery from none")
			default:
				bad = append(bad, e.String())
				doubts = append(doubts, "/"+e.Endpoint+" came back in full, only late: a busy machine delays a recovery")
			}
		}
		f.evidence = strings.Join(bad, ", ")
		if !certain {
			f.doubt = strings.Join(doubts, "; ")
		}
		if !f.judged {
			f.unsure = strings.Join(unsure, "; ")
			if f.unsure == "" {
				f.unsure = "its recovery could not be told"
			}
		}
		return f
	})
}

// noLeakVerdict: no run lost a permit after its fault (LeakRule). Every
// source of a leak finding is certain evidence: the pool's own count beside
// the proxies' (improbable by the baseline's own samples), a probe's peak,
// or rejections to the run's end with fewer calls in flight than the
// limit.
func noLeakVerdict(b *builder, s *Summary) Verdict {
	return matrixClaim(b, s.Cells, "most permits lost in a run", "permits", func(r measure.RunSummary) runFinding {
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
// (LimitRule). A declared or exported limit that did not hold is a
// counterexample; an inferred one a doubt.
func limitVerdict(b *builder, s *Summary) Verdict {
	return matrixClaim(b, s.Cells, "largest excess over a limit", "calls", func(r measure.RunSummary) runFinding {
		if len(r.Limits) == 0 {
			return runFinding{}
		}
		f := runFinding{judged: true, holds: true}
		var doubts []string
		certain := false
		for _, c := range r.Limits {
			f.holds = f.holds && c.Holds
			f.value = math.Max(f.value, float64(c.Excess))
			certain = certain || c.Certain()
			if !c.Holds && c.Doubt != "" {
				doubts = append(doubts, c.Doubt)
			}
		}
		f.evidence = measure.DescribeLimits(r.Limits)
		if !certain && len(doubts) > 0 {
			f.doubt = doubts[0]
		}
		return f
	})
}
