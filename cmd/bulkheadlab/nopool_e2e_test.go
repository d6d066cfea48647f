//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// rateLimitShort is the rate-limit preset with short phases and the slow
// condition only (two runs of ~4 s), its rates and A's added latency as
// given.
func rateLimitShort(t *testing.T, rates, latency string) string {
	t.Helper()
	return presetEdited(t, "rate-limit-not-bulkhead",
		"phases: {warmup: 1s, baseline: 3s, fault: 4s, recovery: 2s}", "phases: {warmup: 500ms, baseline: 1500ms, fault: 2500ms, recovery: 300ms}",
		"  - healthy\n", "",
		"rates: {a: 220, b: 220}", "rates: "+rates,
		"{type: latency, latency: 90ms, jitter: 5ms}", "{type: latency, latency: "+latency+", jitter: 2ms}")
}

// TestRateLimitNotBulkheadPreset: A ten times slower at the same rate
// leaves its rate limiter (220/s for 200/s) untouched — no result of class
// limited, none counted by the service — while A's calls in flight grow
// tenfold and /b degrades on the shared connections; bulkheads keep /b at
// its baseline: RATELIMIT-NOT-BULKHEAD SUPPORTED, exit 0. The claim fails
// (exit 1) on the two layouts that break it: a limiter that does bound A
// (40/s: it refuses most calls — in normal operation too — and /b stays
// up), and a slowdown too small
// to need the connections (2×).
func TestRateLimitNotBulkheadPreset(t *testing.T) {
	const claim = "RATELIMIT-NOT-BULKHEAD"
	code, out, dir := runSpecJudged(t, "rate-limit-not-bulkhead", rateLimitShort(t, "{a: 220, b: 220}", "90ms"))
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	limited, counted := measureOf(s, claim, "/a results its rate limiter refused"), measureOf(s, claim, "/a calls its rate limiter refused")
	base, fault := measureOf(s, claim, "calls in flight to /a's dependency, baseline, ratelimit"), measureOf(s, claim, "calls in flight to /a's dependency, tenfold, ratelimit")
	t.Logf("limited share %.4f (service count %.0f); A's calls in flight %.1f → %.1f; /b p99 %.0f ms rate-limited, %.0f ms with bulkheads",
		limited, counted, base, fault, measureOf(s, claim, "/b fault p99, ratelimit"), measureOf(s, claim, "/b fault p99, bulkhead"))
	if !(limited <= 0.01) || !(counted <= 20) {
		t.Errorf("the limiter refused %.4f of /a (%.0f calls by its own count), want (almost) none", limited, counted)
	}
	if !(fault >= 5*base) || !(fault >= 10) {
		t.Errorf("A's calls in flight %.1f → %.1f, want them to grow with its latency (×10 by Little's law)", base, fault)
	}
	for _, r := range s.Runs {
		if r.Mode == "ratelimit" && r.Exhausted.Resource != "connections" {
			t.Errorf("run %s: exhausted first %+v, want the shared connections", r.ID, r.Exhausted)
		}
	}

	// A limiter of 40/s refuses 80 % of /a's normal load too: its baseline
	// is unhealthy by design, which the health rule must not call INVALID.
	code, out, dir = runSpecJudged(t, "rate-limit-not-bulkhead", strings.Replace(rateLimitShort(t, "{a: 40, b: 220}", "90ms"),
		"validity: {retries: 2}", "validity: {retries: 2, baseline_min_success: 0.1}", 1))
	s = readSummary(t, dir)
	if code != ExitFailed || outcomeOf(s, claim) != verdict.NotSupported {
		t.Fatalf("a limiter that bounds A: exit %d, %s = %s; want %d, NOT SUPPORTED; output:\n%s", code, claim, outcomeOf(s, claim), ExitFailed, out)
	}
	t.Logf("a: 40/s: limited share %.3f, /b degraded in %.0f of the repeats", measureOf(s, claim, "/a results its rate limiter refused"),
		measureOf(s, claim, "repeats in which /b degraded"))
	if l := measureOf(s, claim, "/a results its rate limiter refused"); !(l > 0.5) {
		t.Errorf("a: 40/s: the limiter refused %.3f of /a, want most of it (200/s offered)", l)
	}

	code, out, dir = runSpecJudged(t, "rate-limit-not-bulkhead", rateLimitShort(t, "{a: 220, b: 220}", "10ms"))
	s = readSummary(t, dir)
	if code != ExitFailed || outcomeOf(s, claim) != verdict.NotSupported {
		t.Fatalf("A twice as slow: exit %d, %s = %s; want %d, NOT SUPPORTED; output:\n%s", code, claim, outcomeOf(s, claim), ExitFailed, out)
	}
	if d := measureOf(s, claim, "repeats in which /b degraded"); d != 0 {
		t.Errorf("A twice as slow: /b degraded in %.2f of the repeats, want none", d)
	}
}

