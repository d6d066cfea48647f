package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestOutputsAgree reads a results folder's summary.json back and checks
// that the console, report.md and index.html carry its values: every
// verdict's outcome and key number, every measure of every verdict, every
// cell's fault-phase numbers and every phase statistic — one computation,
// rendered by each output. It does so for the default experiment's
// reference and for it with half its runs INVALID.
func TestOutputsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates the reference results (~1 s each)")
	}
	for name, dir := range map[string]string{"reference": copyReference(t), "busy machine": busyMachine(t)} {
		t.Run(name, func(t *testing.T) {
			if _, err := WriteReport(dir, Options{NoImages: true}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, rundata.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			var s verdict.Summary
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			md := readText(t, dir, rundata.ReportFile)
			page := html.UnescapeString(readText(t, dir, rundata.HTMLFile))
			var con bytes.Buffer
			if err := PrintConsole(&con, &s, ConsoleOptions{Width: 10000}); err != nil {
				t.Fatal(err)
			}
			checkAgree(t, &s, md, page, con.String())
		})
	}
}

func checkAgree(t *testing.T, s *verdict.Summary, md, page, con string) {
	t.Helper()
	est := measure.FormatEstimate
	has := func(out, what, want string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %s: %q", what, want, want)
		}
	}
	conLines := strings.Split(con, "\n")
	for _, v := range s.Verdicts {
		key := keyNumber(v)
		has(md, "report.md's verdict table", fmt.Sprintf("| %s | **%s** | %s |", v.Name, v.Outcome, mdEscape(key)))
		has(page, "index.html's verdict table", fmt.Sprintf(`%s</a></td><td class="%s"><b>%s</b></td><td>%s</td>`, v.Name, v.Outcome, v.Outcome, key))
		if v.Outcome != verdict.Skipped {
			found := false
			for _, l := range conLines {
				f := strings.Join(strings.Fields(l), " ")
				found = found || strings.HasPrefix(f, v.Name+" "+string(v.Outcome)+" "+strings.Join(strings.Fields(key), " "))
			}
			if !found {
				t.Errorf("the console has no line %s %s %s", v.Name, v.Outcome, key)
			}
		}
		for _, m := range v.Measures {
			has(md, "report.md's "+v.Name, fmt.Sprintf("| %s | %s | %s |", m.Name, est(m.Value), m.Unit))
			has(page, "index.html's "+v.Name, fmt.Sprintf("<tr><td>%s</td><td>%s</td><td>%s</td>", m.Name, est(m.Value), m.Unit))
		}
	}
	for _, c := range s.Cells {
		nums := []string{est(c.VictimP99Ms), est(c.VictimErrorRate), est(c.CulpritP99Ms), est(c.CulpritErrorRate), est(c.CulpritOKRate), est(c.TimeToDegradeT)}
		has(md, "report.md's fault phase by cell", fmt.Sprintf("| %s | %s | %d", c.Condition, c.Mode, len(c.Runs)))
		has(md, "report.md's fault phase by cell", fmt.Sprintf(" | %s |\n", strings.Join(nums, " | ")))
		has(page, "index.html's fault phase by cell", fmt.Sprintf("<td>%s</td></tr>", strings.Join(nums, "</td><td>")))
		for _, p := range c.Phases {
			has(md, "report.md's latency by phase", est(p.P50Ms)+" / "+est(p.P99Ms))
			has(page, "index.html's latency by phase", fmt.Sprintf("<td>%s</td><td>%s</td><td>/%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>",
				c.Condition, c.Mode, p.Endpoint, p.Phase, est(p.P50Ms), est(p.P99Ms), est(p.ErrorRate)))
		}
	}
	if lo := s.LeftOut; lo != nil && lo.Runs > 0 {
		for _, out := range []struct{ name, text string }{{"report.md", md}, {"index.html", page}, {"the console", con}} {
			has(out.text, out.name, lo.Sentence())
		}
	}
	// No output states a number to more than four significant digits (the
	// load generator's durations, 6.410239ms, included).
	long := regexp.MustCompile(`\b(?:[1-9]\d*\.\d{4,}|0\.0*[1-9]\d{4,})`)
	for _, out := range []struct{ name, text string }{{"report.md", md}, {"index.html", page}, {"the console", con}} {
		if m := long.FindString(out.text); m != "" {
			t.Errorf("%s has a number of more than four significant digits: %s", out.name, m)
		}
	}
}

// copyReference copies the default experiment's reference results (its
// data, not its report).
func copyReference(t *testing.T) string {
	t.Helper()
	return copyResults(t, filepath.Join("..", "..", "results", "reference"))
}

func readText(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
