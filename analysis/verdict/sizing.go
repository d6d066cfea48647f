package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// SizingCurve is a swept bulkhead size against what it did, per size: the
// culprit's rejections and successful throughput in healthy and busy, the
// victim's p99 and errors in slow, and the regions read from them.
type SizingCurve struct {
	// Mode is the swept mode; Field the swept field.
	Mode  string `json:"mode"`
	Field string `json:"field"`
	// Points are sorted by Size.
	Points []SizingPoint `json:"points"`
	// LittleDemand is the culprit's in-flight demand in healthy by
	// Little's law (rate × holding time); LittleSize is it times the
	// headroom, rounded up: the size `bulkheadlab size` recommends.
	LittleDemand measure.Num `json:"little_demand"`
	LittleSize   int         `json:"little_size"`
	// GoodLo and GoodHi bound the good region: the sizes that neither
	// reject the culprit's healthy traffic nor let the slow culprit hurt
	// the victim (null when no swept size is good). The region is the
	// longest run of adjacent good sizes.
	GoodLo measure.Num `json:"good_lo"`
	GoodHi measure.Num `json:"good_hi"`
}

// SizingPoint is one swept size.
type SizingPoint struct {
	Size  float64 `json:"size"`
	Value string  `json:"value"`
	// Modes of the cells (the variant's name).
	Mode                string           `json:"mode"`
	HealthyRejected     measure.Estimate `json:"healthy_rejected_share"`
	HealthyOKPerS       measure.Estimate `json:"healthy_ok_per_s"`
	BusyRejected        measure.Estimate `json:"busy_rejected_share"`
	BusyOKPerS          measure.Estimate `json:"busy_ok_per_s"`
	SlowVictimP99RiseT  measure.Estimate `json:"slow_victim_p99_rise_t"`
	SlowVictimErrorRate measure.Estimate `json:"slow_victim_error_rate"`
	// TooSmall: it rejects more than the allowed share in healthy; Hurts:
	// in slow the victim is not at its baseline (measure.AtBaseline).
	TooSmall bool `json:"too_small"`
	Hurts    bool `json:"hurts"`
	// Known is set when both were measured (valid healthy and slow runs).
	Known bool `json:"known"`
}

// Good reports whether the size is in the good region.
func (p SizingPoint) Good() bool { return p.Known && !p.TooSmall && !p.Hurts }

// Region names the size's region for the report and `size --from`.
func (p SizingPoint) Region(ex rundata.Expectations) string {
	switch {
	case !p.Known:
		return "not measured (no valid run)"
	case p.TooSmall && p.Hurts:
		return "too small, and /" + ex.Victim + " hurt"
	case p.TooSmall:
		return "too small (rejects " + ex.Healthy + " traffic)"
	case p.Hurts:
		return "too large (/" + ex.Victim + " hurt in " + ex.Slow + ")"
	}
	return "good"
}

