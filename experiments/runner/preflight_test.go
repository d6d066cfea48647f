package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// externalSpec is a one-run external experiment whose service is at addr,
// started by start (a YAML flow sequence, or "" for a service the runner
// does not start), with extra lines under external.
func externalSpec(t *testing.T, addr, start, extra string) *plan.Plan {
	t.Helper()
	startLine := ""
	if start != "" {
		startLine = "  start: " + start + "\n  ready: \"http://" + addr + "/ready\"\n  ready_timeout: 20s\n"
	}
	text := fmt.Sprintf(`name: pre
seed: 3
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  canary:    "http://%[1]s/healthz"
  upstreams: {A: "http://%[2]s", B: "http://%[2]s"}
  proxies:   {A: "%[3]s", B: "%[4]s"}
%[5]s%[6]s
service: {timeout: 250ms}
load: {rates: {a: 20, b: 20}, window: 250ms}
phases: {warmup: 200ms, baseline: 500ms, fault: 500ms, recovery: 200ms}
conditions: [slow]
modes: [shared]
`, addr, freeLoopback(t), freeLoopback(t), freeLoopback(t), startLine, extra)
	return testPlan(t, text, nil)
}

// commandLauncher starts a user's command as a child process, as the
// process launcher does, and every other component in this process (the
// test binary is no bulkheadlab to start proxies with).
type commandLauncher struct{}

func (commandLauncher) Launch(ctx context.Context, r plan.Run, logPath func(string) string) (*Stack, error) {
	pl := &ProcessLauncher{Supervisor: &Supervisor{}}
	return launch(ctx, r, logPath, "", func(ctx context.Context, c plan.Component, log string) (started, error) {
		if c.Command != nil {
			return pl.start(ctx, c, log)
		}
		return startInProcess(ctx, c, "")
	})
}

// helperArgv is the test binary as a user's start command, in helper mode.
func helperArgv(t *testing.T, mode, addr string) (start, env string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("[%q, -test.run=^$]", exe),
		fmt.Sprintf("  env: {%s: %s, CMD_LISTEN: %q}\n", helperEnv, mode, addr)
}

// TestRunStopsOnABrokenSetup: a start command that does not exist, a
// service that closes every connection and a target where nothing listens
// stop the experiment before any load, with a SetupError naming the mode,
// what failed and why in words, in well under 10 s, and no results folder.
func TestRunStopsOnABrokenSetup(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-service")
	for _, tt := range []struct {
		name       string
		start, env func(addr string) string
		want       []string
	}{
		{"missing start command",
			func(string) string { return fmt.Sprintf("[%q, --port, \"8080\"]", missing) }, nil,
			[]string{"mode shared", fmt.Sprintf("start command %q", missing+" --port 8080"), "does not exist"}},
		{"closes every connection",
			func(addr string) string { s, _ := helperArgv(t, "closer", addr); return s },
			func(addr string) string { _, e := helperArgv(t, "closer", addr); return e },
			[]string{"mode shared", "endpoint a: GET http://", "/a: the connection was closed without an answer", "endpoint b: GET"}},
		{"exits at once",
			func(addr string) string { s, _ := helperArgv(t, "exit1", addr); return s },
			func(addr string) string { _, e := helperArgv(t, "exit1", addr); return e },
			[]string{"mode shared", "start command", "exited before", "exit status 1", "its last output:\n    failing at once"}},
		{"nothing listens", nil, nil,
			[]string{"mode shared", "endpoint a: GET http://", "nothing listens there (connection refused)", "the canary: GET"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeLoopback(t)
			var start, env string
			if tt.start != nil {
				start = tt.start(addr)
			}
			if tt.env != nil {
				env = tt.env(addr)
			}
			root := t.TempDir()
			began := time.Now()
			dir, err := (&Runner{Plan: externalSpec(t, addr, start, env), Root: root, Launcher: commandLauncher{}, PreflightLogs: t.TempDir()}).Run(context.Background())
			took := time.Since(began)
			t.Logf("%s: %v", took.Round(time.Millisecond), err)
			var se *SetupError
			if !errors.Is(err, ErrSetup) || !errors.As(err, &se) {
				t.Fatalf("Run: %v, want a SetupError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			if took > 8*time.Second {
				t.Errorf("took %s to find the broken setup, want well under 10 s", took)
			}
			if dir != nil {
				t.Errorf("Run returned the folder %s, want none", dir.Path)
			}
			if left, _ := os.ReadDir(root); len(left) > 0 {
				t.Errorf("the results root holds %v, want nothing", left)
			}
		})
	}
}

// TestRunGoesOnWithACorrectSetup: a correct service started by its command
// passes the pre-flight (one request to each endpoint and the canary) and
// the run is made.
func TestRunGoesOnWithACorrectSetup(t *testing.T) {
	addr := freeLoopback(t)
	start, env := helperArgv(t, "command", addr)
	r := &Runner{Plan: externalSpec(t, addr, start, env), Root: t.TempDir(), Launcher: commandLauncher{}, PreflightLogs: t.TempDir()}
	rep, err := r.Preflight(context.Background())
	if err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	if rep.Modes != 1 || rep.Requests != 3 || len(rep.Warnings) > 0 {
		t.Errorf("pre-flight %+v, want 1 mode, 3 requests (a, b, the canary), no warning", rep)
	}
	dir, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ix := dir.Index(); len(ix.Runs) != 1 || ix.Runs[0].Status != rundata.StatusComplete {
		t.Errorf("index runs %+v, want the one run complete", ix.Runs)
	}
}

// TestDeadTargetIsNotRetried: a target that answered the pre-flight and
// then went away leaves the run INVALID by the health rule, with transport
// errors only; the run is not run again (validity.retries: 2), for another
// attempt would meet the same dead target.
func TestDeadTargetIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln)
	r := &Runner{Plan: externalSpec(t, ln.Addr().String(), "", "validity: {retries: 2}"), Root: t.TempDir(), Launcher: commandLauncher{}, PreflightLogs: t.TempDir()}
	if _, err := r.Preflight(context.Background()); err != nil {
		srv.Close()
		t.Fatalf("Preflight: %v", err)
	}
	srv.Close() // the service goes away between the pre-flight and the run
	dir, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var meta rundata.RunMeta
	readJSON(t, filepath.Join(dir.RunDir("slow-shared-r1"), rundata.MetaFile), &meta)
	if meta.Valid || len(meta.Attempts) > 0 {
		for _, a := range meta.Attempts {
			t.Logf("earlier attempt: %v", words.Reasons(a.Broken))
		}
		t.Errorf("run valid %t after %d earlier attempts, want INVALID at the first attempt", meta.Valid, len(meta.Attempts))
	}
	if m, _ := filepath.Glob(filepath.Join(dir.Path, rundata.RunsDir, "*.invalid-*")); len(m) > 0 {
		t.Errorf("attempts moved aside %v: the dead target was retried", m)
	}
}

