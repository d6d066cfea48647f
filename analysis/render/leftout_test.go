package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// busyMachine copies the default experiment's reference results and
// rewrites half of its runs as a busy 2-core machine leaves them: 10 runs
// INVALID for schedule lag in several phases, 2 for a slow canary, and 3
// runs that were run again after INVALID attempts. The records carry the
// load generator's own precision.
func busyMachine(t *testing.T) string {
	t.Helper()
	dst := copyResults(t, filepath.Join("..", "..", "results", "reference"))
	lag := []string{"failing-shared-r1", "failing-shared-r2", "failing-shared-r3", "failing-bulkhead-r1", "failing-bulkhead-r2",
		"failing-bulkhead-r3", "slow-shared-r2", "slow-shared-r3", "slow-bulkhead-r2", "slow-bulkhead-r3"}
	canary := []string{"busy-shared-r3", "busy-bulkhead-r3"}
	for i, id := range append(lag, canary...) {
		editMeta(t, filepath.Join(dst, rundata.RunsDir, id, rundata.MetaFile), func(m *rundata.RunMeta) {
			m.Valid = false
			for j := range m.Validity {
				v := &m.Validity[j]
				if i >= len(lag) {
					if v.Endpoint == rundata.CanaryEndpoint && v.Phase != rundata.PhaseWarmup {
						v.Valid, v.Broken = false, []rundata.Broken{{Rule: rundata.RuleCanary, Endpoint: v.Endpoint, Phase: v.Phase,
							Measured: float64(25_000_000 + (i-9+j)*1_234_567), Limit: 25e6, Unit: rundata.UnitNanos}}
					}
					continue
				}
				if v.Endpoint != rundata.CanaryEndpoint && (j+i)%2 == 0 {
					p99 := time.Duration(5_000_000 + (i*13+j*7)%28*100_003)
					v.Valid, v.LagP99 = false, p99
					v.Broken = []rundata.Broken{{Rule: rundata.RuleLag, Endpoint: v.Endpoint, Phase: v.Phase, Measured: float64(p99), Limit: 5e6,
						Max: float64(2*p99 + time.Duration(j)*1_000_003), Unit: rundata.UnitNanos}}
				}
			}
			if i%4 == 0 {
				m.Attempts = []rundata.Attempt{{Folder: id + ".invalid-1", Broken: []rundata.Broken{{Rule: rundata.RuleLag, Endpoint: "a",
					Phase: rundata.PhaseBaseline, Measured: float64(6_410_239 + i), Limit: 5e6, Max: 13_719_160, Unit: rundata.UnitNanos}}}}
			}
		})
	}
	return dst
}

// copyResults copies a results folder's data (not its report) into a
// temporary folder.
func copyResults(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		switch filepath.Ext(path) {
		case ".png", ".html", ".md":
			return nil
		}
		if rel == rundata.SummaryFile {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func editMeta(t *testing.T, path string, f func(*rundata.RunMeta)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m rundata.RunMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(&m)
	if b, err = json.Marshal(&m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManyInvalidRunsReadable renders a 24-run experiment with 12 INVALID
// runs and checks that every output leads with the same counts, states
// each reason once per output and in rounded numbers, and that the console
// fits the terminal.
func TestManyInvalidRunsReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates the reference results (~1 s)")
	}
	dir := busyMachine(t)
	sum, err := WriteReport(dir, Options{NoImages: true})
	if err != nil {
		t.Fatal(err)
	}
	lo := sum.LeftOut
	if lo == nil || lo.Runs != 12 || lo.Of != 24 {
		t.Fatalf("LeftOut = %+v, want 12 of 24", lo)
	}
	want := []verdict.RuleCount{{Rule: measure.RuleLag, N: 10}, {Rule: measure.RuleCanary, N: 2}}
	if fmt.Sprint(lo.ByRule) != fmt.Sprint(want) || lo.RetriedRuns != 3 || lo.Attempts != 3 {
		t.Errorf("LeftOut by rule %v, retried %d runs / %d attempts; want %v, 3 / 3", lo.ByRule, lo.RetriedRuns, lo.Attempts, want)
	}
	lead := "12 of 24 runs left out (no verdict uses them) — schedule lag over its limit (10), canary slow (2); worst: schedule lag p99 7.6 ms against 5 ms (slow-bulkhead-r3"
	if len(sum.Notices) == 0 || !strings.HasPrefix(sum.Notices[0], lead) {
		t.Errorf("first notice = %q, want it to start %q", sum.Notices, lead)
	}
	md, _ := os.ReadFile(filepath.Join(dir, rundata.ReportFile))
	page, _ := os.ReadFile(filepath.Join(dir, rundata.HTMLFile))
	var con80, con bytes.Buffer
	if err := PrintConsole(&con80, sum, ConsoleOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	if err := PrintConsole(&con, sum, ConsoleOptions{Width: 120, Verbose: true}); err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	outs := map[string]string{"report.md": string(md), "index.html": string(page), "console": flat(con80.String()), "console --verbose": flat(con.String())}
	unrounded := regexp.MustCompile(`\d\.\d{4,}ms`)
	for name, out := range outs {
		if !strings.Contains(out, lead) {
			t.Errorf("%s does not lead with %q", name, lead)
		}
		if m := unrounded.FindString(out); m != "" {
			t.Errorf("%s has an unrounded duration %q", name, m)
		}
	}
	// Every reason of every run, once per output (the console only with
	// --verbose).
	for _, r := range sum.Runs {
		for _, reason := range runReasons(r) {
			for name, out := range outs {
				n := strings.Count(out, reason)
				if name == "index.html" {
					n = strings.Count(out, htmlEscape(reason))
				}
				if wantN := 1; name == "console" && n != 0 || name != "console" && n != wantN {
					t.Errorf("%s: %s's reason %q appears %d times", name, r.ID, reason, n)
				}
			}
		}
	}
	for _, c := range []struct {
		name  string
		out   string
		width int
	}{{"console", con80.String(), 80}, {"console --verbose", con.String(), 120}} {
		for _, l := range strings.Split(c.out, "\n") {
			if n := len([]rune(l)); n > c.width {
				t.Errorf("%s: line of %d > %d columns: %q", c.name, n, c.width, l)
			}
		}
	}
	// The verdict table names left-out runs by count and ID, with a link to
	// the run's row.
	if !strings.Contains(string(page), `<a href="#run-failing-shared-r2">r2</a>`) || !strings.Contains(string(page), `<tr id="run-failing-shared-r2" class="invalid">`) {
		t.Error("index.html: no link from a verdict to a left-out run's row")
	}
	if p4, _ := sum.Lookup("P4"); len(p4.Reason) > 200 {
		t.Errorf("P4's reason is %d characters: %q", len(p4.Reason), p4.Reason)
	}
	if keep := os.Getenv("BULKHEADLAB_KEEP_REPORT"); keep != "" {
		if _, err := WriteReport(dir, Options{OutDir: keep, RunFigureRepeats: 1}); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + con80.String())
	}
}

func htmlEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\'':
			b.WriteString("&#39;")
		case '"':
			b.WriteString("&#34;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
