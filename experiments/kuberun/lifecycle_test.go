//go:build kube

package kuberun_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bulkheadlab/bulkheadlab/analysis/render"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/experiments/kuberun"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// userDeployment creates the user's Deployment "checkout" (one container
// "app" with PAY_URL set), whose env a run points at the proxies.
func userDeployment(t *testing.T, c *kube.Cluster) { userDeploymentNamed(t, c, "checkout") }

// userDeploymentNamed creates a Deployment like "checkout" named name (the
// service of another mode).
func userDeploymentNamed(t *testing.T, c *kube.Cluster, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop/checkout:1",
					Env: []corev1.EnvVar{{Name: "PAY_URL", Value: "http://payments:8080"}}}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().Deployments(c.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// userEnv is the env of the user's Deployment's container.
func userEnv(t *testing.T, c *kube.Cluster) map[string]string { return userEnvOf(t, c, "checkout") }

// userEnvOf is the env of Deployment name's container.
func userEnvOf(t *testing.T, c *kube.Cluster, name string) map[string]string {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments(c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

func nothingLeft(t *testing.T, c *kube.Cluster, run string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	left, err := c.Left(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left in the cluster: %v", left)
	}
}

// TestExperimentOnCluster runs a whole experiment against a real API
// server with kwok's pods: the proxies' Deployments (two replicas each)
// and Services, the shards' Indexed Job (three pods) under one Lease;
// every fault switched on both replicas; the load of the three shards
// released together and merged; the verdicts those of the claim (shared
// pool: /b degraded, bulkheads: not); the user's Deployment pointed at the
// proxies and put back; and nothing left in the cluster at the end.
func TestExperimentOnCluster(t *testing.T) {
	kc := kubetest.Shared(t)
	c, err := kube.NewCluster(kc.Config, kc.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.attach(c)
	userDeployment(t, c)
	userDeploymentNamed(t, c, "checkout-bulkhead")
	sp := w.spec(t, "2s")
	p, err := sp.Plan()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := kuberun.Start(ctx, c, p, "lifecycle", testVersion, kuberun.Options{Image: "bulkheadlab:test", Shards: 3, ProxyReplicas: 2,
		Patches: []*kuberun.EnvPatch{{Deployment: "checkout", Env: map[string]string{"PAY_URL": "A", "STOCK_URL": "B"}},
			{Deployment: "checkout-bulkhead", Env: map[string]string{"PAY_URL": "A"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if env := userEnv(t, c); env["PAY_URL"] != e.Run.ProxyURL("A") || env["STOCK_URL"] != e.Run.ProxyURL("B") {
		t.Errorf("the user's Deployment's env %v, want PAY_URL %s and STOCK_URL %s", env, e.Run.ProxyURL("A"), e.Run.ProxyURL("B"))
	}
	if env := userEnvOf(t, c, "checkout-bulkhead"); env["PAY_URL"] != e.Run.ProxyURL("A") {
		t.Errorf("the second patched Deployment's env %v, want PAY_URL %s", env, e.Run.ProxyURL("A"))
	}
	if n := w.started.Load(); n != 2*2+3 {
		t.Errorf("%d containers reached, want 4 proxies and 3 shards", n)
	}

	r := &runner.Runner{Plan: p, Root: t.TempDir(), Version: testVersion, Launcher: e.Launcher, Remote: e.Remote}
	dir, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := render.WriteReport(dir.Path, render.Options{NoImages: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sum.Verdicts {
		if v.Name == "P1" || v.Name == "P2" {
			if v.Outcome == verdict.Invalid || v.Outcome == verdict.Inconclusive {
				t.Skipf("%s %s: the machine could not hold the load (%s)", v.Name, v.Outcome, v.Reason)
			}
			if v.Outcome != verdict.Supported {
				t.Errorf("%s: %s (%s)", v.Name, v.Outcome, v.Reason)
			}
		}
	}
	for _, rs := range sum.Runs {
		if rs.Shards == nil || rs.Shards.Count != 3 {
			t.Errorf("%s: shards %+v, want 3", rs.ID, rs.Shards)
		}
	}
	// Every switch of A's fault reached both replicas, each recorded.
	m := readMeta(t, dir.Path, "slow-shared-r1")
	replicas := map[string]int{}
	for _, ev := range m.Faults {
		if ev.Dependency == "A" && ev.Action == rundata.FaultSet {
			replicas[ev.Replica]++
		}
	}
	if len(replicas) != 2 {
		t.Errorf("fault set on replicas %v, want 2 of them", replicas)
	}
	if m.Proxies["A"] != e.Run.ProxyURL("A") || m.Proxies["B"] != e.Run.ProxyURL("B") {
		t.Errorf("meta.json proxies %v, want the Services %s and %s", m.Proxies, e.Run.ProxyURL("A"), e.Run.ProxyURL("B"))
	}

	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	nothingLeft(t, c, e.Run.Label)
	for _, name := range []string{"checkout", "checkout-bulkhead"} {
		if env := userEnvOf(t, c, name); env["PAY_URL"] != "http://payments:8080" || env["STOCK_URL"] != "" {
			t.Errorf("%s's env after the run: %v, want it as it was", name, env)
		}
	}
}

func readMeta(t *testing.T, dir, id string) rundata.RunMeta {
	t.Helper()
	b, err := os.ReadFile(dir + "/" + rundata.RunsDir + "/" + id + "/" + rundata.MetaFile)
	if err != nil {
		t.Fatal(err)
	}
	var m rundata.RunMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestInterruptedExperiment is Ctrl-C in the middle of an experiment on
// the cluster, as run --kubernetes handles it: the runner stops (its run
// interrupted), Close with a fresh context deletes every object and puts
// the user's Deployment back.
func TestInterruptedExperiment(t *testing.T) {
	kc := kubetest.Shared(t)
	c, err := kube.NewCluster(kc.Config, kc.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.attach(c)
	userDeployment(t, c)
	p, err := w.spec(t, "60s").Plan()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := kuberun.Start(ctx, c, p, "interrupted", testVersion, kuberun.Options{Image: "bulkheadlab:test", Shards: 2,
		Patches: []*kuberun.EnvPatch{&kuberun.EnvPatch{Deployment: "checkout", Env: map[string]string{"PAY_URL": "A"}}}})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(1500*time.Millisecond, cancel)
	r := &runner.Runner{Plan: p, Root: t.TempDir(), Version: testVersion, Launcher: e.Launcher, Remote: e.Remote}
	begin := time.Now()
	if _, err := r.Run(ctx); err == nil {
		t.Fatal("the interrupted experiment ended without an error")
	}
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("the runner took %v to stop after the interrupt", d)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	if err := e.Close(cctx); err != nil {
		t.Fatal(err)
	}
	nothingLeft(t, c, e.Run.Label)
	if env := userEnv(t, c); env["PAY_URL"] != "http://payments:8080" {
		t.Errorf("the user's Deployment's env after the interrupt: %v", env)
	}
}

// TestShardNeverReady: a shard pod that never becomes ready stops the
// experiment before any load, with an error naming it, and leaves nothing.
func TestShardNeverReady(t *testing.T) {
	kc := kubetest.Shared(t)
	c, err := kube.NewCluster(kc.Config, kc.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	kc.NeverReady(t, func(p *corev1.Pod) bool {
		return p.Namespace == c.Namespace && p.Labels[kubetest.CompletionIndex] == "1"
	})
	w := newWorld(t)
	w.attach(c)
	p, err := w.spec(t, "1s").Plan()
	if err != nil {
		t.Fatal(err)
	}
	_, err = kuberun.Start(context.Background(), c, p, "stuck", testVersion, kuberun.Options{Image: "bulkheadlab:test", Shards: 3,
		ReadyTimeout: 2 * time.Second})
	var nr *kube.NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("err = %v, want a NotReadyError", err)
	}
	if st, ok := nr.Shard(1); !ok || !strings.Contains(err.Error(), "shard 1") {
		t.Errorf("shard 1 not named: %v (%+v)", err, st)
	}
	if _, ok := nr.Shard(0); ok {
		t.Errorf("shard 0 named as not ready: %v", err)
	}
	if n := w.started.Load(); n != 0 {
		t.Errorf("%d containers reached before every pod was ready", n)
	}
	nothingLeft(t, c, kube.RunLabel("stuck"))
}
