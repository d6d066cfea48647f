package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenSets covers every verdict outcome.
var goldenSets = []struct {
	name string
	spec string
	runs []synth.Run
	want map[string]verdict.Outcome
}{
	{
		name: "supported", runs: synth.Matrix(3, nil),
		want: map[string]verdict.Outcome{"P1": verdict.Supported, "P2": verdict.Supported, "P3": verdict.Supported, "P4": verdict.Supported, "EXHAUSTED": verdict.Supported},
	},
	{
		name: "not-supported",
		spec: "name: x\nexpectations:\n  p1_max_time_to_degrade: 2\n",
		runs: synth.Matrix(1, func(r *synth.Run) bool {
			r.NoHelp, r.SlowReject, r.DegradeAt = true, true, 3
			return true
		}),
		want: map[string]verdict.Outcome{"P1": verdict.NotSupported, "P2": verdict.NotSupported, "P3": verdict.Supported, "P4": verdict.NotSupported},
	},
	{
		name: "invalid-partial",
		runs: synth.Matrix(1, func(r *synth.Run) bool {
			r.Invalid = r.Cond == "slow" && r.Mode == "shared"
			r.Truncated = r.Cond == "busy" && r.Mode == "bulkhead"
			r.Gap = r.Cond == "failing"
			return r.Cond != "failing" || r.Mode != "bulkhead"
		}),
		want: map[string]verdict.Outcome{"P1": verdict.Invalid, "P2": verdict.Supported, "P3": verdict.Skipped, "P4": verdict.Skipped, "EXHAUSTED": verdict.Invalid},
	},
	{
		name: "inconclusive",
		runs: synth.Matrix(3, func(r *synth.Run) bool {
			if r.Cond == "slow" && r.Mode == "shared" {
				r.DegradeAt = []float64{0, 6, 0}[r.Repeat-1]
			}
			return r.Cond == "slow"
		}),
		want: map[string]verdict.Outcome{"P1": verdict.Inconclusive, "P2": verdict.Supported, "P3": verdict.Skipped},
	},
}

func TestGolden(t *testing.T) {
	for _, gs := range goldenSets {
		t.Run(gs.name, func(t *testing.T) {
			dir := synth.Write(t, t.TempDir(), gs.spec, gs.runs)
			sum, err := WriteReport(dir, Options{NoImages: true})
			if err != nil {
				t.Fatalf("WriteReport(%s): %v", gs.name, err)
			}
			for name, want := range gs.want {
				if v, _ := sum.Lookup(name); v.Outcome != want {
					t.Errorf("%s: %s = %s (%s), want %s", gs.name, name, v.Outcome, v.Reason, want)
				}
			}
			for _, f := range []string{rundata.SummaryFile, rundata.ReportFile} {
				got, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("testdata", gs.name+"."+f)
				if *update {
					if err := os.MkdirAll("testdata", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s/%s differs from %s (run with -update and review the diff)", gs.name, f, golden)
				}
			}
		})
	}
}

// TestDeterministic writes the same folder twice and compares every text file.
func TestDeterministic(t *testing.T) {
	runs := synth.Matrix(3, func(r *synth.Run) bool { return r.Cond == "slow" || r.Cond == "busy" })
	var outs [2][]byte
	for i := range outs {
		dir := synth.Write(t, t.TempDir(), "", runs)
		if _, err := WriteReport(dir, Options{NoImages: true}); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{rundata.SummaryFile, rundata.ReportFile, rundata.HTMLFile} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			outs[i] = append(outs[i], b...)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two reports of identical folders differ")
	}
}

func TestWriteReportImages(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool {
		r.Gap = r.Cond == "slow" && r.Mode == "shared"
		r.Truncated = r.Cond == "busy" && r.Mode == "shared"
		return r.Cond == "slow" || (r.Cond == "busy" && r.Mode == "shared") || os.Getenv("BULKHEADLAB_KEEP_REPORT") != ""
	})
	dir := synth.Write(t, t.TempDir(), "", runs)
	out := filepath.Join(t.TempDir(), "out")
	if keep := os.Getenv("BULKHEADLAB_KEEP_REPORT"); keep != "" {
		out = keep
	}
	sum, err := WriteReport(dir, Options{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Images) != len(runs)+3 {
		t.Errorf("images = %v, want %d", sum.Images, len(runs)+3)
	}
	html, _ := os.ReadFile(filepath.Join(out, rundata.HTMLFile))
	for _, img := range sum.Images {
		st, err := os.Stat(filepath.Join(out, img))
		if err != nil || st.Size() < 10000 {
			t.Errorf("image %s: %v, size %d", img, err, st.Size())
		}
		if !strings.Contains(string(html), `src="`+img+`"`) {
			t.Errorf("index.html does not show %s", img)
		}
	}
}
