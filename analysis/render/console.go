package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/textwrap"
)

// DefaultConsoleWidth is the width the console output is wrapped to when
// the terminal's is not known.
const DefaultConsoleWidth = 100

// ConsoleOptions tune PrintConsole. The zero value wraps to
// DefaultConsoleWidth and leaves the reasons to report.md.
type ConsoleOptions struct {
	// Width is the terminal's width in columns; ≤ 0 means
	// DefaultConsoleWidth. No line is longer, except a single word that is.
	Width int
	// Verbose adds every reason each run was left out or run again.
	Verbose bool
}

func (o ConsoleOptions) width() int {
	if o.Width <= 0 {
		return DefaultConsoleWidth
	}
	return max(o.Width, 40)
}

// PrintVerdicts writes a compact table of the verdicts to w, wrapped to
// DefaultConsoleWidth: one row per prediction with its outcome, its first
// deciding number and the reason. A SKIPPED prediction that is not checked
// (the matrix was not built to judge it) is named on one line after the
// table instead.
func PrintVerdicts(w io.Writer, s *verdict.Summary) error {
	return printVerdicts(w, s, DefaultConsoleWidth)
}

// PrintConsole writes what a run or a report prints: the verdict table
// (not for an audit, whose maps PrintAudit prints), then what the reader must know before trusting it (the notices: how many
// runs were left out for what, what to change), the runs × rules table of
// the left-out runs, with Verbose every reason, and a closing WARNING when
// a run was left out. Every line fits opts.Width.
func PrintConsole(w io.Writer, s *verdict.Summary, opts ConsoleOptions) error {
	width := opts.width()
	if s.Audits == nil { // an audit prints its maps instead (PrintAudit)
		if err := printVerdicts(w, s, width); err != nil {
			return err
		}
	}
	var b strings.Builder
	for _, n := range s.Notices {
		b.WriteString(wrapIndent("NOTE: "+n, width, "      "))
	}
	if t := leftOutTable(s); len(t.Rows) > 0 {
		rows := [][]string{t.head()}
		for _, r := range t.Rows {
			rows = append(rows, r.cells())
		}
		if t.Others > 0 {
			rows = append(rows, t.othersRow())
		}
		b.WriteString("runs left out (each rule as its worst value against the limit; " + passMark + " kept):\n")
		b.WriteString(wrapTable(rows, width, "  "))
		if !opts.Verbose {
			b.WriteString(wrapIndent("every reason: report.md (Runs: validity and noise floor), or again with --verbose", width, "  "))
		}
	}
	if opts.Verbose {
		for _, r := range s.Runs {
			if rs := runReasons(r); len(rs) > 0 {
				b.WriteString(r.ID + ":\n")
				for _, reason := range rs {
					b.WriteString(wrapIndent("  - "+reason, width, "    "))
				}
			}
		}
	}
	if warn := warning(s); warn != "" {
		b.WriteString(wrapIndent(warn, width, "         "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// warning is the closing line when runs were left out, "" otherwise.
func warning(s *verdict.Summary) string {
	bad := 0
	for _, r := range s.Runs {
		if !r.Valid || len(r.Damaged) > 0 {
			bad++
		}
	}
	if bad == 0 {
		return ""
	}
	var undecided []string
	for _, v := range s.Verdicts {
		if v.Outcome == verdict.Invalid {
			undecided = append(undecided, v.Name)
		}
	}
	msg := "the verdicts were judged without them"
	if len(undecided) > 0 {
		msg = strings.Join(undecided, ", ") + " could not be judged"
	}
	return fmt.Sprintf("WARNING: %d of %d runs are INVALID or damaged and are not evidence; %s. See why above, and what to change.", bad, len(s.Runs), msg)
}

func printVerdicts(w io.Writer, s *verdict.Summary, width int) error {
	rows := [][]string{{"PREDICTION", "OUTCOME", "KEY NUMBER", "REASON"}}
	var unjudged []string
	for _, v := range s.Verdicts {
		if v.Outcome == verdict.Skipped && !slices.ContainsFunc(s.Expectations.Check, func(c string) bool { return strings.EqualFold(c, v.Name) }) {
			unjudged = append(unjudged, v.Name)
			continue
		}
		rows = append(rows, []string{v.Name, string(v.Outcome), keyNumber(v), v.Reason})
	}
	out := wrapTable(rows, width, "")
	if len(unjudged) > 0 {
		out += wrapIndent("not judged by this matrix (no runs of the cells they compare; see report.md): "+strings.Join(unjudged, ", "), width, "  ")
	}
	_, err := io.WriteString(w, out)
	return err
}

// wrapTable lays rows out in columns two spaces apart, each line prefixed
// by indent, wrapping cells so that no line is longer than width: the
// widest columns give way first, down to a floor of 12 columns each.
func wrapTable(rows [][]string, width int, indent string) string {
	if len(rows) == 0 {
		return ""
	}
	n := 0
	for _, r := range rows {
		n = max(n, len(r))
	}
	const gap, floor = 2, 8 // floor: also widestAbove's
	ws, words := make([]int, n), make([]int, n)
	for _, r := range rows {
		for i, c := range r {
			ws[i] = max(ws[i], utf8.RuneCountInString(c))
			for _, w := range strings.Fields(c) {
				words[i] = max(words[i], min(utf8.RuneCountInString(w), 24))
			}
		}
	}
	avail := width - utf8.RuneCountInString(indent) - gap*(n-1)
	// Narrow the widest column that can still wrap at a space, then, when
	// none can, cut words down to the floor.
	for sum(ws) > avail {
		i := widestAbove(ws, words)
		if i < 0 {
			if i = widestAbove(ws, nil); i < 0 || ws[i] <= floor {
				break
			}
		}
		ws[i]--
	}
	var b strings.Builder
	for _, r := range rows {
		cells := make([][]string, n)
		lines := 1
		for i := range n {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			cells[i] = wrap(c, ws[i])
			lines = max(lines, len(cells[i]))
		}
		for l := range lines {
			var line strings.Builder
			line.WriteString(indent)
			for i := range n {
				c := ""
				if l < len(cells[i]) {
					c = cells[i][l]
				}
				line.WriteString(c)
				if i < n-1 {
					line.WriteString(strings.Repeat(" ", ws[i]-utf8.RuneCountInString(c)+gap))
				}
			}
			b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		}
	}
	return b.String()
}

func sum(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}

// widestAbove is the widest column wider than its floor (floors[i], or
// the table's floor when floors is nil), -1 when none is.
func widestAbove(ws, floors []int) int {
	j := -1
	for i, x := range ws {
		f := 8
		if floors != nil {
			f = max(floors[i], 8)
		}
		if x > f && (j < 0 || x > ws[j]) {
			j = i
		}
	}
	return j
}

// wrapIndent wraps text to width, continuation lines prefixed by indent,
// each line ending in a newline.
func wrapIndent(text string, width int, indent string) string {
	return textwrap.Indent(text, width, indent)
}

// wrap breaks text into lines of at most width runes (textwrap.Wrap).
func wrap(text string, width int) []string { return textwrap.Wrap(text, width) }
