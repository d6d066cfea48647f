package main

// End-to-end tests that each rule of trust can fail: a dead target, a
// starved service, a bulkhead that waits before it rejects, responses no
// rule classifies, and damaged run data each change the exit code of
// `--check` the way docs/ci.md promises, never into a false "regressed".

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// trustSpec is a short one-run experiment on the built-in service; %s is
// replaced by extra YAML.
const trustSpec = `name: %s
seed: 5
service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 1T}
load: {rates: {a: 40, b: 40}}
phases: {warmup: 300ms, baseline: 1s, fault: 2s, recovery: 500ms}
conditions: [slow]
validity: {retries: 0}
%s
`

// runSpec writes a spec and runs it with --check; it returns the exit code,
// the output and the results folder.
func runSpec(t *testing.T, name, text string, args ...string) (int, string, string) {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, name+".yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// The figures are drawn and tested in analysis/render; here they would
	// only cost time.
	r := startRunner(t, tmp, append([]string{"run", file, "--out", tmp, "--check", "--no-images"}, args...)...)
	code := r.wait(t, runBound(file))
	return code, r.out.String(), resultsDir(tmp, name)
}

// runBound is how long a run of the spec in file may take before the test
// gives up on it: the matrix's estimated time, two runs more for each
// retry of an INVALID run the spec allows, and a margin; at least 90 s (a
// spec that does not load fails at once).
func runBound(file string) time.Duration {
	sp, err := spec.Load(file)
	if err != nil {
		return 90 * time.Second
	}
	retries := 0
	if r := sp.Validity.Retries; r != nil {
		retries = *r
	}
	run := sp.RunDuration() + spec.RunOverhead
	return max(90*time.Second, sp.EstimatedDuration()+time.Duration(2*retries)*run+30*time.Second)
}

// runSpecJudged is runSpec for a test that needs valid runs to judge (see
// untilJudged).
func runSpecJudged(t *testing.T, name, text string, args ...string) (code int, out, dir string) {
	t.Helper()
	untilJudged(t, func(int) string {
		code, out, dir = runSpec(t, name, text, args...)
		return dir
	})
	return code, out, dir
}

// untilJudged calls attempt (with 1, 2, 3) until the results folder it
// returns has no INVALID run: a machine too busy to measure makes the
// harness say INVALID, as it should, and that is not a verdict to test. If
// every attempt had INVALID runs, the test is skipped.
func untilJudged(t *testing.T, attempt func(i int) string) {
	t.Helper()
	for i := 1; ; i++ {
		invalid := allInvalidReasons(t, attempt(i))
		if invalid == "" {
			return
		}
		t.Logf("attempt %d had INVALID runs (the machine could not hold the load): %s", i, invalid)
		if i == 3 {
			t.Skipf("every attempt had INVALID runs: nothing to judge")
		}
	}
}

// brokeRule reports whether a run of a results folder's summary broke rule.
func brokeRule(dir string, rule rundata.Rule) bool {
	b, err := os.ReadFile(filepath.Join(dir, rundata.SummaryFile))
	var s verdict.Summary
	if err != nil || json.Unmarshal(b, &s) != nil {
		return false
	}
	for _, r := range s.Runs {
		for _, br := range r.Broken {
			if br.Rule == words.Name(rule) {
				return true
			}
		}
	}
	return false
}

// allInvalidReasons lists the INVALID runs of a results folder's summary,
// "" when every run was valid (or there is no summary to read).
func allInvalidReasons(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rundata.SummaryFile))
	if err != nil {
		return ""
	}
	var s verdict.Summary
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	var out []string
	for _, r := range s.Runs {
		if !r.Valid {
			out = append(out, r.ID+": "+strings.Join(r.Invalid, "; "))
		}
	}
	return strings.Join(out, " | ")
}

