package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// TestTextProgressRunLine: the line a run ends with gives each endpoint's
// p99 over the fault phase from the phase records (the report's number),
// not the last window's, "—" for an endpoint without a result, and counts
// the attempts with the time left.
func TestTextProgressRunLine(t *testing.T) {
	var buf bytes.Buffer
	p := &TextProgress{W: &buf, Total: 22 * time.Second}
	run := plan.Run{ID: "slow-bulkhead-r1", Condition: "slow", Mode: "bulkhead", Repeat: 1}
	snap := loadgen.Snapshot{Phase: rundata.PhaseFault, Endpoints: []loadgen.EndpointSnapshot{{Name: "a"}, {Name: "b"}}}
	var ok loadgen.Counts
	ok[loadgen.ClassOK] = 50
	for attempt := 1; attempt <= 2; attempt++ {
		p.RunStarted(run, 3, 24, attempt)
		p.Snapshot(run, snap)
		// The last window of /a is fast and /b has none at all.
		p.Window(run, loadgen.Window{Endpoint: "a", Phase: rundata.PhaseFault, Counts: ok, Latency: rundata.Quantiles{P99: 258 * time.Millisecond}})
		p.Phases(run, []rundata.PhaseStats{
			{Endpoint: "a", Phase: rundata.PhaseFault, Counts: ok, Latency: rundata.Quantiles{P99: 485800 * time.Microsecond}},
			{Endpoint: "b", Phase: rundata.PhaseFault},
		})
		p.RunEnded(run, rundata.RunMeta{Status: rundata.StatusComplete, Valid: true}, nil)
	}
	var lines []string // each run's line, its continuations joined
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if n := len([]rune(l)); n > DefaultWidth {
			t.Errorf("line of %d > %d columns: %q", n, DefaultWidth, l)
		}
		if strings.HasPrefix(l, " ") && len(lines) > 0 {
			lines[len(lines)-1] += " " + strings.TrimSpace(l)
			continue
		}
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	if len(lines) != 2 {
		t.Fatalf("progress = %q, want 2 lines", buf.String())
	}
	for _, want := range []string{"/a fault ok 100.0% p99 485.8 ms", "/b fault ok — p99 —", "(attempt 2)", "attempt 2 of the experiment", "21 runs ×"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("run line %q lacks %q", lines[1], want)
		}
	}
	if strings.Contains(buf.String(), "258") {
		t.Errorf("progress shows the last window's p99: %q", buf.String())
	}
}

// TestTextProgressInvalidLine: an INVALID run's line names each rule it
// broke once, with its worst value against the limit and where (the
// report's words), from the records.
func TestTextProgressInvalidLine(t *testing.T) {
	var buf bytes.Buffer
	p := &TextProgress{W: &buf, Width: 200}
	run := plan.Run{ID: "slow-shared-r1", Retries: 1}
	lag := func(ep, phase string, p99 float64) rundata.Broken {
		return rundata.Broken{Rule: rundata.RuleLag, Endpoint: ep, Phase: phase, Measured: p99, Limit: 5e6, Max: 2 * p99, Unit: rundata.UnitNanos}
	}
	meta := rundata.RunMeta{Status: rundata.StatusComplete, Validity: []rundata.PhaseValidity{
		{Endpoint: "a", Phase: "baseline", Broken: []rundata.Broken{lag("a", "baseline", 6410239)}},
		{Endpoint: "b", Phase: "fault", Broken: []rundata.Broken{lag("b", "fault", 7812345)}},
		{Endpoint: "_canary", Phase: "fault", Broken: []rundata.Broken{{Rule: rundata.RuleCanary, Endpoint: "_canary", Phase: "fault",
			Measured: 31.26e6, Limit: 25e6, Unit: rundata.UnitNanos}}},
		{Endpoint: "a", Phase: "fault", Valid: true},
	}}
	p.RunStarted(run, 1, 24, 1)
	p.RunEnded(run, meta, nil)
	want := "INVALID (it runs again at the end of this round): schedule lag 7.81 ms > 5 ms (a/baseline, b/fault); canary 31.3 ms > 25 ms (_canary/fault)"
	if got := strings.Join(strings.Fields(buf.String()), " "); !strings.Contains(got, want) {
		t.Errorf("progress = %q, want it to say %q", got, want)
	}
}
