package analysis

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestLoadErrors(t *testing.T) {
	good := writeSynth(t, t.TempDir(), "", matrix(1, func(r *synthRun) bool { return r.cond == "slow" }))
	badSpec := writeSynth(t, t.TempDir(), "expectations: [not, a, map\n", nil)
	badIndex := t.TempDir()
	os.WriteFile(filepath.Join(badIndex, rundata.IndexFile), []byte("{"), 0o644)
	traversal := t.TempDir()
	os.WriteFile(filepath.Join(traversal, rundata.IndexFile), []byte(`{"experiment":"x","runs":[{"id":"../../victim","status":"complete"}]}`), 0o644)
	dup := t.TempDir()
	os.WriteFile(filepath.Join(dup, rundata.IndexFile), []byte(`{"experiment":"x","runs":[{"id":"a-b-r1"},{"id":"a-b-r1"}]}`), 0o644)
	for _, tc := range []struct {
		dir, wantFile string
	}{
		{filepath.Join(good, "missing"), "missing"},
		{t.TempDir(), rundata.IndexFile},
		{badIndex, rundata.IndexFile},
		{badSpec, rundata.SpecFile},
		{traversal, `"../../victim" is not a run ID`},
		{dup, `"a-b-r1" appears twice`},
		{filepath.Join(good, rundata.IndexFile), rundata.IndexFile},
	} {
		_, err := Load(tc.dir)
		if !errors.Is(err, ErrNotResults) || !strings.Contains(err.Error(), tc.wantFile) {
			t.Errorf("Load(%s) = %v, want ErrNotResults naming %s", tc.dir, err, tc.wantFile)
		}
	}
	if _, err := Load(good); err != nil {
		t.Errorf("Load(good) = %v", err)
	}
}

func TestLoadPartialRun(t *testing.T) {
	dir := writeSynth(t, t.TempDir(), "", []synthRun{{cond: "slow", mode: "shared", repeat: 1, truncated: true, seed: 1}})
	os.RemoveAll(filepath.Join(dir, rundata.RunsDir, "missing"))
	exp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := exp.Runs[0]
	if r.Complete() || len(r.Windows) == 0 {
		t.Fatalf("truncated run: complete=%t windows=%d problems=%v", r.Complete(), len(r.Windows), r.Problems)
	}
	got := strings.Join(r.Problems, "; ")
	for _, want := range []string{"windows.jsonl:30: undecodable line", "phases.json: missing", "status interrupted"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}

func TestExpectationsFromSpec(t *testing.T) {
	dir := writeSynth(t, t.TempDir(), "name: x\nrunner: {a: 1}\nexpectations:\n  victim: b\n  p4_max_ratio: 0.25\n  check: [P2]\n", nil)
	exp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := exp.Expectations; e.P4MaxRatio != 0.25 || len(e.Check) != 1 || e.P1MaxTimeToDegrade != 10 {
		t.Errorf("expectations = %+v", e)
	}
}

// TestFiguresEdgeCases renders figures for runs without any success, with
// all-zero latencies (log axes), with no windows of one endpoint and without
// metrics; none may panic.
func TestFiguresEdgeCases(t *testing.T) {
	dir := writeSynth(t, t.TempDir(), "", matrix(1, func(r *synthRun) bool { return r.cond == "slow" }))
	exp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *Run){
		"no successes": func(r *Run) {
			for i := range r.Windows {
				r.Windows[i].Counts = rundata.Counts{rundata.ClassTransportError: 10}
				r.Windows[i].LatencyOK = rundata.Quantiles{}
			}
		},
		"all zero": func(r *Run) {
			for i := range r.Windows {
				r.Windows[i].Latency = rundata.Quantiles{Count: 1}
			}
		},
		"empty windows": func(r *Run) {
			for i := range r.Windows {
				r.Windows[i].Counts = rundata.Counts{}
			}
		},
		"no metrics, no meta": func(r *Run) { r.Metrics, r.Meta = nil, rundata.RunMeta{} },
	}
	for name, mutate := range cases {
		r := *exp.Runs[0]
		r.Windows = append([]rundata.Window(nil), r.Windows...)
		mutate(&r)
		e := &Experiment{Index: exp.Index, Runs: []*Run{&r}, Expectations: rundata.DefaultExpectations()}
		sum := Evaluate(e, e.Expectations)
		for _, f := range []figure{runFigure(&r, e.Expectations), comparisonFigure(e, e.Expectations, metricP99),
			comparisonFigure(e, e.Expectations, metricSuccess), summaryFigure(&sum)} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s: figure panicked: %v", name, p)
					}
				}()
				w, h := f.size()
				// A low DPI keeps the same layout with fewer pixels to fill.
				f.draw(draw.New(vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(16))))
			}()
		}
	}
}

func TestCheckAndJUnit(t *testing.T) {
	s := &Summary{Experiment: "x", Verdicts: []Verdict{
		{Name: "P1", Outcome: Supported}, {Name: "P2", Outcome: NotSupported, Reason: "r"},
		{Name: "P3", Outcome: Invalid}, {Name: "P4", Outcome: Skipped}, {Name: "EXHAUSTED", Outcome: Inconclusive},
	}}
	for _, tc := range []struct {
		names                         []string
		notSupported, undecided, skip string
		damaged, ok                   bool
	}{
		{names: []string{"P1"}, ok: true},
		{names: []string{"p1", "P2"}, notSupported: "P2"},
		{names: []string{"P3", "P4", "EXHAUSTED", "P9"}, undecided: "P3 INVALID,EXHAUSTED INCONCLUSIVE", skip: "P4,P9 (no such prediction)"},
	} {
		c := s.Check(tc.names)
		if strings.Join(c.NotSupported, ",") != tc.notSupported || strings.Join(c.Undecided, ",") != tc.undecided ||
			strings.Join(c.Skipped, ",") != tc.skip || c.OK() != tc.ok {
			t.Errorf("Check(%v) = %+v", tc.names, c)
		}
	}
	s.Damaged = []string{"slow-shared-r1: windows.jsonl:3: bad"}
	if c := s.Check([]string{"P1"}); !c.Damaged || c.OK() {
		t.Errorf("Check with damaged data = %+v", c)
	}
	s.Damaged = nil
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s, nil); err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(buf.Bytes(), &suite); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, buf.String())
	}
	if suite.Tests != 5 || suite.Failures != 1 || suite.Errors != 2 || suite.Skipped != 1 {
		t.Errorf("suite counts = %d/%d/%d/%d\n%s", suite.Tests, suite.Failures, suite.Errors, suite.Skipped, buf.String())
	}
	buf.Reset()
	if err := PrintVerdicts(&buf, s); err != nil || !strings.Contains(buf.String(), "NOT SUPPORTED") {
		t.Errorf("PrintVerdicts = %v\n%s", err, buf.String())
	}
}