// readReport returns a results folder's report.md.
func readReport(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rundata.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rejudge evaluates a results folder's runs again with its expectations as
// set changes them (roles that break a claim) and returns claim's outcome.
func rejudge(t *testing.T, dir, claim string, set func(*rundata.Expectations)) verdict.Outcome {
	t.Helper()
	exp, err := rundir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ex := exp.Expectations
	set(&ex)
	return outcomeOf(verdict.Evaluate(exp, ex), claim)
}

func readSummary(t *testing.T, dir string) verdict.Summary {
	t.Helper()
	var s verdict.Summary
	b, err := os.ReadFile(filepath.Join(dir, rundata.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatalf("summary: %v", err)
	}
	return s
}

func outcomeOf(s verdict.Summary, name string) verdict.Outcome {
	for _, v := range s.Verdicts {
		if v.Name == name {
			return v.Outcome
		}
	}
	return ""
}

// TestDeadTargetIsASetupError: an external service that is not listening
// gives no evidence, and is no noise either: the pre-flight stops the
// experiment before any load with exit 4 naming the target and why — no
// INVALID run, no retry, no report, not a supported P1.
func TestDeadTargetIsASetupError(t *testing.T) {
	dead := testkit.FreeAddr(t)
	spec := fmt.Sprintf(trustSpec, "dead", fmt.Sprintf(`modes: [shared]
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  upstreams: {A: "http://%[1]s", B: "http://%[1]s"}
  proxies:   {A: "%[2]s", B: "%[3]s"}
  canary:    "http://%[1]s/healthz"
expectations: {check: [P1]}`, dead, testkit.FreeAddr(t), testkit.FreeAddr(t)))
	code, out, dir := runSpec(t, "dead", spec)
	if code != ExitError || !strings.Contains(out, "endpoint a: GET http://"+dead+"/a: nothing listens there") {
		t.Fatalf("exit %d, want %d naming the dead target; output:\n%s", code, ExitError, out)
	}
	if dir != "" {
		t.Errorf("results folder %s written for an experiment that could not be set up", dir)
	}
}

// TestStarvedServiceIsInvalid: a service whose own CPU is burnt answers
// even /healthz slowly; the canary makes the run INVALID (exit 3).
func TestStarvedServiceIsInvalid(t *testing.T) {
	code, out, dir := runSpec(t, "starved", fmt.Sprintf(trustSpec, "starved", "modes: [bulkhead]\nexpectations: {check: [P2]}"),
		"--"+service.BurnFlag, "8")
	// The canary is one of the reasons (the console shows the first few;
	// a starved service fails the baseline's health and warm-up rules too).
	if code != ExitInvalid || !brokeRule(dir, rundata.RuleCanary) {
		t.Fatalf("exit %d, want %d with the canary among the reasons (%s); output:\n%s", code, ExitInvalid, allInvalidReasons(t, dir), out)
	}
	if s := readSummary(t, dir); outcomeOf(s, "P2") != verdict.Invalid || s.Runs[0].Noise.CanaryP99Ms < 25 {
		t.Errorf("P2 = %s, canary p99 %v ms; want INVALID above the 25 ms limit", outcomeOf(s, "P2"), s.Runs[0].Noise.CanaryP99Ms)
	}
}

// TestWaitBeforeRejectFailsFailFastOnly: a bulkhead that queues its
// callers for 0.6T before it rejects still isolates /b (P2 SUPPORTED), but
// its failures are not fast (FAILFAST NOT SUPPORTED, exit 1). The same run's
// data, damaged by one garbage line, make `report --check` a harness error
// (exit 4) naming the file and line.
func TestWaitBeforeRejectFailsFailFastOnly(t *testing.T) {
	spec := fmt.Sprintf(trustSpec, "waits", `modes:
  - {name: bulkhead, pool_sizes: {a: 3, b: 3}, queues: {a: 30, b: 2}}
service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 0.6T}
expectations: {check: [P2, FAILFAST]}`)
	spec = strings.Replace(spec, "service: {timeout: 250ms, pool_size: 6, queue: 2, max_wait: 1T}\n", "", 1)
	code, out, dir := runSpecJudged(t, "waits", spec)
	if code != ExitFailed || !strings.Contains(out, "not supported: FAILFAST") {
		t.Fatalf("exit %d, want %d naming FAILFAST only; output:\n%s", code, ExitFailed, out)
	}
	s := readSummary(t, dir)
	if outcomeOf(s, "P2") != verdict.Supported || outcomeOf(s, claims.FailFast) != verdict.NotSupported {
		t.Fatalf("P2 %s, FAILFAST %s; want SUPPORTED and NOT SUPPORTED", outcomeOf(s, "P2"), outcomeOf(s, claims.FailFast))
	}

	windows := filepath.Join(dir, rundata.RunsDir, "slow-bulkhead-r1", rundata.WindowsFile)
	b, err := os.ReadFile(windows)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	damaged := strings.Join(lines[:5], "") + "{not json\n" + strings.Join(lines[5:], "")
	if err := os.WriteFile(windows, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	code, msg := execute(t, "report", dir, "--check", "--no-images")
	if code != ExitError || !strings.Contains(msg, "windows.jsonl:6") {
		t.Errorf("report --check on damaged data: exit %d %q, want %d naming windows.jsonl:6", code, msg, ExitError)
	}
}

// TestUnclassifiedIsNamedAndInconclusive: a user's service whose bulkhead
// answers 503s that no rule classifies: the 503s are counted and named, and
// FAILFAST, which depends on the classes, is INCONCLUSIVE (exit 3).
func TestUnclassifiedIsNamedAndInconclusive(t *testing.T) {
	depA := startDep(t, "A")
	depB := startDep(t, "B")
	proxyA, proxyB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	svc, err := service.New(service.Config{
		Layout:  service.LayoutConfig{Mode: service.ModeBulkhead, PoolSize: 6, Queue: 0},
		Timeout: 250 * time.Millisecond, Endpoints: service.TwoEndpoints("http://"+proxyA, "http://"+proxyB),
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, svc.Serve)
	spec := fmt.Sprintf(trustSpec, "unclassified", fmt.Sprintf(`modes: [bulkhead]
external:
  targets:   {a: "http://%[1]s/a", b: "http://%[1]s/b"}
  upstreams: {A: "%[2]s", B: "%[3]s"}
  proxies:   {A: "%[4]s", B: "%[5]s"}
  canary:    "http://%[1]s/healthz"
  rules:
    - {status: 2xx, class: ok}
expectations: {check: [FAILFAST]}`, addr, depA, depB, proxyA, proxyB))
	code, out, dir := runSpecJudged(t, "unclassified", spec)
	if code != ExitInvalid || !strings.Contains(out, "matched no classification rule: 503 ×") {
		t.Fatalf("exit %d, want %d naming the unclassified 503s; output:\n%s", code, ExitInvalid, out)
	}
	if s := readSummary(t, dir); outcomeOf(s, claims.FailFast) != verdict.Inconclusive {
		t.Errorf("FAILFAST = %s, want INCONCLUSIVE", outcomeOf(s, claims.FailFast))
	}
}

// startDep serves a 5 ms dependency stub until the test ends.
func startDep(t *testing.T, name string) string {
	t.Helper()
	dep, err := service.NewDep(service.DepConfig{Name: name, Latency: 5 * time.Millisecond, Seed: 1, Size: 16})
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + serveOn(t, dep.Serve)
}

// measureOf is the mean of the first measure of verdict whose name starts
// with measure; NaN when there is none.
func measureOf(s verdict.Summary, verdict, measure string) float64 {
	for _, v := range s.Verdicts {
		for _, m := range v.Measures {
			if v.Name == verdict && strings.HasPrefix(m.Name, measure) {
				return m.Value.Mean
			}
		}
	}
	return math.NaN()
}
