// Package bytesize reads and writes sizes in bytes as people write them:
// "262144", "256KiB", "1.5MiB", "64kB", "2GiB". It is the one parser of
// sizes for the spec's fields, the service's flags and the proxies' flags;
// each caller bounds the value as its field needs.
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Max is the largest size Parse returns (4 EiB): past it, a multiplication
// by a unit could overflow an int64.
const Max = 1 << 62

// ErrBad is wrapped by every Parse error.
var ErrBad = errors.New("invalid size")

// units are the suffixes Parse reads, the longest first so that "KiB" is
// not read as "B".
var units = []struct {
	suffix string
	factor float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// Parse reads a whole number of bytes: an integer or a decimal, with or
// without a unit (binary KiB–TiB, decimal kB–TB, B). Negative, NaN, a
// fraction of a byte and more than Max are refused.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	factor := 1.0
	for _, u := range units {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, factor = strings.TrimSpace(v), u.factor
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(t, "xXpP_") {
		return 0, fmt.Errorf("%w %q: want bytes, e.g. 262144, 256KiB or 1MiB", ErrBad, s)
	}
	b := v * factor
	if b < 0 || b > Max || b != math.Trunc(b) {
		return 0, fmt.Errorf("%w %q: must be a whole number of bytes, not negative", ErrBad, s)
	}
	return int64(b), nil
}

// Format writes n in the largest binary unit that divides it ("256KiB",
// "2GiB"), else in bytes ("1000B"): what Parse reads back as n.
func Format(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