// buildSizing computes the sizing curve of ex.Sizing's mode, nil without
// sizing roles or without a sweep of one numeric field under that mode.
func buildSizing(runs []measure.RunSummary, cells []Cell, ex rundata.Expectations) *SizingCurve {
	if ex.Sizing == nil {
		return nil
	}
	roles := ex.Sizing.WithDefaults()
	sc := &SizingCurve{Mode: roles.Mode, LittleDemand: measure.Undefined, GoodLo: measure.Undefined, GoodHi: measure.Undefined}
	bySize := map[float64]*SizingPoint{}
	for _, r := range runs {
		sw := r.Sweep
		if sw == nil || sw.Mode != roles.Mode || len(sw.Values) != 1 || math.IsNaN(sw.Values[0].Number) {
			continue
		}
		sc.Field = sw.Values[0].Field
		x := sw.Values[0].Number
		if bySize[x] == nil {
			bySize[x] = &SizingPoint{Size: x, Value: sw.Values[0].Value, Mode: r.Mode}
		}
	}
	if len(bySize) == 0 {
		return sc
	}
	cellOf := func(cond, mode string) *Cell { return FindCell(cells, cond, mode) }
	for _, p := range bySize {
		if c := cellOf(ex.Healthy, p.Mode); c != nil {
			p.HealthyRejected = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return measure.RejectedShare(r.Endpoint(ex.Culprit)) }))
			p.HealthyOKPerS = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }))
			sc.LittleDemand = littleDemand(c, ex.Culprit)
		}
		if c := cellOf(ex.Busy, p.Mode); c != nil {
			p.BusyRejected = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return measure.RejectedShare(r.Endpoint(ex.Culprit)) }))
			p.BusyOKPerS = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }))
		}
		slowBaseErr := 0.0
		if c := cellOf(ex.Slow, p.Mode); c != nil {
			p.SlowVictimP99RiseT = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.P99RiseT(ex.Victim) }))
			p.SlowVictimErrorRate = c.VictimErrorRate
			slowBaseErr = c.baselineErrorRate(ex.Victim)
		}
		p.TooSmall = p.HealthyRejected.Mean > roles.MaxHealthyRejection
		p.Hurts = !measure.AtBaseline(p.SlowVictimP99RiseT.Mean, p.SlowVictimErrorRate.Mean, slowBaseErr, ex)
		p.Known = p.HealthyRejected.Defined() && p.SlowVictimP99RiseT.Defined() && p.SlowVictimErrorRate.Defined()
		sc.Points = append(sc.Points, *p)
	}
	slices.SortFunc(sc.Points, func(a, b SizingPoint) int { return cmpFloat(a.Size, b.Size) })
	if d := float64(sc.LittleDemand); !math.IsNaN(d) {
		sc.LittleSize = max(1, int(math.Ceil(d*roles.Headroom-1e-9)))
	}
	// The good region: the longest run of adjacent good sizes.
	bestLo, bestN := -1, 0
	for i := 0; i < len(sc.Points); {
		if !sc.Points[i].Good() {
			i++
			continue
		}
		j := i
		for j < len(sc.Points) && sc.Points[j].Good() {
			j++
		}
		if j-i > bestN {
			bestLo, bestN = i, j-i
		}
		i = j
	}
	if bestN > 0 {
		sc.GoodLo, sc.GoodHi = measure.Num(sc.Points[bestLo].Size), measure.Num(sc.Points[bestLo+bestN-1].Size)
	}
	return sc
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// littleDemand is the culprit's in-flight demand in the cell's runs by
// Little's law: the baseline demand the spec predicted for the culprit's
// own (nested) bulkhead, mean over the runs.
func littleDemand(c *Cell, culprit string) measure.Num {
	var sum float64
	var n int
	for _, r := range c.UsedRuns {
		for _, p := range r.Pools {
			if p.Pool == rundata.LimitPoolName(culprit) || p.Pool == culprit {
				if d := float64(p.PredictedDemand); !math.IsNaN(d) {
					// PoolStats' predicted demand is the fault phase's; in
					// healthy that is the baseline's.
					sum += d
					n++
				}
			}
		}
	}
	if n == 0 {
		return measure.Undefined
	}
	return measure.Num(sum / float64(n))
}

// sizingDecisions are seed-004's two sizing claims and Little's law's size
// against the measured good region, judged on the sizing curve
// (Summary.Sizing) when Expectations.Sizing names the swept mode. Without a
// sweep under that mode each says so, on the healthy cell of the mode.
var sizingDecisions = []decision{
	{claims.SizingTooSmall, func(s *Summary) string {
		ex, sc := s.Expectations, s.Sizing
		if len(sc.Points) == 0 {
			return noSweep(s)
		}
		return fmt.Sprintf("a bulkhead sized so small it rejects during normal operation: /%s's bulkhead of %s rejects more than %s of its healthy traffic, and a larger one does not",
			ex.Culprit, sc.Points[0].Value, measure.FmtG(ex.Sizing.WithDefaults().MaxHealthyRejection))
	}, sizingTooSmall},
	{claims.SizingTooLarge, func(s *Summary) string {
		ex, sc := s.Expectations, s.Sizing
		if len(sc.Points) == 0 {
			return noSweep(s)
		}
		return fmt.Sprintf("a bulkhead sized so large it never binds is no bulkhead: with /%s's bulkhead at %s, a slow %s hurts /%s",
			ex.Culprit, sc.Points[len(sc.Points)-1].Value, ex.Culprit, ex.Victim)
	}, sizingTooLarge},
	{claims.SizingLittle, func(s *Summary) string {
		if len(s.Sizing.Points) == 0 {
			return noSweep(s)
		}
		return fmt.Sprintf("Little's law's size (demand × %s, rounded up) lies in the measured good region", measure.FmtG(s.Expectations.Sizing.WithDefaults().Headroom))
	}, sizingLittle},
}

// noSweep is a sizing claim's text without a sweep to judge.
func noSweep(s *Summary) string {
	return "no sweep of one numeric field under mode " + s.Expectations.Sizing.Mode
}

// sweepless decides a sizing claim without a sweep: SKIPPED, on the healthy
// cell of the mode named; ok is false when there is a sweep.
func sweepless(b *builder, s *Summary) (v Verdict, ok bool) {
	if len(s.Sizing.Points) > 0 {
		return Verdict{}, false
	}
	b.need([2]string{s.Expectations.Healthy, s.Expectations.Sizing.Mode})
	return b.decide(), true
}

