//go:build kube

package kuberun_test

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

	"github.com/bulkheadlab/bulkheadlab/experiments/kuberun"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
)

// envKillKubeconfig is the kubeconfig of the runner TestKilledExperiment
// kills.
const envKillKubeconfig = "BULKHEADLAB_TEST_KUBERUN_KILL"

// TestKilledExperiment kills (SIGKILL) a runner in the middle of an
// experiment on the cluster, its user's Deployment pointed at the proxies:
// the next clean (every run does one before it starts) deletes the run
// once its lease expired, puts the Deployment's env back, and leaves
// nothing in the cluster.
func TestKilledExperiment(t *testing.T) {
	kc := kubetest.Shared(t)
	c, err := kube.NewCluster(kc.Config, kc.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	userDeployment(t, c)
	cmd := exec.Command(os.Args[0], "-test.run=^TestExperimentToKill$", "-test.v")
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
	run := ""
	for run == "" && lines.Scan() {
		t.Log("runner:", lines.Text())
		if label, ok := strings.CutPrefix(lines.Text(), "RUNNING "); ok {
			run = label
		}
	}
	if run == "" {
		t.Fatal("the runner did not start its experiment")
	}
	time.Sleep(time.Second) // into the first run's load
	if env := userEnv(t, c); !strings.Contains(env["PAY_URL"], ".svc:") {
		t.Fatalf("before the kill the user's Deployment has PAY_URL %q, want the proxy's Service", env["PAY_URL"])
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		got, err := c.Clean(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(got, run) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run %s was never cleaned (Clean = %v)", run, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("cleaned %s after the kill", time.Since(killed).Round(time.Millisecond))
	nothingLeft(t, c, run)
	if env := userEnv(t, c); env["PAY_URL"] != "http://payments:8080" || env["STOCK_URL"] != "" {
		t.Errorf("the user's Deployment's env after the clean: %v, want it as it was", env)
	}
}

// TestExperimentToKill is TestKilledExperiment's runner (skipped
// otherwise): it starts an experiment with a 2 s lease whose fault phase
// lasts a minute, says RUNNING and its run's label, and runs until killed.
func TestExperimentToKill(t *testing.T) {
	path := os.Getenv(envKillKubeconfig)
	if path == "" {
		t.Skip("run by TestKilledExperiment")
	}
	c, err := kube.Connect(kube.Options{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.attach(c)
	p, err := w.spec(t, "60s").Plan()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := kuberun.Start(ctx, c, p, "killed", testVersion, kuberun.Options{Image: "bulkheadlab:test", Shards: 2, TTL: 2 * time.Second,
		Patches: []*kuberun.EnvPatch{&kuberun.EnvPatch{Deployment: "checkout", Env: map[string]string{"PAY_URL": "A", "STOCK_URL": "B"}}}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RUNNING %s\n", e.Run.Label)
	r := &runner.Runner{Plan: p, Root: t.TempDir(), Version: testVersion, Launcher: e.Launcher, Remote: e.Remote}
	_, _ = r.Run(ctx)
	t.Fatal("the experiment ended before the kill")
}
