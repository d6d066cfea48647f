package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// hogSink keeps the hog's memory reachable.
var hogSink [][]byte

// helperHog grows its resident memory by 4 MiB every 20 ms (each page
// written), up to 1 GiB, then waits to be killed: a service whose memory
// nothing bounds.
func helperHog() int {
	fmt.Println("hogging")
	for range 256 {
		b := make([]byte, 4<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hogSink = append(hogSink, b)
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Minute)
	return 0
}

// helperHogParent starts a hog as its child, in its own process group,
// and waits: the memory that grows is a descendant's.
func helperHogParent() int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hog")
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		return 1
	}
	time.Sleep(time.Minute)
	return 0
}

// startHog starts the helper child of kind as a process group leader, as
// the Supervisor starts a component, and returns it once it runs.
func startHog(t *testing.T, kind string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+kind)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// TestMemoryGuardStopsAGrowingService: a service whose memory grows past
// the ceiling — itself, or a child it started — is killed within a few of
// the guard's intervals of reaching it, with every process of its group:
// none is left behind. The record names the process, the phase, the
// memory seen (at least the ceiling, by no more than the growth of a few
// intervals) and the ceiling, and the load is stopped once.
func TestMemoryGuardStopsAGrowingService(t *testing.T) {
	for _, kind := range []string{"hog", "hog-parent"} {
		t.Run(kind, func(t *testing.T) {
			cmd := startHog(t, kind)
			const limit = 64 << 20
			stops := 0
			g := &memoryGuard{procs: []guardedProcess{{rundata.ServiceComponent, cmd.Process.Pid}}, limit: limit,
				interval: 20 * time.Millisecond, stop: func() { stops++ }}
			g.inPhase(rundata.PhaseFault)
			g.phase = g.currentPhase
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			g.run(ctx)
			rec := g.tripped()
			if rec == nil {
				t.Fatalf("the guard did not trip in %v", time.Since(start))
			}
			if rec.RSSBytes < limit || rec.RSSBytes > limit+48<<20 || rec.LimitBytes != limit || rec.PID != cmd.Process.Pid ||
				rec.Component != rundata.ServiceComponent || rec.Phase != rundata.PhaseFault || stops != 1 {
				t.Errorf("record %+v, stops %d; want the service's %d at ≥ %d bytes (and within 48 MiB of it) in the fault phase, one stop",
					*rec, stops, cmd.Process.Pid, limit)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
					t.Errorf("the service ended with %v, want killed by SIGKILL", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the service still runs 5 s after the guard tripped")
			}
			deadline := time.Now().Add(5 * time.Second)
			for groupAlive(cmd.Process.Pid) {
				if time.Now().After(deadline) {
					t.Fatal("a process of the service's group outlived the guard")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestMemoryGuardLeavesAServiceUnderItsCeiling: a service under the
// ceiling runs on, and the guard returns when the run ends; without a
// process to watch it never trips.
func TestMemoryGuardLeavesAServiceUnderItsCeiling(t *testing.T) {
	cmd := startHog(t, "silent")
	g := &memoryGuard{procs: []guardedProcess{{rundata.ServiceComponent, cmd.Process.Pid}}, limit: 512 << 20, interval: 10 * time.Millisecond,
		stop: func() { t.Error("stopped a service under its ceiling") }}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	g.run(ctx)
	if g.tripped() != nil || !groupAlive(cmd.Process.Pid) {
		t.Errorf("tripped %v, alive %v; want a service under its ceiling left running", g.tripped(), groupAlive(cmd.Process.Pid))
	}
	if r := processRSS(cmd.Process.Pid); r <= 0 || r > 512<<20 {
		t.Errorf("the service's RSS %d, want > 0", r)
	}
	none := &memoryGuard{limit: 1, stop: func() { t.Error("stopped with nothing to watch") }}
	none.run(context.Background())
	if processRSS(1<<30) != 0 {
		t.Error("a process that does not exist has memory")
	}
}

// TestServiceProcesses: the guard watches the service and a fleet's
// instances that run as processes, nothing else.
func TestServiceProcesses(t *testing.T) {
	got := serviceProcesses([]SampleTarget{{Component: "proxy-A", PID: 5}, {Component: rundata.ServiceComponent, PID: 7},
		{Component: rundata.InstanceComponent(2), PID: 9}, {Component: rundata.InstanceComponent(3)}, {Component: "service-x", PID: 11}})
	if want := []guardedProcess{{rundata.ServiceComponent, 7}, {rundata.InstanceComponent(2), 9}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if DefaultMaxServiceMemory() <= 0 {
		t.Error("no default ceiling")
	}
}