// eventLoopShort is the event-loop preset with short phases (two runs of
// ~4 s) and A's stall as given.
func eventLoopShort(t *testing.T, stall string, edits ...string) string {
	t.Helper()
	return presetEdited(t, "event-loop-memory", append([]string{
		"phases: {warmup: 1s, baseline: 2s, fault: 3s, recovery: 1s}", "phases: {warmup: 500ms, baseline: 1s, fault: 2s, recovery: 300ms}",
		"{type: latency, latency: 4s, jitter: 10ms}", "{type: latency, latency: " + stall + ", jitter: 2ms}"}, edits...)...)
}

// TestEventLoopMemoryPreset: with nothing bounding them the calls in
// flight to a stalled A grow at /a's rate throughout the fault, and the
// service's memory with them; bulkheads keep both flat: UNBOUNDED-GROWS
// SUPPORTED, exit 0. Judged with the modes' roles swapped (the bounded
// mode named as the one that should grow) it is NOT SUPPORTED, and so it is
// when A does not stall (its calls come back: nothing grows), exit 1.
func TestEventLoopMemoryPreset(t *testing.T) {
	const claim = "UNBOUNDED-GROWS"
	code, out, dir := runSpecJudged(t, "event-loop-memory", eventLoopShort(t, "4s"))
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, dir)
	for _, r := range s.Runs {
		m := r.Memory
		if m == nil {
			t.Fatalf("run %s has no memory numbers", r.ID)
		}
		t.Logf("%s: calls in flight %.0f → %.0f (%.0f/s for %.0f/s offered), RSS %.0f → %.0f MiB, %.0f KiB a call", r.ID, m.InflightStart, m.InflightEnd,
			m.InflightSlope, m.OfferedPerS, m.RSSStartBytes/(1<<20), m.RSSEndBytes/(1<<20), m.BytesPerCall/1024)
		switch r.Mode {
		case "unbounded":
			// 200/s for 2 s with none back: 400 in flight, 256 KiB each.
			if !(m.InflightEnd >= 300) || !(m.RSSEndBytes-m.RSSStartBytes >= 50<<20) {
				t.Errorf("%s: %.0f calls in flight and %.0f MiB more at the fault's end, want ≈ 400 and ≈ 100 MiB", r.ID, m.InflightEnd, (m.RSSEndBytes-m.RSSStartBytes)/(1<<20))
			}
		case "bulkhead":
			if !(m.InflightPeak <= 10) {
				t.Errorf("%s: %.0f calls in flight, want at most the bulkhead's 10", r.ID, m.InflightPeak)
			}
		}
	}
	swapped := rejudge(t, dir, claim, func(e *rundata.Expectations) {
		e.Memory = &rundata.MemoryRoles{Mode: "bulkhead", Control: "unbounded"}
	})
	if swapped != verdict.NotSupported {
		t.Errorf("the bounded mode judged as the one that grows: %s, want NOT SUPPORTED", swapped)
	}

	code, out, dir = runSpecJudged(t, "event-loop-memory", eventLoopShort(t, "10ms"))
	s = readSummary(t, dir)
	if code != ExitFailed || outcomeOf(s, claim) != verdict.NotSupported {
		t.Fatalf("A not stalled: exit %d, %s = %s; want %d, NOT SUPPORTED; output:\n%s", code, claim, outcomeOf(s, claim), ExitFailed, out)
	}
}

// TestMemoryGuardStopsTheRun: the unbounded service growing past a ceiling
// of 96 MiB is killed by the runner's memory guard within the fault phase:
// its run is recorded as stopped, with the memory seen and the ceiling, is
// not run again and leaves no process behind; the report says the guard
// stopped it, and the claim judges it on its numbers up to the stop. The
// bulkhead mode under the same ceiling runs to its end.
func TestMemoryGuardStopsTheRun(t *testing.T) {
	code, out, dir := runSpec(t, "event-loop-memory", eventLoopShort(t, "4s",
		"max_service_memory: 1GiB", "max_service_memory: 96MiB"))
	if code == ExitError || code == ExitInterrupted {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	var meta rundata.RunMeta
	b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, "slow-unbounded-r1", rundata.MetaFile))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	ms := meta.MemoryStop
	if meta.Status != rundata.StatusStopped || ms == nil {
		t.Fatalf("the unbounded run: status %s, memory stop %+v; want stopped with a record; output:\n%s", meta.Status, ms, out)
	}
	t.Logf("stopped at %.0f MiB (ceiling %.0f MiB) in the %s phase, pid %d", float64(ms.RSSBytes)/(1<<20), float64(ms.LimitBytes)/(1<<20), ms.Phase, ms.PID)
	if ms.LimitBytes != 96<<20 || ms.RSSBytes < ms.LimitBytes || ms.RSSBytes > ms.LimitBytes+64<<20 || ms.Phase != rundata.PhaseFault ||
		ms.Component != rundata.ServiceComponent || meta.MaxServiceMemory != 96<<20 || len(meta.Attempts) != 0 || meta.Error != "" {
		t.Errorf("memory stop %+v, ceiling %d, %d earlier attempts, error %q; want the service at ≥ 96 MiB in the fault, not run again, no error",
			*ms, meta.MaxServiceMemory, len(meta.Attempts), meta.Error)
	}
	if err := syscall.Kill(ms.PID, 0); err == nil {
		t.Errorf("the service's process %d still runs", ms.PID)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, rundata.RunsDir)); len(entries) != 2 && !hasInvalidAttempt(entries) {
		t.Errorf("runs folder %v, want the two runs (a stopped run is not run again)", entries)
	}
	var bh rundata.RunMeta
	if b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, "slow-bulkhead-r1", rundata.MetaFile)); err != nil || json.Unmarshal(b, &bh) != nil ||
		bh.Status != rundata.StatusComplete || bh.MemoryStop != nil {
		t.Errorf("the bulkhead run: status %s, memory stop %+v; want complete, never stopped", bh.Status, bh.MemoryStop)
	}
	report := readReport(t, dir)
	if !strings.Contains(report, "stopped by the memory guard") {
		t.Errorf("report.md does not say the memory guard stopped the run")
	}
	s := readSummary(t, dir)
	for _, v := range s.Verdicts {
		if v.Name == "UNBOUNDED-GROWS" {
			t.Logf("UNBOUNDED-GROWS %s: %s", v.Outcome, v.Reason)
			if v.Outcome == verdict.NotSupported || v.Outcome == verdict.Skipped || !strings.Contains(v.Reason, "stopped by the memory guard") {
				t.Errorf("UNBOUNDED-GROWS %s (%s): want it judged on the stopped run's numbers, naming the stop", v.Outcome, v.Reason)
			}
		}
	}
	if r := runOf(s, "slow-unbounded-r1"); r == nil || r.MemoryStop == nil || math.IsNaN(float64(r.Memory.InflightEnd)) {
		t.Errorf("summary of the stopped run %+v: want its memory stop and its numbers up to it", r)
	}
}

