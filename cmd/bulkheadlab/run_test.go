package main

// End-to-end tests of `bulkheadlab run` as a real subprocess: Ctrl-C, a
// killed runner, --resume, and the regression check failing on a broken
// service. They build the binary once, without -race even under
// `go test -race` (a race-instrumented load generator cannot hold the
// schedule, so every run would be INVALID).

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds bulkheadlab once per test process (on first use, so that
// tests which do not need it do not pay for the build) and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the subprocess tests check /proc and Pdeathsig: Linux only")
	}
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "bulkheadlab-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "bulkheadlab")
		gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gocmd); err != nil {
			gocmd = "go"
		}
		cmd := exec.Command(gocmd, "build", "-o", binPath, ".")
		// No -race and no inherited GOFLAGS=-race: see the file comment.
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// shortSpec is a two-run experiment of ~4 s of load per run.
const shortSpec = `name: sigint-test
seed: 3
repeats: 1
load:
  rates: {a: 100, b: 100}
phases: {warmup: 500ms, baseline: 1s, fault: 2s, recovery: 500ms}
conditions: [slow]
modes: [shared, bulkhead]
`

// runProc is a `bulkheadlab run` subprocess.
type runProc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer // stdout and stderr
	done   chan struct{}
	code   int
	outDir string
}

func startRunner(t *testing.T, outDir string, args ...string) *runProc {
	t.Helper()
	r := &runProc{cmd: exec.Command(binary(t), args...), done: make(chan struct{}), outDir: outDir}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	// Its own process group: a terminal's Ctrl-C on `go test` must not reach it.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.code = -1
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait waits for the runner to exit and returns its exit code (-1 if it
// was killed by a signal).
func (r *runProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(within):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Fatalf("bulkheadlab %s did not exit within %s; output:\n%s", strings.Join(r.cmd.Args[1:], " "), within, r.out.String())
		return 0
	}
}

// resultsDir finds the one results folder under outDir/<experiment>/.
func resultsDir(outDir, experiment string) string {
	m, _ := filepath.Glob(filepath.Join(outDir, experiment, "2*"))
	if len(m) != 1 {
		return ""
	}
	return m[0]
}

func readIndex(dir string) (rundata.Index, error) {
	var ix rundata.Index
	b, err := os.ReadFile(filepath.Join(dir, rundata.IndexFile))
	if err == nil {
		err = json.Unmarshal(b, &ix)
	}
	return ix, err
}

func readMeta(dir, id string) (rundata.RunMeta, error) {
	var m rundata.RunMeta
	b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, id, rundata.MetaFile))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	return m, err
}

