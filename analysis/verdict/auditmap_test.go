package verdict

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// auditSpec is the audit block of a synthetic audit over /a (calls A) and
// /b (calls B): A slow and A failing, /b critical.
const auditSpecText = `audit:
  critical: [b]
  columns:
    - {condition: slow, dependency: A, fault: slow}
    - {condition: failing, dependency: A, fault: failing}
    - {condition: busy, dependency: B, fault: busy}
`

func auditOf(t *testing.T, dir string) []AuditMap {
	t.Helper()
	exp, err := rundir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Audit == nil {
		t.Fatal("the spec's audit block was not read")
	}
	s := Evaluate(exp, exp.Expectations)
	return s.Audits
}

func classes(m AuditMap) string {
	var b strings.Builder
	for i, e := range m.Endpoints {
		b.WriteString(e + ":")
		for _, c := range m.Cells[i] {
			b.WriteString(" " + c.Class)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestAuditMapSynth: on synthetic runs, a slow A takes /b down through the
// shared pool (DEGRADED, a finding naming the pool, a violation of the
// critical /b) and not behind bulkheads (ISOLATED); /a calls A (EXPECTED);
// the failing A leaves /b alone in both modes. A run that a stop
// condition aborted is ABORTED; a cell with no valid run INVALID; a
// column without runs SKIPPED. The measured call graph is compared with
// the declared one.
func TestAuditMapSynth(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool {
		r.DegradeAt = 0
		return r.Cond != "busy" || r.Mode == "bulkhead"
	})
	for i := range runs {
		if runs[i].Cond == "busy" {
			runs[i].Invalid = true
		}
	}
	dir := synth.Write(t, t.TempDir(), auditSpecText, runs)
	maps := auditOf(t, dir)
	if len(maps) != 2 {
		t.Fatalf("%d maps, want one per mode", len(maps))
	}
	byMode := map[string]AuditMap{}
	for _, m := range maps {
		byMode[m.Mode] = m
	}
	if got, want := classes(byMode["shared"]), "a: EXPECTED EXPECTED SKIPPED; b: DEGRADED ISOLATED SKIPPED; "; got != want {
		t.Errorf("shared map %s, want %s", got, want)
	}
	if got, want := classes(byMode["bulkhead"]), "a: EXPECTED EXPECTED INVALID; b: ISOLATED ISOLATED INVALID; "; got != want {
		t.Errorf("bulkhead map %s, want %s", got, want)
	}
	sh := byMode["shared"]
	// The synthetic runs' pools predict the slow A's demand above the
	// shared pool (and /a's own bulkhead): /b's cell is predicted DEGRADED
	// in shared and ISOLATED behind bulkheads, as measured.
	for _, m := range maps {
		if c := m.Cells[1][0]; c.Predicted != c.Class {
			t.Errorf("%s: /b under slow A %s, predicted %q", m.Mode, c.Class, c.Predicted)
		}
		if len(m.Mispredicted) != 0 {
			t.Errorf("%s: mispredicted %v", m.Mode, m.Mispredicted)
		}
	}
	if len(sh.Findings) != 1 || sh.Findings[0].Endpoint != "b" || !strings.Contains(sh.Findings[0].Summary, "/b degraded when A was slow") {
		t.Errorf("shared findings %+v", sh.Findings)
	}
	if c := sh.Cells[1][0]; !(c.P99RiseT > 0.25) || c.Runs != 1 || c.TimeToDegradeS != c.TimeToDegradeS {
		t.Errorf("/b under slow A in shared: %+v", c)
	}
	// /b calls B: the busy B's cells are not violations whatever they
	// are; the slow A's in the shared pool is.
	if got := strings.Join(sh.Violations, "; "); got != "/b × A slow: DEGRADED" {
		t.Errorf("violations %q", got)
	}
	if got := byMode["bulkhead"].Violations; len(got) != 0 {
		t.Errorf("bulkhead violations %q, want none", got)
	}

	// A stop condition fired in slow-bulkhead-r1; the calibration measured
	// /a calling B as well.
	mp := filepath.Join(dir, rundata.RunsDir, "slow-bulkhead-r1", rundata.MetaFile)
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var meta rundata.RunMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	at := meta.Started.Add(8 * time.Second)
	meta.Abort = &rundata.Abort{Rule: "/a error rate ≥ 0.5 over 500ms", Endpoint: "a", Trigger: "/a error rate 0.75 (30 of 40)", At: at, Cleared: at.Add(3 * time.Millisecond)}
	b, _ = json.Marshal(meta)
	if err := os.WriteFile(mp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g := rundata.CallGraph{Requests: 10, Rate: 20, Edges: map[string][]string{"a": {"A", "B"}, "b": {"B"}}}
	b, _ = json.Marshal(g)
	if err := os.WriteFile(filepath.Join(dir, rundata.CallGraphFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range auditOf(t, dir) {
		if m.Mode != "bulkhead" {
			continue
		}
		if got, want := classes(m), "a: ABORTED EXPECTED INVALID; b: ABORTED ISOLATED INVALID; "; got != want {
			t.Errorf("bulkhead map with the abort and the measured graph %s, want %s", got, want)
		}
		if c := m.Cells[0][0]; !strings.Contains(c.Aborted, "error rate 0.75") || !strings.Contains(c.Aborted, "3ms after") {
			t.Errorf("aborted cell %+v", c)
		}
		if !m.Cells[0][2].Calls {
			t.Errorf("/a × B: not a call, though the measured graph has it")
		}
		// The rule was met by /a's results: /b's cell was stopped before
		// it was measured (--check: rerun), not harmed.
		if got := strings.Join(m.Violations, "; "); got != "/b × A slow: ABORTED (stopped before it was measured)" || len(m.Unmeasured) != 1 {
			t.Errorf("violations with the abort %q, unmeasured %q", got, m.Unmeasured)
		}
		if got := strings.Join(m.GraphDiffs, "; "); got != "/a calls B (measured), which is not declared" {
			t.Errorf("graph differences %q", got)
		}
	}
}

// TestAuditMapMispredicted: behind bulkheads that do not help (synthetic
// runs where /b degrades anyway), /b's cell is DEGRADED where the layout
// predicts ISOLATED: the map says so, and the critical /b is a violation.
func TestAuditMapMispredicted(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool {
		r.NoHelp = true
		return r.Mode == "bulkhead" && r.Cond != "busy"
	})
	maps := auditOf(t, synth.Write(t, t.TempDir(), auditSpecText, runs))
	if len(maps) != 1 {
		t.Fatalf("%d maps", len(maps))
	}
	m := maps[0]
	if got := strings.Join(m.Mispredicted, "; "); got != "/b × A slow: DEGRADED, predicted ISOLATED" {
		t.Errorf("mispredicted %q", got)
	}
	if got := strings.Join(m.Violations, "; "); !strings.Contains(got, "/b × A slow: DEGRADED") {
		t.Errorf("violations %q", got)
	}
}

// TestAuditUnclearCells: repeats: auto for an audit waits on cells whose
// repeats disagree: /b degraded in one of two shared-pool runs of a slow A.
func TestAuditUnclearCells(t *testing.T) {
	runs := synth.Matrix(2, func(r *synth.Run) bool {
		if r.Cond == "slow" && r.Mode == "shared" && r.Repeat == 2 {
			r.DegradeAt = -1 // /b never degrades in this repeat
		} else {
			r.DegradeAt = 0
		}
		return r.Cond != "busy" && r.Mode == "shared"
	})
	exp, err := rundir.Load(synth.Write(t, t.TempDir(), auditSpecText+"expectations: {check: []}\n", runs))
	if err != nil {
		t.Fatal(err)
	}
	s := Evaluate(exp, exp.Expectations)
	if got := strings.Join(s.Unclear(), "; "); got != "audit shared: /b × A slow (1 of 2 runs degraded)" {
		t.Errorf("unclear %q", got)
	}
}

// TestAuditGraphAndControl: a declaration of some endpoints' calls keeps
// the others' own dependency; an endpoint none of whose calibration
// requests was answered keeps its declared calls (and the map says so);
// a control run that is not valid makes the critical cells unmeasured.
func TestAuditGraphAndControl(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool {
		r.DegradeAt = 0
		if r.Cond == "healthy" {
			r.Invalid = true
		}
		return r.Mode == "bulkhead" && r.Cond != "busy"
	})
	spec := strings.Replace(auditSpecText, "  critical: [b]\n", "  critical: [b]\n  calls: {a: [A]}\n", 1)
	dir := synth.Write(t, t.TempDir(), spec, runs)
	g := rundata.CallGraph{Requests: 10, Rate: 20, Edges: map[string][]string{"a": {"A"}}, Failed: map[string]string{"b": "401 Unauthorized"}}
	b, _ := json.Marshal(g)
	if err := os.WriteFile(filepath.Join(dir, rundata.CallGraphFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := auditOf(t, dir)[0]
	if !m.Cells[1][2].Calls {
		t.Errorf("/b × B: not a call; /b's dependency is B and its calibration failed")
	}
	if got := strings.Join(m.GraphDiffs, "; "); got != "/b: no calibration request answered 2xx (401 Unauthorized); its declared calls are used" {
		t.Errorf("graph differences %q", got)
	}
	if len(m.Unmeasured) == 0 || !strings.HasPrefix(m.Unmeasured[0], "control run: no valid run") {
		t.Errorf("unmeasured %q, want the control run first", m.Unmeasured)
	}
}

// TestAuditRiseAgainstControl: /b's baseline p99 inflated by a few
// stragglers (250 ms) hides a rise of its fault-phase p99 from 14 to 240
// ms behind a bulkhead when the rise is against its own baseline alone;
// against the control run's fault-phase p99 (14 ms) it is DEGRADED. The
// same stragglers with no rise stay ISOLATED, and a control as noisy as
// the rise raises the threshold beyond it.
func TestAuditRiseAgainstControl(t *testing.T) {
	build := func(tweak func(r *synth.Run)) AuditMap {
		runs := synth.Matrix(1, func(r *synth.Run) bool {
			tweak(r)
			return r.Mode == "bulkhead" && (r.Cond == "healthy" || r.Cond == "slow")
		})
		maps := auditOf(t, synth.Write(t, t.TempDir(), auditSpecText, runs))
		return maps[0]
	}
	for _, tt := range []struct {
		name  string
		tweak func(r *synth.Run)
		want  string
	}{
		{"stragglers hide a rise", func(r *synth.Run) {
			r.BBaselineP99Ms = 250
			if r.Cond == "slow" {
				r.BFaultMs = 240
			}
		}, CellDegraded},
		{"stragglers, no rise", func(r *synth.Run) { r.BBaselineP99Ms = 250 }, CellIsolated},
		{"a control as noisy", func(r *synth.Run) {
			r.BFaultMs = 240 // the control's /b as slow as the slow A's
		}, CellIsolated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := build(tt.tweak)
			c := m.Cells[1][0] // /b × A slow
			if c.Class != tt.want {
				t.Errorf("/b × A slow: %s (rise %.3g T, control noise %.3g T), want %s", c.Class, float64(c.P99RiseT), float64(m.Control[1].NoiseT), tt.want)
			}
		})
	}
}

// TestAuditFailuresNamed: a finding says what its failures were as the
// service's answers told: the built-in service's bulkhead rejections by
// their header, a service of the user's own by its classification rules
// (503 X-Reject: pool → rejected by a pool).
func TestAuditFailuresNamed(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool {
		r.DegradeAt = 0
		return r.Mode == "shared" && (r.Cond == "healthy" || r.Cond == "slow")
	})
	dir := synth.Write(t, t.TempDir(), auditSpecText, runs)
	m := auditOf(t, dir)[0]
	want := "50 % rejected by a bulkhead (503 X-Bulkhead-Reject)"
	if c := m.Cells[1][0]; c.Failures != want || len(m.Findings) != 1 || !strings.Contains(m.Findings[0].Summary, "errors 50 %: "+want) {
		t.Errorf("/b × A slow: failures %q, findings %+v; want %q", c.Failures, m.Findings, want)
	}
	if c := m.Cells[1][1]; c.Failures != "" {
		t.Errorf("/b × A failing: failures %q, want none", c.Failures)
	}
	// The same runs as a user's service's, classified by its rules.
	for _, id := range []string{"healthy-shared-r1", "slow-shared-r1"} {
		mp := filepath.Join(dir, rundata.RunsDir, id, rundata.MetaFile)
		var meta rundata.RunMeta
		b, _ := os.ReadFile(mp)
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		meta.External = true
		b, _ = json.Marshal(meta)
		if err := os.WriteFile(mp, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := "external:\n  rules:\n    - {status: 503, header: X-Reject, value: pool, class: rejected}\n    - {status: \"5xx\", class: dep_error}\n"
	if err := os.WriteFile(filepath.Join(dir, rundata.SpecFile), []byte(auditSpecText+rules), 0o644); err != nil {
		t.Fatal(err)
	}
	m = auditOf(t, dir)[0]
	if got, want := m.Cells[1][0].Failures, "50 % rejected by a pool (503 X-Reject: pool)"; got != want {
		t.Errorf("/b × A slow, a service's own rules: failures %q, want %q", got, want)
	}
	if got, want := m.Cells[0][0].Failures, "75 % rejected by a pool (503 X-Reject: pool)"; got != want {
		t.Errorf("/a × A slow: failures %q, want %q", got, want)
	}
}

// TestAuditDeclaredGraph: the map carries the declared graph (audit.calls
// over the endpoints' own dependency), which the report's "declared"
// column shows; an endpoint that declares nothing is left to the
// measurement and is not a difference.
func TestAuditDeclaredGraph(t *testing.T) {
	runs := synth.Matrix(1, func(r *synth.Run) bool { return r.Mode == "bulkhead" && r.Cond != "busy" })
	spec := strings.Replace(auditSpecText, "  critical: [b]\n", "  critical: [b]\n  calls: {a: [A, B]}\n", 1)
	dir := synth.Write(t, t.TempDir(), spec, runs)
	m := auditOf(t, dir)[0]
	if got, want := fmt.Sprint(m.Declared), "map[a:[A B] b:[B]]"; got != want {
		t.Errorf("declared %s, want %s", got, want)
	}
	g := rundata.CallGraph{Requests: 10, Rate: 20, Edges: map[string][]string{"a": {"A"}, "b": {"B", "C"}}}
	b, _ := json.Marshal(g)
	if err := os.WriteFile(filepath.Join(dir, rundata.CallGraphFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// /b declares B (its dependency): C is a difference; /a declares A
	// and B and was measured calling A only.
	m = auditOf(t, dir)[0]
	if got, want := strings.Join(m.GraphDiffs, "; "), "/a is declared to call B, which no calibration request reached; /b calls C (measured), which is not declared"; got != want {
		t.Errorf("graph differences %q, want %q", got, want)
	}
	if got := graphDiffs([]string{"a"}, map[string][]string{"a": {"A"}}, map[string][]string{}); len(got) != 0 {
		t.Errorf("an endpoint that declares nothing: differences %v, want none", got)
	}
}

// TestCallsColumnOfLoad: in a column of load (a tenant's surge) the
// endpoints whose load rose are its cause, whatever they call; the
// others are judged; a column with a fault too keeps its dependency's
// callers as causes.
func TestCallsColumnOfLoad(t *testing.T) {
	calls := map[string][]string{"noisy": {"A"}, "quiet": {"A"}, "other": {"B"}}
	load := AuditColumn{Condition: "batch", Fault: "batch", Load: []string{"noisy"}}
	both := AuditColumn{Condition: "batch-slow", Dependency: "B", Fault: "batch-slow", Load: []string{"noisy"}}
	for _, tt := range []struct {
		col  AuditColumn
		e    string
		want bool
	}{
		{load, "noisy", true}, {load, "quiet", false}, {load, "other", false},
		{both, "noisy", true}, {both, "quiet", false}, {both, "other", true},
	} {
		if got := callsColumn(nil, calls, tt.e, tt.col); got != tt.want {
			t.Errorf("/%s × %s: %v, want %v", tt.e, tt.col.Target(), got, tt.want)
		}
	}
	f := finding("quiet", load, AuditCell{BaselineP99Ms: 10, FaultP99Ms: 200, P99RiseT: 0.76, ErrorRate: 0.4, TimeToDegradeS: 0.5})
	if want := "/quiet degraded when the load of /noisy rose (batch), which is not its own: p99 10.00 → 200.0 ms (+0.76 T)"; !strings.HasPrefix(f.Summary, want) {
		t.Errorf("finding %q, want it to start %q", f.Summary, want)
	}
}
