package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// FuzzReadRun feeds arbitrary bytes to the report reader as a complete run's
// windows.jsonl, phases.json and meta.json: Load and Evaluate must never
// panic, and damaged data must never pass for sound data.
//
//	go test -run '^$' -fuzz FuzzReadRun -fuzztime 2m ./analysis
func FuzzReadRun(f *testing.F) {
	base := synth.Write(f, f.TempDir(), "", []synth.Run{{Cond: "slow", Mode: "bulkhead", Repeat: 1, Seed: 1}})
	run := filepath.Join(base, rundata.RunsDir, "slow-bulkhead-r1")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(run, name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	windows, phases, meta := read(rundata.WindowsFile), read(rundata.PhasesFile), read(rundata.MetaFile)
	f.Add(windows, phases, meta)
	f.Add(windows[:len(windows)/2], phases, meta)
	f.Add([]byte("{\"endpoint\":\"b\",\"index\":-1}\n"), []byte("[]"), meta)
	f.Add([]byte("null\n{}\n[]\n"), []byte("{"), []byte(`{"status":"complete","id":"slow-bulkhead-r1"}`))
	f.Fuzz(func(t *testing.T, w, p, m []byte) {
		dir := t.TempDir()
		rd := filepath.Join(dir, rundata.RunsDir, "slow-bulkhead-r1")
		if err := os.MkdirAll(rd, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{rundata.WindowsFile: w, rundata.PhasesFile: p, rundata.MetaFile: m,
			rundata.MetricsFile: read(rundata.MetricsFile)} {
			if err := os.WriteFile(filepath.Join(rd, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		idx, _ := os.ReadFile(filepath.Join(base, rundata.IndexFile))
		if err := os.WriteFile(filepath.Join(dir, rundata.IndexFile), idx, 0o644); err != nil {
			t.Fatal(err)
		}
		exp, err := rundir.Load(dir)
		if err != nil {
			return
		}
		s := verdict.Evaluate(exp, rundata.DefaultExpectations())
		r := exp.Runs[0]
		if string(w) != string(windows) && len(r.Damaged) == 0 && r.Complete() && len(r.Windows) == 0 {
			t.Errorf("a complete run without windows passed as sound")
		}
		_ = renderMarkdown(&s)
		_ = renderHTML(&s)
	})
}
