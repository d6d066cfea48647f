package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// aliasBomb returns a small document whose aliases expand into n×n
// copies of leaf inside conditions[].faults[].
func aliasBomb(n int, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: t\nconditions:\n  - name: c0\n    faults:\n      - &f0 {type: error, percent: 1, %s}\n", leaf)
	b.WriteString("  - name: c1\n    faults: &f [")
	for i := 0; i < n; i++ {
		b.WriteString("*f0, ")
	}
	b.WriteString("]\n")
	for i := 2; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: c%d, faults: *f}\n", i)
	}
	return b.String()
}

func TestParseAliasAmplification(t *testing.T) {
	var headers strings.Builder
	headers.WriteString("headers: {")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&headers, "k%d: v, ", i)
	}
	headers.WriteString("}")
	cases := []struct{ name, yaml string }{
		{"nodes", aliasBomb(30, headers.String())},
		{"bytes", "name: t\nx: &s " + strings.Repeat("y", 20000) + "\n" + strings.Replace(aliasBomb(40, "body: *s"), "name: t\n", "", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "too many aliases") {
				t.Fatalf("Parse(%d-byte alias bomb) = %v, want the decode budget error", len(tc.yaml), err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Parse(%d-byte alias bomb) took %s", len(tc.yaml), d)
			}
		})
	}
}

// TestParseAliasesWithinBudget: moderate alias use is fine, and the
// resolved spec (written to the results folder) parses again.
func TestParseAliasesWithinBudget(t *testing.T) {
	y := "name: t\nconditions:\n  - name: x\n    faults: [&f {type: error, status: 500, headers: &h {k: v}}]\n  - {name: y, faults: [{type: error, percent: 5, headers: *h}]}\n  - {name: z, faults: [*f]}\n"
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatalf("Parse(%q) = %v", y, err)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("resolved.yaml", b); err != nil {
		t.Errorf("resolved spec of %q does not parse: %v\n%s", y, err, b)
	}
	if len(b) > MaxSpecSize {
		t.Errorf("resolved spec is %d bytes", len(b))
	}
}
