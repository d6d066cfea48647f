package textwrap

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		text  string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"machine CPU 54 % busy", 14, []string{"machine CPU", "54 % busy"}},
		{"lag 6.41 ms against 5 ms", 12, []string{"lag 6.41 ms", "against 5 ms"}},
		{"abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
	} {
		if got := Wrap(tc.text, tc.width); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
	if got := Indent("one two three four", 10, "  "); got != "one two\n  three\n  four\n" {
		t.Errorf("Indent = %q", got)
	}
}
