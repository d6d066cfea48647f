package spec

import (
	"errors"
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/internal/bytesize"
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

// ParseByteSize parses "262144", "256KiB", "1.5MiB", "64kB" or "512B"
// (bytesize.Parse). Negative, fractional-byte, NaN and values above
// MaxByteSize are refused.
func ParseByteSize(s string) (ByteSize, error) {
	b, err := bytesize.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("%w %q: want bytes, e.g. 262144, 256KiB or 1MiB", ErrBadByteSize, s)
	}
	if b > MaxByteSize {
		return 0, fmt.Errorf("%w %q: must be a whole number of bytes between 0 and 1GiB", ErrBadByteSize, s)
	}
	return ByteSize(b), nil
}

// String writes b in the largest binary unit that divides it: "256KiB",
// "1MiB", "1000B" (bytesize.Format).
func (b ByteSize) String() string { return bytesize.Format(int64(b)) }

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
