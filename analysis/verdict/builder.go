package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// builder assembles one verdict: the cells it needs, its measures, and the
// outcome rules common to every prediction (see decide).
type builder struct {
	v       Verdict
	ex      rundata.Expectations
	all     []Cell   // every cell of the matrix
	cells   []*Cell  // the cells it compares, in the order they were needed
	missing []string // cells without any run
	invalid []string // cells whose runs are all excluded as INVALID or damaged: why
	notes   []string
	unsure  []string // reasons the data cannot decide, besides the measures
	// undecidable are reasons the measures cannot be trusted at all (the
	// results they count were not classified): INCONCLUSIVE even when a
	// measure fails.
	undecidable []string
}

// newBuilder starts the verdict of claim name, stated as claim, on the
// cells all under ex; need adds the cells it compares.
func newBuilder(name, claim string, all []Cell, ex rundata.Expectations) *builder {
	return &builder{v: Verdict{Name: name, Claim: claim}, ex: ex, all: all}
}

// need adds the cells (condition, mode) the verdict compares, in order, to
// b.cells: a cell without any run is missing, one whose runs were all left
// out as INVALID or damaged makes the verdict INVALID.
func (b *builder) need(keys ...[2]string) {
	for _, k := range keys {
		c := FindCell(b.all, k[0], k[1])
		if c == nil {
			b.missing = append(b.missing, k[0]+"/"+k[1])
			b.cells = append(b.cells, &Cell{Condition: k[0], Mode: k[1]})
			continue
		}
		b.cells = append(b.cells, c)
		b.v.Runs = append(b.v.Runs, c.Runs...)
		b.v.Excluded = append(b.v.Excluded, c.Excluded...)
		if len(c.UsedRuns) > 0 {
			continue
		}
		if slices.ContainsFunc(c.excluded, func(r measure.RunSummary) bool { return len(r.Damaged) > 0 || !r.Valid }) {
			b.invalid = append(b.invalid, cellLeftOut(c))
		} else {
			b.missing = append(b.missing, k[0]+"/"+k[1])
		}
	}
}

// victimP99AtBaseline adds the victim's p99 half of measure.AtBaseline in
// cell c as a deciding number: its fault p99's rise over its baseline p99,
// in T, less what the machine alone could have added in each run
// (measure.MachineRule: a busy but valid run does not fail a correct
// service; a note names each run it was taken from). in ends the
// measure's name (" in <mode>", or "").
func (b *builder) victimP99AtBaseline(c *Cell, in string) {
	ex := b.ex
	rise := measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.P99RiseBeyondMachineT(ex.Victim) }))
	b.check("/"+ex.Victim+" fault p99 − baseline p99"+in, "T", rise, "<=", ex.P2MaxP99RiseT)
	for _, r := range c.UsedRuns {
		raw, net := r.P99RiseT(ex.Victim), r.P99RiseBeyondMachineT(ex.Victim)
		if raw > net {
			b.notes = append(b.notes, fmt.Sprintf("%s: /%s's p99 rose %s T, up to %s ms of it the machine's, 3 × the canary's fault p99, which was over half its limit",
				r.ID, ex.Victim, measure.FmtG(float64(raw)), measure.FmtG(float64(r.Noise.MachineAllowanceMs))))
		}
	}
}

// victimErrorsAtBaseline adds the victim's error half of
// measure.AtBaseline in cell c as a deciding number: its fault error rate,
// at most measure.MaxErrorRate over its baseline error rate in the cell's
// runs. in ends the measure's name.
func (b *builder) victimErrorsAtBaseline(c *Cell, in string) {
	thr := measure.MaxErrorRate(c.baselineErrorRate(b.ex.Victim), b.ex)
	b.check("/"+b.ex.Victim+" fault error rate"+in, "share", c.VictimErrorRate, "<=", thr)
}

// info adds a number shown for information only.
func (b *builder) info(name, unit string, e measure.Estimate) {
	b.v.Measures = append(b.v.Measures, Measure{Name: name, Unit: unit, Value: e})
}

