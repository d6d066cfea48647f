//go:build e2e

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestShardsReproduceDefault: the default matrix with its load sent by
// four `bulkheadlab shard` processes, released together and merged,
// reaches the verdicts of the single-generator reference
// (results/reference, the same matrix from the runner's own generator),
// and every run records its four shards, whose sends add up to the run's.
func TestShardsReproduceDefault(t *testing.T) {
	ref := readSummary(t, filepath.Join("..", "..", "results", "reference"))
	const attempts = 2
	for i := 1; ; i++ {
		tmp := t.TempDir()
		r := startRunner(t, tmp, "run", "--repeats", "1", "--shards", "4", "--check", "--no-images", "--out", tmp)
		code := r.wait(t, 5*time.Minute)
		dir := resultsDir(tmp, "slow-dependency")
		if code == ExitInvalid && i < attempts {
			t.Logf("attempt %d INVALID (the machine could not hold the load):\n%s", i, invalidReasons(dir))
			continue
		}
		if code == ExitInvalid {
			t.Skipf("every attempt was INVALID: not a verdict\n%s", invalidReasons(dir))
		}
		if code != 0 {
			t.Fatalf("exit %d, want 0 (every checked prediction SUPPORTED):\n%s", code, r.out.String())
		}
		got := readSummary(t, dir)
		for _, v := range ref.Verdicts {
			if o := outcomeOf(got, v.Name); o != v.Outcome {
				t.Errorf("%s: %s with 4 shards, %s from one generator", v.Name, o, v.Outcome)
			}
		}
		checkShardRecords(t, dir, 4)
		return
	}
}

// checkShardRecords: every complete run of dir records n shards with
// their clocks measured, and their sends add up to what the run sent.
func checkShardRecords(t *testing.T, dir string, n int) {
	t.Helper()
	ix, err := readIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ix.Runs {
		m, err := readMeta(dir, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Shards) != n {
			t.Errorf("%s: %d shard records, want %d", e.ID, len(m.Shards), n)
			continue
		}
		var sent int64
		for _, s := range m.Shards {
			sent += s.Sent
			if s.Error != "" || s.OffsetError <= 0 {
				t.Errorf("%s: shard %+v", e.ID, s)
			}
		}
		var phases []rundata.PhaseStats
		b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, e.ID, rundata.PhasesFile))
		if err == nil {
			err = json.Unmarshal(b, &phases)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Every scheduled request, none twice (a phase's Sent counts send
		// times, and a request sent late can cross the run's end).
		var want int64
		for _, p := range phases {
			want += p.Expected - p.Dropped
		}
		if sent != want {
			t.Errorf("%s: the shards sent %d, the schedule had %d", e.ID, sent, want)
		}
	}
}