// sizingTooSmall: the smallest size rejects the culprit's healthy traffic,
// the largest does not.
func sizingTooSmall(b *builder, s *Summary) Verdict {
	if v, ok := sweepless(b, s); ok {
		return v
	}
	ex, sc := s.Expectations, s.Sizing
	roles := ex.Sizing.WithDefaults()
	first, last := sc.Points[0], sc.Points[len(sc.Points)-1]
	b.need([2]string{ex.Healthy, first.Mode}, [2]string{ex.Healthy, last.Mode})
	b.check(fmt.Sprintf("size %s: /%s rejected in %s", first.Value, ex.Culprit, ex.Healthy), "share", first.HealthyRejected, ">", roles.MaxHealthyRejection)
	b.check(fmt.Sprintf("size %s: /%s rejected in %s", last.Value, ex.Culprit, ex.Healthy), "share", last.HealthyRejected, "<=", roles.MaxHealthyRejection)
	return b.decide()
}

// sizingTooLarge: with the largest size the slow culprit hurts the victim.
func sizingTooLarge(b *builder, s *Summary) Verdict {
	if v, ok := sweepless(b, s); ok {
		return v
	}
	ex, sc := s.Expectations, s.Sizing
	first, last := sc.Points[0], sc.Points[len(sc.Points)-1]
	b.need([2]string{ex.Slow, last.Mode})
	b.check(fmt.Sprintf("size %s: /%s harm in %s: max(p99 rise / %sT, error rate / %s)", last.Value, ex.Victim, ex.Slow, measure.FmtG(ex.P2MaxP99RiseT), measure.FmtG(ex.P2MaxErrorRate)),
		"×", bootstrapHarm(s.Cells, ex, last.Mode), ">", 1)
	b.info(fmt.Sprintf("size %s: /%s p99 rise in %s", first.Value, ex.Victim, ex.Slow), "T", first.SlowVictimP99RiseT)
	return b.decide()
}

// sizingLittle: Little's law's size lies in the measured good region.
func sizingLittle(b *builder, s *Summary) Verdict {
	if v, ok := sweepless(b, s); ok {
		return v
	}
	ex, sc := s.Expectations, s.Sizing
	roles := ex.Sizing.WithDefaults()
	for _, p := range sc.Points {
		b.need([2]string{ex.Healthy, p.Mode}, [2]string{ex.Slow, p.Mode})
	}
	in := measure.Undefined
	if !math.IsNaN(float64(sc.GoodLo)) && sc.LittleSize > 0 {
		in = share(true, float64(sc.LittleSize) >= float64(sc.GoodLo) && float64(sc.LittleSize) <= float64(sc.GoodHi))
	} else if sc.LittleSize > 0 {
		in = 0 // no good region: it cannot lie in it
	}
	b.check("Little's-law size inside the good region", "share", measure.Estimate{Mean: float64(in), Lo: math.NaN(), Hi: math.NaN(), N: 1}, ">=", 1)
	b.info("Little's-law demand in "+ex.Healthy, "permits", measure.Estimate{Mean: float64(sc.LittleDemand), Lo: math.NaN(), Hi: math.NaN(), N: 1})
	b.info("Little's-law size", "permits", measure.Estimate{Mean: float64(sc.LittleSize), Lo: math.NaN(), Hi: math.NaN(), N: 1})
	b.info("good region, smallest size", "permits", measure.Estimate{Mean: float64(sc.GoodLo), Lo: math.NaN(), Hi: math.NaN(), N: 1})
	b.info("good region, largest size", "permits", measure.Estimate{Mean: float64(sc.GoodHi), Lo: math.NaN(), Hi: math.NaN(), N: 1})
	b.notes = append(b.notes, fmt.Sprintf("good: rejects at most %s of %s's /%s traffic and keeps /%s at its baseline in %s (P2's rule)",
		measure.FmtG(roles.MaxHealthyRejection), ex.Healthy, ex.Culprit, ex.Victim, ex.Slow))
	return b.decide()
}

// bootstrapHarm is the victim's harm in the slow cell of mode: the larger
// of its p99 rise over P2's limit and its error rate over P2's limit.
func bootstrapHarm(cells []Cell, ex rundata.Expectations, mode string) measure.Estimate {
	c := FindCell(cells, ex.Slow, mode)
	if c == nil {
		return measure.Estimate{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Harm(ex.Victim, ex) }))
}
