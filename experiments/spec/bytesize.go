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

// MemorySize is a ByteSize of memory, written the same way, up to
// MaxMemorySize: a machine's memory is more than a payload's 1 GiB.
type MemorySize ByteSize

// MaxMemorySize is the largest MemorySize a spec may write (1 TiB).
const MaxMemorySize = 1 << 40

// String writes m like a ByteSize ("512MiB", "8GiB").
func (m MemorySize) String() string { return ByteSize(m).String() }

// setScalar implements scalarSetter for the spec decoder.
func (m *MemorySize) setScalar(s string) error {
	b, err := bytesize.Parse(s)
	if err != nil {
		return fmt.Errorf("%w %q: want bytes, e.g. 512MiB or 8GiB", ErrBadByteSize, s)
	}
	if b > MaxMemorySize {
		return fmt.Errorf("%w %q: must be a whole number of bytes between 0 and 1TiB", ErrBadByteSize, s)
	}
	*m = MemorySize(b)
	return nil
}

// MarshalYAML writes m in its spec form ("512MiB").
func (m MemorySize) MarshalYAML() (any, error) { return m.String(), nil }
