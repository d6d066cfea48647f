package measure

import "github.com/bulkheadlab/bulkheadlab/analysis/render/words"

// FormatEstimate renders e as "mean [lo, hi]" (or "mean" without an interval,
// "—" when undefined), 3 significant digits.
func FormatEstimate(e Estimate) string {
	if !e.Defined() {
		return "—"
	}
	s := words.Fmt3(e.Mean)
	if e.HasCI() {
		s += " [" + words.Fmt3(e.Lo) + ", " + words.Fmt3(e.Hi) + "]"
	}
	return s
}

// FmtNum is words.Fmt3 of n.
func FmtNum(n Num) string { return words.Fmt3(float64(n)) }