// hasInvalidAttempt reports whether a runs folder keeps an INVALID attempt
// (the bulkhead run's, on a busy machine).
func hasInvalidAttempt(entries []os.DirEntry) bool {
	for _, e := range entries {
		if strings.Contains(e.Name(), ".invalid-") {
			return true
		}
	}
	return false
}

// runOf is the summary's run id, nil when it has none.
func runOf(s verdict.Summary, id string) *measure.RunSummary {
	for i := range s.Runs {
		if s.Runs[i].ID == id {
			return &s.Runs[i]
		}
	}
	return nil
}

// TestEventLoopInNode: the event-loop claim on the runtime it names — the
// Node service of examples/node-service run as its example spec
// (event-loop.yaml) lays it out, with its addresses made free: without a
// pool (and with the agent's sockets unlimited, Node's default) the calls
// in flight to a stalled A grow at /a's rate and the node process's memory
// with them, read from /proc and A's proxy with nothing exported by the
// service; with its explicit semaphore both stay flat: UNBOUNDED-GROWS
// SUPPORTED, exit 0.
func TestEventLoopInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the service of another runtime cannot run")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "node-service"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "event-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deps := stubDeps(t, service.DepConfig{Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 1, Size: 16})
	text := string(b)
	port := func(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }
	for _, e := range [][2]string{
		{`"http://127.0.0.1:9301"`, fmt.Sprintf("%q", deps["A"])}, {`"http://127.0.0.1:9302"`, fmt.Sprintf("%q", deps["B"])},
		{"127.0.0.1:9311", testkit.FreeAddr(t)}, {"127.0.0.1:9312", testkit.FreeAddr(t)},
		{"8203", port(testkit.FreeAddr(t))}, {"8204", port(testkit.FreeAddr(t))},
		{"start: [node, server.js,", fmt.Sprintf("start: [%q, %q,", node, filepath.Join(dir, "server.js"))},
		{"phases: {warmup: 1s, baseline: 2s, fault: 3s, recovery: 1s}", "phases: {warmup: 1s, baseline: 1500ms, fault: 2s, recovery: 300ms}"},
		{"validity: {", "validity: {retries: 2, "},
	} {
		if !strings.Contains(text, e[0]) {
			t.Fatalf("examples/node-service/event-loop.yaml has no %q", e[0])
		}
		text = strings.ReplaceAll(text, e[0], e[1])
	}
	code, out, rdir := runSpecJudged(t, "node-event-loop", text)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; output:\n%s", code, ExitOK, out)
	}
	s := readSummary(t, rdir)
	for _, r := range s.Runs {
		m := r.Memory
		if m == nil || m.Source != measure.InflightFromProxy {
			t.Fatalf("run %s: memory numbers %+v, want them read from the proxy", r.ID, m)
		}
		t.Logf("%s: calls in flight %.0f → %.0f, RSS %.0f → %.0f MiB", r.ID, m.InflightStart, m.InflightEnd, m.RSSStartBytes/(1<<20), m.RSSEndBytes/(1<<20))
		if r.Mode == "unbounded" && !(m.InflightEnd >= 300) {
			t.Errorf("%s: %.0f calls in flight at the fault's end, want ≈ 400", r.ID, m.InflightEnd)
		}
	}
}
