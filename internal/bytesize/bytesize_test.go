package bytesize

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"262144", 262144, true}, {"256KiB", 256 << 10, true}, {"1.5MiB", 3 << 19, true},
		{"64kB", 64000, true}, {"64KB", 64000, true}, {"1MB", 1e6, true}, {"512B", 512, true},
		{" 2 GiB ", 2 << 30, true}, {"4TiB", 4 << 40, true}, {"0", 0, true},
		{"", 0, false}, {"-1", 0, false}, {"1.5B", 0, false}, {"NaN", 0, false}, {"Inf", 0, false},
		{"1e30", 0, false}, {"5EiB", 0, false}, {"12 bytes", 0, false}, {"0x10", 0, false}, {"1_000", 0, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBad) {
			t.Errorf("Parse(%q): error %v does not wrap ErrBad", tc.in, err)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1024, 3 << 19, 2 << 30, 7 << 40, Max} {
		if back, err := Parse(Format(n)); err != nil || back != n {
			t.Errorf("Format(%d) = %q, which parses as %d, %v", n, Format(n), back, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"262144", "256KiB", "1.5MiB", "64kB", "-1", "1e30", "0.5B", " 2 GiB "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrBad", s, err)
			}
			return
		}
		if n < 0 || n > Max {
			t.Fatalf("Parse(%q) = %d, out of range", s, n)
		}
		if back, err := Parse(Format(n)); err != nil || back != n {
			t.Fatalf("Parse(%q) = %d, whose Format %q parses to %d, %v", s, n, Format(n), back, err)
		}
	})
}