// poll calls cond every 50 ms until it returns true or within passes.
func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procStat returns the parent pid and state of pid from /proc/pid/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// childrenOf lists the live (non-zombie) processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, st, ok := procStat(p); ok && ppid == pid && st != 'Z' && st != 'X' {
			kids = append(kids, p)
		}
	}
	return kids
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	_, st, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// waitAllGone waits until none of pids runs; it fails naming the others.
func waitAllGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL) // do not leak them into other tests
			}
			t.Fatalf("child processes %v still alive %s after the runner exited", left, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// componentsPerRun is dep A, dep B, proxy A, proxy B and the service.
const componentsPerRun = 5

// waitSecondRun waits until the first run is complete and the second run
// has all its children, and returns their pids.
func waitSecondRun(t *testing.T, r *runProc, experiment string) (dir string, kids []int) {
	t.Helper()
	poll(t, 60*time.Second, "run 1 complete and run 2 running with its children", func() bool {
		select {
		case <-r.done:
			t.Fatalf("runner exited early (%d):\n%s", r.code, r.out.String())
		default:
		}
		if dir = resultsDir(r.outDir, experiment); dir == "" {
			return false
		}
		ix, err := readIndex(dir)
		if err != nil || len(ix.Runs) != 2 || ix.Runs[0].Status != rundata.StatusComplete || ix.Runs[1].Status != rundata.StatusRunning {
			return false
		}
		kids = childrenOf(r.cmd.Process.Pid)
		return len(kids) >= componentsPerRun
	})
	return dir, kids
}

// treeHashes maps every file under dir to its SHA-256.
func treeHashes(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	h := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		h[p] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRunInterruptAndResume: SIGINT mid-way through the second run stops
// everything (exit 130, the run marked interrupted, no child left), and
// --resume then redoes only that run, keeping the first untouched.
func TestRunInterruptAndResume(t *testing.T) {
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "sigint-test.yaml")
	if err := os.WriteFile(specFile, []byte(shortSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "results")
	r := startRunner(t, out, "run", specFile, "--out", out, "--no-report")
	dir, kids := waitSecondRun(t, r, "sigint-test")
	ix, _ := readIndex(dir)
	first, second := ix.Runs[0].ID, ix.Runs[1].ID
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != ExitInterrupted {
		t.Fatalf("exit code after SIGINT = %d, want %d; output:\n%s", code, ExitInterrupted, r.out.String())
	}
	waitAllGone(t, kids, 10*time.Second)
	if left := childrenOf(r.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("processes %v still have the runner as parent", left)
	}

	ix, err := readIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Runs[0].Status != rundata.StatusComplete || ix.Runs[1].Status != rundata.StatusInterrupted || ix.Ended.IsZero() {
		t.Errorf("index after SIGINT: %+v; want %s complete, %s interrupted, an end time", ix, first, second)
	}
	for id, want := range map[string]string{first: rundata.StatusComplete, second: rundata.StatusInterrupted} {
		if m, err := readMeta(dir, id); err != nil || m.Status != want {
			t.Errorf("%s meta.json: status %q (%v), want %q", id, m.Status, err, want)
		}
	}
	before := treeHashes(t, filepath.Join(dir, rundata.RunsDir, first))

	res := startRunner(t, out, "run", "--resume", dir, "--no-report")
	if code := res.wait(t, 60*time.Second); code != ExitOK {
		t.Fatalf("--resume exit code = %d, want 0; output:\n%s", code, res.out.String())
	}
	if got := strings.Count(res.out.String(), "\n"); !strings.Contains(res.out.String(), second) || strings.Contains(res.out.String(), first) {
		t.Errorf("--resume output (%d lines) should name %s only:\n%s", got, second, res.out.String())
	}
	ix, _ = readIndex(dir)
	for _, e := range ix.Runs {
		if e.Status != rundata.StatusComplete {
			t.Errorf("after --resume, %s is %s, want complete", e.ID, e.Status)
		}
	}
	if m, err := readMeta(dir, second); err != nil || m.Status != rundata.StatusComplete {
		t.Errorf("resumed %s: status %q (%v)", second, m.Status, err)
	} else if !m.Valid {
		// Validity depends on the machine's load, not on --resume.
		t.Logf("resumed %s is INVALID on this machine: %+v", second, m.Validity)
	}
	aside := second + ".interrupted-1"
	if m, err := readMeta(dir, aside); err != nil || m.Status != rundata.StatusInterrupted {
		t.Errorf("partial run not moved aside to runs/%s: status %q, %v", aside, m.Status, err)
	}
	after := treeHashes(t, filepath.Join(dir, rundata.RunsDir, first))
	if len(after) != len(before) {
		t.Errorf("%s has %d files after --resume, %d before", first, len(after), len(before))
	}
	for p, h := range before {
		if after[p] != h {
			t.Errorf("--resume changed %s", p)
		}
	}
}

// TestRunKilledRunnerLeavesNoChildren: SIGKILL cannot be caught, so only
// the children's parent-death signal can stop them.
func TestRunKilledRunnerLeavesNoChildren(t *testing.T) {
	tmp := t.TempDir()
	specFile := filepath.Join(tmp, "sigkill-test.yaml")
	spec := strings.Replace(shortSpec, "name: sigint-test", "name: sigkill-test", 1)
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "results")
	r := startRunner(t, out, "run", specFile, "--out", out, "--no-report")
	var kids []int
	// The pre-flight's children come first: wait for the first run's.
	poll(t, 30*time.Second, "the first run's children", func() bool {
		if ix, err := readIndex(resultsDir(out, "sigkill-test")); err != nil || ix.Runs[0].Status != rundata.StatusRunning {
			return false
		}
		kids = childrenOf(r.cmd.Process.Pid)
		return len(kids) >= componentsPerRun
	})
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 10*time.Second)
	waitAllGone(t, kids, 10*time.Second)
	dir := resultsDir(out, "sigkill-test")
	ix, err := readIndex(dir)
	if err != nil || ix.Runs[0].Status != rundata.StatusRunning {
		t.Errorf("index after SIGKILL: %+v (%v); want the first run left running (resumable)", ix.Runs, err)
	}
}
