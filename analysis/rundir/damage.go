package rundir

import (
	"fmt"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// maxDamageLines bounds the damage reported per run.
const maxDamageLines = 20

// checkRun validates the data of a run that says it completed, before they
// are used: records of endpoints and phases the run had, counts that add up
// and are not negative, quantiles in order, no duplicate window or phase,
// times within the run, and validity records of the contract
// (checkValidity). winLines and metLines are the file lines of
// r.Windows and r.Metrics (in file order). It returns "file:line: what"
// for each finding.
func checkRun(r *Run, winLines, metLines []int) []string {
	var out []string
	bad := func(file string, line int, format string, args ...any) {
		if len(out) < maxDamageLines {
			loc := file
			if line > 0 {
				loc = fmt.Sprintf("%s:%d", file, line)
			}
			out = append(out, loc+": "+fmt.Sprintf(format, args...))
		}
	}
	m := r.Meta
	if m.ID != r.Entry.ID || m.Mode != r.Entry.Mode || m.Condition != r.Entry.Condition {
		bad(rundata.MetaFile, 0, "run %s (%s/%s) in a folder listed as %s (%s/%s)", m.ID, m.Condition, m.Mode,
			r.Entry.ID, r.Entry.Condition, r.Entry.Mode)
	}
	if m.Timeout <= 0 || m.Window <= 0 {
		bad(rundata.MetaFile, 0, "timeout %v and window %v must be positive", m.Timeout, m.Window)
	}
	endpoints := map[string]bool{}
	for _, e := range m.Endpoints {
		endpoints[e.Name] = true
	}
	if m.Canary != nil {
		endpoints[rundata.CanaryEndpoint] = true
	}
	phases := map[string]bool{}
	for i, p := range m.Phases {
		phases[p.Name] = true
		if p.End.Before(p.Start) || (i > 0 && p.Start.Before(m.Phases[i-1].Start)) {
			bad(rundata.MetaFile, 0, "phase %s ends before it starts or out of order", p.Name)
		}
	}
	known := func(ep string) bool { return len(endpoints) == 0 || endpoints[ep] }
	knownPhase := func(ph string) bool { return len(phases) == 0 || phases[ph] || ph == "" }
	// Every window shares the attack start t0 = Start − Offset.
	var t0 time.Time
	seen := map[string]bool{}
	for i, w := range r.Windows {
		line := 0
		if i < len(winLines) {
			line = winLines[i]
		}
		key := fmt.Sprintf("%s/%d", w.Endpoint, w.Index)
		switch {
		case !known(w.Endpoint):
			bad(rundata.WindowsFile, line, "endpoint %q is not one of the run's", w.Endpoint)
		case seen[key]:
			bad(rundata.WindowsFile, line, "window %d of /%s appears twice", w.Index, w.Endpoint)
		case w.Index < 0 || w.Duration <= 0 || w.Offset < 0:
			bad(rundata.WindowsFile, line, "index %d, offset %v and duration %v cannot be", w.Index, w.Offset, w.Duration)
		case !knownPhase(w.Phase):
			bad(rundata.WindowsFile, line, "phase %q is not one of the run's", w.Phase)
		}
		seen[key] = true
		if msg := countsProblem(w.Counts, w.Latency, w.Expected); msg != "" {
			bad(rundata.WindowsFile, line, "/%s window %d: %s", w.Endpoint, w.Index, msg)
		}
		start := w.Start.Add(-w.Offset)
		if t0.IsZero() {
			t0 = start
		} else if d := start.Sub(t0); d > time.Millisecond || d < -time.Millisecond {
			bad(rundata.WindowsFile, line, "window %d of /%s starts %v off the run's time line", w.Index, w.Endpoint, d)
		}
		if !m.Started.IsZero() && !m.Ended.IsZero() && (w.Start.Before(m.Started.Add(-time.Minute)) || w.Start.After(m.Ended.Add(time.Minute))) {
			bad(rundata.WindowsFile, line, "window %d of /%s at %s lies outside the run (%s to %s)", w.Index, w.Endpoint,
				w.Start.Format(time.RFC3339), m.Started.Format(time.RFC3339), m.Ended.Format(time.RFC3339))
		}
	}
	seenPhase := map[string]bool{}
	for i, p := range r.Phases {
		key := p.Endpoint + "/" + p.Phase
		switch {
		case !known(p.Endpoint) || !knownPhase(p.Phase):
			bad(rundata.PhasesFile, 0, "record %d: %s is not an endpoint and phase of the run", i, key)
		case seenPhase[key]:
			bad(rundata.PhasesFile, 0, "record %d: %s appears twice", i, key)
		}
		seenPhase[key] = true
		if msg := countsProblem(p.Counts, p.Latency, p.Expected); msg != "" {
			bad(rundata.PhasesFile, 0, "record %d (%s): %s", i, key, msg)
		}
	}
	checkValidity(m, r.Phases, bad)
	for i, s := range r.Metrics {
		if !m.Started.IsZero() && !m.Ended.IsZero() && (s.Time.Before(m.Started.Add(-time.Minute)) || s.Time.After(m.Ended.Add(time.Minute))) {
			line := 0
			if i < len(metLines) {
				line = metLines[i]
			}
			bad(rundata.MetricsFile, line, "sample of %s at %s lies outside the run", s.Component, s.Time.Format(time.RFC3339))
		}
	}
	return out
}

// countsProblem checks that counts are not negative, that the latency
// histogram holds every result, that its quantiles are in order, and that
// there are no more results than the schedule had requests.
func countsProblem(c rundata.Counts, q rundata.Quantiles, expected int64) string {
	for i, n := range c {
		if n < 0 {
			return fmt.Sprintf("negative count %d of %s", n, rundata.Class(i))
		}
	}
	tot := c.Total()
	switch {
	case q.Count != tot:
		return fmt.Sprintf("latency histogram holds %d results, the counts %d", q.Count, tot)
	case expected > 0 && tot > expected:
		return fmt.Sprintf("%d results of %d scheduled requests", tot, expected)
	case q.P50 < 0 || q.P50 > q.P90 || q.P90 > q.P99 || q.P99 > q.P999 || q.P999 > q.Max:
		return fmt.Sprintf("latency quantiles out of order (p50 %v, p90 %v, p99 %v, p99.9 %v, max %v)", q.P50, q.P90, q.P99, q.P999, q.Max)
	}
	return ""
}
