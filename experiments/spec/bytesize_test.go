package spec

import (
	"errors"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		err  bool
	}{
		{"262144", 262144, false}, {"256KiB", 256 << 10, false}, {" 1MiB ", 1 << 20, false}, {"1.5MiB", 3 << 19, false},
		{"64kB", 64000, false}, {"64KB", 64000, false}, {"2MB", 2e6, false}, {"512B", 512, false}, {"0", 0, false},
		{"1GiB", 1 << 30, false},
		{"", 0, true}, {"KiB", 0, true}, {"-1", 0, true}, {"2GiB", 0, true}, {"1.5", 0, true}, {"NaN", 0, true},
		{"1e400", 0, true}, {"10 parsecs", 0, true}, {"0.1B", 0, true},
	} {
		got, err := ParseByteSize(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrBadByteSize) {
			t.Errorf("ParseByteSize(%q) error %v does not wrap ErrBadByteSize", tc.in, err)
		}
	}
	for _, b := range []ByteSize{0, 1, 1000, 1024, 256 << 10, 1 << 20, 3 << 19} {
		if again, err := ParseByteSize(b.String()); err != nil || again != b {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d back", b.String(), again, err, b)
		}
	}
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"262144", "256KiB", "1.5MiB", "64kB", "0", "-1", "1e400", "NaN", "B", "1GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseByteSize(s)
		if err != nil {
			if !errors.Is(err, ErrBadByteSize) {
				t.Fatalf("ParseByteSize(%q) error %v does not wrap ErrBadByteSize", s, err)
			}
			return
		}
		if b < 0 || b > MaxByteSize {
			t.Fatalf("ParseByteSize(%q) = %d, out of range", s, b)
		}
		if again, err := ParseByteSize(b.String()); err != nil || again != b {
			t.Fatalf("ParseByteSize(%q) = %d, whose String %q parses to %d, %v", s, b, b.String(), again, err)
		}
	})
}
