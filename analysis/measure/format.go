package measure

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatEstimate renders e as "mean [lo, hi]" (or "mean" without an interval,
// "—" when undefined), 3 significant digits.
func FormatEstimate(e Estimate) string {
	if !e.Defined() {
		return "—"
	}
	s := Fmt3(e.Mean)
	if e.HasCI() {
		s += " [" + Fmt3(e.Lo) + ", " + Fmt3(e.Hi) + "]"
	}
	return s
}

func Fmt3(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func FmtNum(n Num) string { return Fmt3(float64(n)) }

// FmtHuman writes v to three significant digits without trailing zeros or
// an exponent, as a person writes a measured number: 12, 6.41, 0.25, 1234;
// "—" when undefined.
func FmtHuman(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	if v == 0 {
		return "0"
	}
	digits := max(0, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	out := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	if out == "-0" {
		return "0"
	}
	return out
}
