package words

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Fmt3 writes v with 3 significant digits or more, fixed decimals by
// magnitude (1234, 123.4, 12.34, 0.123); "—" when undefined.
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

// FmtDuration writes d to three significant digits in s, ms, µs or ns:
// "6.41 ms", "1.2 s", "250 ms".
func FmtDuration(d time.Duration) string {
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case a >= time.Second:
		return FmtHuman(d.Seconds()) + " s"
	case a >= time.Millisecond:
		return FmtHuman(float64(d)/1e6) + " ms"
	case a >= time.Microsecond:
		return FmtHuman(float64(d)/1e3) + " µs"
	}
	return strconv.FormatInt(int64(d), 10) + " ns"
}