// TestTargetDown: a run is INVALID by the target's failure when a phase
// broke the health rule with transport errors in at least half of its
// results, whatever else broke; by other rules alone it is not.
func TestTargetDown(t *testing.T) {
	// The counts decide, not the record's numbers: the records say only
	// which rules broke.
	health := rundata.Broken{Rule: rundata.RuleHealth, Endpoint: "a", Phase: "baseline", Limit: 90, Unit: rundata.UnitPercent, Count: 100,
		Unanswered: 100, MaxUnanswered: 10, Classes: []rundata.ClassShare{{Class: rundata.ClassTransportError, Share: 100}}}
	lag := rundata.Broken{Rule: rundata.RuleLag, Endpoint: "a", Phase: "baseline", Measured: 30e6, Limit: 25e6, Max: 40e6, Unit: rundata.UnitNanos}
	phase := func(valid bool, transport, ok int64, broken ...rundata.Broken) rundata.PhaseStats {
		ps := rundata.PhaseStats{Endpoint: "a", Phase: "baseline", Valid: valid, Broken: broken}
		ps.Counts[rundata.ClassTransportError], ps.Counts[rundata.ClassOK] = transport, ok
		return ps
	}
	for _, tt := range []struct {
		name   string
		phases []rundata.PhaseStats
		want   bool
	}{
		{"refused throughout", []rundata.PhaseStats{phase(false, 100, 0, health)}, true},
		{"half refused", []rundata.PhaseStats{phase(false, 50, 50, health), phase(true, 0, 100)}, true},
		{"mostly answered", []rundata.PhaseStats{phase(false, 20, 80, health)}, false},
		{"lag too", []rundata.PhaseStats{phase(false, 100, 0, health, lag)}, true},
		{"lag elsewhere", []rundata.PhaseStats{phase(false, 0, 100, lag), phase(false, 100, 0, health)}, true},
		{"lag alone", []rundata.PhaseStats{phase(false, 100, 0, lag)}, false},
		{"valid", []rundata.PhaseStats{phase(true, 0, 100)}, false},
		{"nothing answered", []rundata.PhaseStats{phase(false, 0, 0, health)}, false},
	} {
		if got := targetDown(&loadgen.Report{Phases: tt.phases}); got != tt.want {
			t.Errorf("%s: targetDown(%+v) = %t, want %t", tt.name, tt.phases, got, tt.want)
		}
	}
}