// check adds a deciding number that must satisfy op threshold.
func (b *builder) check(name, unit string, e measure.Estimate, op string, thr float64) {
	t := measure.Num(thr)
	m := Measure{Name: name, Unit: unit, Value: e, Op: op, Threshold: &t}
	m.Result = measureResult(e, op, thr, b.ex.MaxRelativeSpread)
	b.v.Measures = append(b.v.Measures, m)
}

func holds(v float64, op string, thr float64) bool {
	switch op {
	case "<=":
		return v <= thr
	case ">=":
		return v >= thr
	case ">":
		return v > thr
	}
	return false
}

// measureResult is a deciding measure's result: pass, fail, uncertain or
// undefined. A mean that misses the threshold fails only when its interval
// lies wholly on the failing side: where the interval reaches across the
// threshold the repeats cannot tell a real failure from the machine's noise,
// and a check must fail only when the claim really broke (on a machine
// keeping one core half busy, FAILFAST's share of fast rejections of a
// correct service came out 0.87 [0.83, 0.94] against 0.9). A mean that
// meets the threshold is uncertain only when its interval straddles the
// threshold and is wider than maxSpread of the mean.
func measureResult(e measure.Estimate, op string, thr, maxSpread float64) string {
	if !e.Defined() {
		return "undefined"
	}
	ok := holds(e.Mean, op, thr)
	straddles := e.HasCI() && holds(e.Lo, op, thr) != holds(e.Hi, op, thr)
	switch {
	case straddles && (!ok || e.RelSpread() > maxSpread):
		return "uncertain"
	case ok:
		return "pass"
	}
	return "fail"
}

// decide sets the outcome: SKIPPED when a needed cell has no complete run
// at all, INVALID when a needed cell has no usable run but INVALID or
// damaged ones (no verdict is computed from them), NOT SUPPORTED when a
// deciding number definitely fails, INCONCLUSIVE when one is uncertain or
// undefined or the data cannot tell (unsure), else SUPPORTED. Runs of its
// cells that it could not use are named in the reason.
func (b *builder) decide() Verdict {
	v := b.v
	var failed []string
	unsure := append([]string(nil), b.unsure...)
	for _, m := range v.Measures {
		switch m.Result {
		case "fail":
			failed = append(failed, fmt.Sprintf("%s = %s %s, needs %s %s", m.Name, words.Fmt3(m.Value.Mean), m.Unit, m.Op, words.Fmt3(float64(*m.Threshold))))
		case "uncertain":
			unsure = append(unsure, fmt.Sprintf("%s CI [%s, %s] straddles %s", m.Name, words.Fmt3(m.Value.Lo), words.Fmt3(m.Value.Hi), words.Fmt3(float64(*m.Threshold))))
		case "undefined":
			unsure = append(unsure, m.Name+" could not be measured")
		}
	}
	switch {
	case len(b.missing) > 0:
		v.Outcome, v.Reason = Skipped, "no complete run of "+strings.Join(b.missing, ", ")
	case len(b.invalid) > 0:
		v.Outcome, v.Reason = Invalid, "no valid run to judge — "+strings.Join(b.invalid, "; ")
	case len(b.undecidable) > 0:
		v.Outcome, v.Reason = Inconclusive, strings.Join(b.undecidable, "; ")
	case len(failed) > 0:
		v.Outcome, v.Reason = NotSupported, strings.Join(failed, "; ")
	case len(unsure) > 0:
		v.Outcome, v.Reason = Inconclusive, strings.Join(unsure, "; ")
	default:
		v.Outcome, v.Reason = Supported, "every deciding number met its threshold"
	}
	notes := b.notes
	if v.Outcome != Invalid && len(v.Excluded) > 0 {
		notes = append(notes, "judged without "+Runs(len(v.Excluded))+" left out")
	}
	if len(notes) > 0 && v.Outcome != Skipped && v.Outcome != Invalid {
		v.Reason += " (" + strings.Join(notes, "; ") + ")"
	}
	return v
}
