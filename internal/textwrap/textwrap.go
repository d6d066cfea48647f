// Package textwrap breaks console text into lines no wider than a
// terminal. Its functions are pure and safe for concurrent use.
package textwrap

import (
	"strings"
	"unicode/utf8"
)

// units are words that stay on the line of the number before them, so that
// "54 %" or "6.41 ms" is never split.
var units = map[string]bool{"%": true, "ms": true, "µs": true, "ns": true, "s": true, "pp": true}

// Wrap breaks text into lines of at most width runes at spaces, keeping a
// number and its unit together; a word longer than width is cut. Empty
// text is one empty line.
func Wrap(text string, width int) []string {
	width = max(width, 1)
	var words []string
	for _, w := range strings.Fields(text) {
		if n := len(words); n > 0 && units[w] {
			words[n-1] += " " + w
			continue
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	cur := ""
	for _, w := range words {
		for utf8.RuneCountInString(w) > width {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(w)
			lines, w = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case cur == "":
			cur = w
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) <= width:
			cur += " " + w
		default:
			lines, cur = append(lines, cur), w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// Indent wraps text to width, continuation lines prefixed by indent, each
// line ending in a newline. Text that fits is returned as it is, its runs
// of spaces (a table's alignment) kept.
func Indent(text string, width int, indent string) string {
	if !strings.Contains(text, "\n") && utf8.RuneCountInString(text) <= width {
		return text + "\n"
	}
	var b strings.Builder
	for i, l := range Wrap(text, width-utf8.RuneCountInString(indent)) {
		if i > 0 {
			b.WriteString(indent)
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
