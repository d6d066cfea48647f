package runner

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

func TestSupervisorStartStop(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "child.log")
	c, err := testSupervisor("serve").Start(context.Background(), ChildSpec{Name: "dep-T", Args: []string{"-test.run=^$"}, LogPath: logPath})
	if err != nil {
		t.Fatal(err)
	}
	if c.Announcement.Component != "dep" || c.Announcement.PID != c.PID() || !strings.HasPrefix(c.URL(), "http://127.0.0.1:") {
		t.Errorf("announcement = %+v, pid %d", c.Announcement, c.PID())
	}
	if err := c.Stop(5 * time.Second); err != nil {
		t.Errorf("Stop = %v, want a clean exit on SIGTERM", err)
	}
	if err := c.Stop(time.Second); err != nil {
		t.Errorf("second Stop = %v", err)
	}
	waitGone(t, c.PID(), 5*time.Second)
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "after the announcement") || !strings.Contains(string(b), "to stderr") {
		t.Errorf("log = %q; want stdout after the announcement and stderr", b)
	}
}

func TestSupervisorNoAnnouncement(t *testing.T) {
	sup := testSupervisor("silent")
	sup.AnnounceTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := sup.Start(context.Background(), ChildSpec{Name: "mute", Args: []string{"-test.run=^$"}})
	if !errors.Is(err, ErrChildStart) || !strings.Contains(err.Error(), "mute") {
		t.Fatalf("Start = %v, want ErrChildStart naming the child", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Start took %s with a 300ms announce timeout", d)
	}
}

func TestSupervisorMissingBinary(t *testing.T) {
	sup := &Supervisor{Executable: filepath.Join(t.TempDir(), "nope")}
	if _, err := sup.Start(context.Background(), ChildSpec{Name: "x"}); !errors.Is(err, ErrChildStart) {
		t.Fatalf("Start = %v, want ErrChildStart", err)
	}
}

// TestParentDeathKillsChild kills an intermediate runner with SIGKILL and
// checks that its supervised child dies too (Pdeathsig).
func TestParentDeathKillsChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux-only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=parent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no grandchild pid from the parent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || processGone(pid) {
		t.Fatalf("grandchild pid %q not running (%v)", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid, 10*time.Second)
}

// TestStartGivesTokenToControlChildrenOnly: a child with a control
// surface gets the Supervisor's token in its environment, any other none,
// whatever the runner's own environment holds.
func TestStartGivesTokenToControlChildrenOnly(t *testing.T) {
	t.Setenv(ctlauth.EnvToken, strings.Repeat("r", 64))
	tok := ctlauth.NewToken()
	sup := &Supervisor{Executable: os.Args[0], Env: []string{helperEnv + "=serve"}, Token: tok}
	for _, tc := range []struct {
		control bool
		want    string
	}{{true, tok}, {false, ""}} {
		c, err := sup.Start(context.Background(), ChildSpec{Name: "child", Control: tc.control})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 5 * time.Second}
		resp, err := hc.Get(c.URL() + "/token")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hc.CloseIdleConnections()
		if err := c.Stop(5 * time.Second); err != nil {
			t.Errorf("stop: %v", err)
		}
		if string(b) != tc.want {
			t.Errorf("Control %v: the child's $%s is %q, want %q", tc.control, ctlauth.EnvToken, b, tc.want)
		}
	}
}
