package spec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes, written as an integer ("262144") or with a
// binary or decimal unit ("256KiB", "1MiB", "64kB", "1MB", "512B"). In JSON
// (the fault proxy's control API) it is the integer. The zero value means
// "not set".
type ByteSize int64

// MaxByteSize is the largest ByteSize a spec may write (1 GiB); the fields
// that take one bound it further.
const MaxByteSize = 1 << 30

// ErrBadByteSize is wrapped by ParseByteSize errors.
var ErrBadByteSize = errors.New("invalid size")

var byteUnits = []struct {
	suffix string
	factor float64
}{ // longest suffixes first, so that "KiB" is not read as "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// ParseByteSize parses "262144", "256KiB", "1.5MiB", "64kB" or "512B".
// Negative, fractional-byte, NaN and values above MaxByteSize are refused.
func ParseByteSize(s string) (ByteSize, error) {
	return parseByteSize(s, MaxByteSize, "1GiB")
}

// parseByteSize is ParseByteSize with the largest value most, written
// mostText in its errors.
func parseByteSize(s string, most float64, mostText string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	factor := 1.0
	for _, u := range byteUnits {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, factor = strings.TrimSpace(v), u.factor
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w %q: want bytes, e.g. 262144, 256KiB or 1MiB", ErrBadByteSize, s)
	}
	b := v * factor
	if b < 0 || b > most || b != math.Trunc(b) {
		return 0, fmt.Errorf("%w %q: must be a whole number of bytes between 0 and %s", ErrBadByteSize, s, mostText)
	}
	return ByteSize(b), nil
}

// String writes b in the largest binary unit that divides it: "256KiB",
// "1MiB", "1000B".
func (b ByteSize) String() string {
	switch {
	case b != 0 && b%(1<<30) == 0 && b > MaxByteSize:
		return strconv.FormatInt(int64(b>>30), 10) + "GiB"
	case b != 0 && b%(1<<20) == 0:
		return strconv.FormatInt(int64(b>>20), 10) + "MiB"
	case b != 0 && b%(1<<10) == 0:
		return strconv.FormatInt(int64(b>>10), 10) + "KiB"
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// setScalar implements scalarSetter for the spec decoder.
func (b *ByteSize) setScalar(s string) error {
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalYAML writes b in its spec form ("256KiB").
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// MemorySize is a ByteSize of memory, written the same way, up to
// MaxMemorySize: a machine's memory is more than a payload's 1 GiB.
type MemorySize ByteSize

// MaxMemorySize is the largest MemorySize a spec may write (1 TiB).
const MaxMemorySize = 1 << 40

// String writes m like a ByteSize ("512MiB", "8GiB").
func (m MemorySize) String() string { return ByteSize(m).String() }

// setScalar implements scalarSetter for the spec decoder.
func (m *MemorySize) setScalar(s string) error {
	v, err := parseByteSize(s, MaxMemorySize, "1TiB")
	if err != nil {
		return err
	}
	*m = MemorySize(v)
	return nil
}

// MarshalYAML writes m in its spec form ("512MiB").
func (m MemorySize) MarshalYAML() (any, error) { return m.String(), nil }
