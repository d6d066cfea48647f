//go:build kube

package kube_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
)

// The environment of the runner that TestKilledRunner kills.
const (
	envKillKubeconfig = "BULKHEADLAB_TEST_KILL_KUBECONFIG"
)

// TestKilledRunner kills (SIGKILL) a runner process that created a run
// and kept its Lease renewed: nothing deletes its objects then but Clean,
// once the Lease expired, after which nothing of the run is left.
func TestKilledRunner(t *testing.T) {
	kc, c := newCluster(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunnerToKill$", "-test.v")
	cmd.Env = append(os.Environ(), envKillKubeconfig+"="+kc.Kubeconfig(t, c.Namespace))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	ready := false
	for !ready && lines.Scan() {
		t.Log("runner:", lines.Text())
		ready = strings.HasPrefix(lines.Text(), "RUNNING")
	}
	if !ready {
		t.Fatal("the runner did not start its run")
	}
	ctx := timeout(t, 30*time.Second)
	// the runner kept the 2 s Lease for longer than 2 s
	if got, err := c.Clean(ctx, false); err != nil || len(got) != 0 {
		t.Fatalf("Clean while the runner lives = %v, %v; want nothing", got, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for {
		got, err := c.Clean(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, []string{"killed"}) {
			break
		}
		if len(got) > 0 || ctx.Err() != nil {
			t.Fatalf("Clean = %v (%v); want [killed]", got, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("cleaned %s after the kill", time.Since(killed).Round(time.Millisecond))
	assertNothingLeft(t, c, "killed")
}

// TestRunnerToKill is TestKilledRunner's runner (skipped otherwise):
// through the kubeconfig it is given, it creates a run with a 2 s Lease,
// keeps it alive, says RUNNING after 3 s and waits to be killed.
func TestRunnerToKill(t *testing.T) {
	path := os.Getenv(envKillKubeconfig)
	if path == "" {
		t.Skip("run by TestKilledRunner")
	}
	c, err := kube.Connect(kube.Options{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := testSpec("killed", 2)
	spec.TTL = 2 * time.Second
	run, err := c.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := run.KeepAlive(ctx); err != nil {
			fmt.Println("keepalive:", err)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := run.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	fmt.Println("RUNNING", run.ID)
	select {}
}
