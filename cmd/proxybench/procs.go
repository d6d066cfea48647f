package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a process this program started. Every child gets SIGKILL when
// this process dies (Pdeathsig) and is stopped by stop otherwise, so none
// outlives a run.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
	err  error         // Wait's error, read after done
}

// childEnv is the environment every child under test gets: the same
// GOMAXPROCS for all, no inherited Go runtime tuning, and quiet logs (the
// Toxiproxy server logs every accepted connection at its default level;
// bulkheadlab logs nothing per request).
func childEnv(procs int) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG", "LOG_LEVEL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOMAXPROCS="+strconv.Itoa(procs), "LOG_LEVEL=warn")
}

// startChild starts bin with args at niceness +nice relative to this
// process (through nice(1), so every thread of the child has it from its
// first instruction), stderr to a log file in logDir. It returns the
// child's stdout, which the caller must drain.
func startChild(name, logDir string, env []string, nice int, bin string, args ...string) (*child, io.Reader, error) {
	argv := append([]string{bin}, args...)
	if nice != 0 {
		nicePath, err := exec.LookPath("nice")
		if err != nil {
			return nil, nil, fmt.Errorf("%s: nice(1) is needed for --child-nice %d: %w", name, nice, err)
		}
		argv = append([]string{nicePath, "-n", strconv.Itoa(nice)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		// Drain stdout to EOF before Wait, as exec requires; the caller
		// reads the first line through a tee of this reader.
		c.err = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, out, nil
}

// pid is the child's process id (nice(1) execs, so it is the program's).
func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports whether the child has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop ends the child: SIGTERM, then SIGKILL after grace.
func (c *child) stop(grace time.Duration) {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// cpuTime is the user+system CPU time the process pid has used, from
// /proc/<pid>/stat (all its threads, in clock ticks of 1/100 s: USER_HZ is
// 100 in Linux's user ABI).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU extracts utime+stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no ')'")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want ≥ 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] { // fields 14 (utime) and 15 (stime)
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// readFirstLine reads one line from r within timeout, or fails if the
// child ends first. The rest of r is drained in the background.
func readFirstLine(ctx context.Context, c *child, r io.Reader, timeout time.Duration) (string, error) {
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		br := bufio.NewReader(r)
		line, err := br.ReadString('\n')
		ch <- res{line, err}
		_, _ = io.Copy(io.Discard, br)
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			return "", fmt.Errorf("%s: no first line on stdout: %w", c.name, x.err)
		}
		return x.line, nil
	case <-c.done:
		select {
		case x := <-ch:
			if x.err == nil {
				return x.line, nil
			}
		case <-time.After(100 * time.Millisecond):
		}
		return "", fmt.Errorf("%s ended before it announced itself: %v", c.name, c.err)
	case <-time.After(timeout):
		return "", fmt.Errorf("%s: no first line within %v", c.name, timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
