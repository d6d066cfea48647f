//go:build kube

package kube_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
)

// The package's tests share one API server (kubetest.Shared), each in a
// namespace of its own.
func TestMain(m *testing.M) { kubetest.Main(m) }

// newCluster returns the shared test cluster and a kube.Cluster on a new
// namespace of it.
func newCluster(t *testing.T) (*kubetest.Cluster, *kube.Cluster) {
	t.Helper()
	kc := kubetest.Shared(t)
	c, err := kube.NewCluster(kc.Config, kc.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	c.Identity = "test-runner"
	return kc, c
}

func testSpec(id string, shards int) kube.Spec {
	return kube.Spec{
		RunID:      id,
		Image:      "bulkheadlab:test",
		PullPolicy: corev1.PullIfNotPresent,
		Proxies: []kube.Proxy{
			{Dependency: "A", Replicas: 2, Args: []string{"proxy", "--listen", ":8080", "--name", "A"}},
			{Dependency: "pay_ments", Args: []string{"proxy", "--listen", ":8080", "--name", "pay_ments"}},
		},
		Shards:    shards,
		ShardArgs: []string{"shard", "--listen", ":7070"},
		TTL:       30 * time.Second,
		Labels:    map[string]string{"team": "chaos"},
		Token:     strings.Repeat("ab", 32),
		// the shards' allow-list, in the run's Secret
		ShardTargets: []string{"http://web.chaos.svc:8080"},
		ControlFrom:  []string{"10.0.0.1/32"},
	}
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// assertNothingLeft lists every kind the package creates by the run's
// label (and the run's Lease) and fails on any.
func assertNothingLeft(t *testing.T, c *kube.Cluster, run string) {
	t.Helper()
	ctx := timeout(t, 10*time.Second)
	sel := metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + run}
	var left []string
	pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		left = append(left, "pod/"+o.Name)
	}
	svcs, err := c.Client.CoreV1().Services(c.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range svcs.Items {
		left = append(left, "service/"+o.Name)
	}
	ds, err := c.Client.AppsV1().Deployments(c.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ds.Items {
		left = append(left, "deployment/"+o.Name)
	}
	jobs, err := c.Client.BatchV1().Jobs(c.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range jobs.Items {
		left = append(left, "job/"+o.Name)
	}
	nps, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range nps.Items {
		left = append(left, "networkpolicy/"+o.Name)
	}
	leases, err := c.Client.CoordinationV1().Leases(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range leases.Items {
		left = append(left, "lease/"+o.Name)
	}
	if len(left) > 0 {
		t.Errorf("left in namespace %s after run %s: %s", c.Namespace, run, strings.Join(left, ", "))
	}
}

func TestCreateReadyDelete(t *testing.T) {
	_, c := newCluster(t)
	ctx := timeout(t, 30*time.Second)
	start := time.Now()
	sp := testSpec("run-1", 3)
	sp.ShardCPU = resource.MustParse("1500m")
	run, err := c.Create(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Delete(context.Background()) })

	lease, err := c.Client.CoordinationV1().Leases(c.Namespace).Get(ctx, run.Lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity != "test-runner" || *lease.Spec.LeaseDurationSeconds != 30 {
		t.Errorf("lease holder %q, duration %d; want test-runner, 30", *lease.Spec.HolderIdentity, *lease.Spec.LeaseDurationSeconds)
	}
	owned := func(kind, name string, m metav1.ObjectMeta) {
		t.Helper()
		if m.Labels[kube.LabelRun] != "run-1" || m.Labels[kube.LabelManagedBy] != "bulkheadlab" || m.Labels["team"] != "chaos" {
			t.Errorf("%s %s labels %v", kind, name, m.Labels)
		}
		if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != lease.UID || m.OwnerReferences[0].Kind != "Lease" {
			t.Errorf("%s %s owner references %+v; want the Lease %s", kind, name, m.OwnerReferences, lease.UID)
		}
	}
	sel := metav1.ListOptions{LabelSelector: kube.LabelRun + "=run-1"}
	svcs, _ := c.Client.CoreV1().Services(c.Namespace).List(ctx, sel)
	ds, _ := c.Client.AppsV1().Deployments(c.Namespace).List(ctx, sel)
	jobs, _ := c.Client.BatchV1().Jobs(c.Namespace).List(ctx, sel)
	if len(svcs.Items) != 2 || len(ds.Items) != 2 || len(jobs.Items) != 1 {
		t.Fatalf("%d services, %d deployments, %d jobs; want 2, 2, 1", len(svcs.Items), len(ds.Items), len(jobs.Items))
	}
	for _, o := range svcs.Items {
		owned("Service", o.Name, o.ObjectMeta)
		if o.Spec.Ports[0].Name != "data" || o.Spec.Ports[0].Port != 8080 {
			t.Errorf("service %s ports %+v", o.Name, o.Spec.Ports)
		}
	}
	for _, o := range ds.Items {
		owned("Deployment", o.Name, o.ObjectMeta)
	}
	j := jobs.Items[0]
	owned("Job", j.Name, j.ObjectMeta)
	if *j.Spec.Completions != 3 || *j.Spec.Parallelism != 3 || *j.Spec.BackoffLimit != 0 ||
		string(*j.Spec.CompletionMode) != "Indexed" || j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		j.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("job spec %+v", j.Spec)
	}
	// The restricted Pod Security Standard's container, as the API server
	// stored it; a shard's CPU request.
	for _, ps := range []corev1.PodSpec{j.Spec.Template.Spec, ds.Items[0].Spec.Template.Spec} {
		sc := ps.Containers[0].SecurityContext
		if sc == nil || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
			len(sc.Capabilities.Drop) != 1 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s security context %+v", ps.Containers[0].Name, sc)
		}
	}
	if q := j.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "1500m" {
		t.Errorf("shard CPU request %q, want 1500m", q.String())
	}

	if err := run.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("ready %s after Create", time.Since(start).Round(time.Millisecond))
	if _, err := c.Create(ctx, testSpec("run-1", 1)); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second Create of run-1 = %v; want already exists", err)
	}
	if err := run.WaitReady(ctx); err != nil {
		t.Fatalf("the run after a second Create of its id failed: %v", err)
	}
	shards, err := run.ShardPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 3 {
		t.Fatalf("%d shard pods; want 3", len(shards))
	}
	for i, p := range shards {
		if p.Labels[kube.CompletionIndex] != strconv.Itoa(i) {
			t.Errorf("shard pod %d (%s) has index %q", i, p.Name, p.Labels[kube.CompletionIndex])
		}
		if p.Status.PodIP == "" {
			t.Errorf("shard pod %s has no IP (kwok gives one)", p.Name)
		}
	}
	for dep, n := range map[string]int{"A": 2, "pay_ments": 1} {
		pods, err := run.ProxyPods(ctx, dep)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != n {
			t.Errorf("%d proxy pods of %s; want %d", len(pods), dep, n)
		}
	}
	want := "http://" + run.ProxyService("pay_ments") + "." + c.Namespace + ".svc:8080"
	if got := run.ProxyURL("pay_ments"); got != want || !strings.Contains(got, "pay-ments") {
		t.Errorf("ProxyURL = %q; want %q (DNS-safe)", got, want)
	}
	if err := run.Renew(ctx); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted in %s", time.Since(start).Round(time.Millisecond))
	assertNothingLeft(t, c, "run-1")
	if err := run.Delete(ctx); err != nil {
		t.Errorf("a second Delete: %v", err)
	}
}

func TestShardNeverReady(t *testing.T) {
	kc, c := newCluster(t)
	kc.NeverReady(t, func(p *corev1.Pod) bool {
		return p.Namespace == c.Namespace && p.Annotations[kube.CompletionIndex] == "2"
	})
	ctx := timeout(t, 30*time.Second)
	spec := testSpec("stuck", 3)
	spec.Proxies = spec.Proxies[:1]
	run, err := c.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = run.WaitReady(wctx)
	var nr *kube.NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("WaitReady = %v; want a *kube.NotReadyError", err)
	}
	t.Log(err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error does not wrap the deadline: %v", err)
	}
	s, ok := nr.Shard(2)
	if !ok || len(nr.Pods) != 1 || s.Pod == "" || s.Phase != corev1.PodRunning {
		t.Fatalf("not ready: %+v; want only shard 2, Running", nr.Pods)
	}
	for _, want := range []string{"shard 2 (pod " + s.Pod + ")", "Ready=False (ContainersNotReady", "container shard running, not ready"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, c, "stuck")
}

func TestCreateFailureDeletesWhatItCreated(t *testing.T) {
	_, c := newCluster(t)
	ctx := timeout(t, 20*time.Second)
	spec := testSpec("half", 2)
	spec.ShardArgs = nil
	spec.Proxies[1].Args = []string{"proxy"}
	// a negative CPU request fails the shards' Job, after the Lease, the
	// Secret, the NetworkPolicy and every proxy's Service and Deployment
	// were created
	spec.ShardCPU = resource.MustParse("-1")
	if _, err := c.Create(ctx, spec); err == nil || !strings.Contains(err.Error(), "shards' Job") {
		t.Fatalf("Create = %v; want the Job's error", err)
	}
	assertNothingLeft(t, c, "half")
	spec.ShardCPU = resource.Quantity{}
	spec.Proxies = append(spec.Proxies, kube.Proxy{Dependency: "Pay-Ments"})
	run, err := c.Create(ctx, spec)
	if err != nil {
		t.Fatalf("dependencies whose names sanitize alike: %v", err)
	}
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestClean(t *testing.T) {
	_, c := newCluster(t)
	ctx := timeout(t, 30*time.Second)
	live, err := c.Create(ctx, testSpec("live", 1))
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec("short", 1)
	spec.TTL = time.Second
	if _, err := c.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// an object of a run whose Lease is gone
	orphan := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{kube.LabelRun: "gone", kube.LabelManagedBy: kube.ManagedBy}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := c.Client.CoreV1().Services(c.Namespace).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Clean(ctx, false); err != nil || !slices.Equal(got, []string{"gone"}) {
		t.Fatalf("Clean = %v, %v; want [gone] (short's lease not expired yet)", got, err)
	}
	now := time.Now()
	held, err := c.HeldRuns(ctx, now)
	if err != nil || len(held) != 2 || held[0].Run != "live" || held[1].Run != "short" {
		t.Fatalf("HeldRuns = %+v, %v; want live and short", held, err)
	}
	for _, h := range held {
		if h.Holder != c.Identity || !h.Expires.After(now) || h.Expires.After(now.Add(10*time.Minute)) {
			t.Errorf("held run %+v: want held by %s, expiring within its TTL", h, c.Identity)
		}
	}
	assertNothingLeftOf(t, c, "gone")
	time.Sleep(1100 * time.Millisecond) // the Lease's 1 s
	if got, err := c.Clean(ctx, false); err != nil || !slices.Equal(got, []string{"short"}) {
		t.Fatalf("Clean = %v, %v; want [short]", got, err)
	}
	assertNothingLeftOf(t, c, "short")
	if err := live.WaitReady(ctx); err != nil {
		t.Errorf("the live run after Clean: %v", err)
	}
	if got, err := c.Clean(ctx, true); err != nil || !slices.Equal(got, []string{"live"}) {
		t.Fatalf("Clean(all) = %v, %v; want [live]", got, err)
	}
	assertNothingLeft(t, c, "live")
}

// assertNothingLeftOf checks run's objects only (other runs may live).
func assertNothingLeftOf(t *testing.T, c *kube.Cluster, run string) {
	t.Helper()
	ctx := timeout(t, 10*time.Second)
	sel := metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + run}
	pods, _ := c.Client.CoreV1().Pods(c.Namespace).List(ctx, sel)
	svcs, _ := c.Client.CoreV1().Services(c.Namespace).List(ctx, sel)
	ds, _ := c.Client.AppsV1().Deployments(c.Namespace).List(ctx, sel)
	jobs, _ := c.Client.BatchV1().Jobs(c.Namespace).List(ctx, sel)
	leases, _ := c.Client.CoordinationV1().Leases(c.Namespace).List(ctx, sel)
	if n := len(pods.Items) + len(svcs.Items) + len(ds.Items) + len(jobs.Items) + len(leases.Items); n > 0 {
		t.Errorf("run %s: %d objects left", run, n)
	}
}

// userDeployment creates the user's Deployment "web" with env A=1 and
// waits for its rollout.
func userDeployment(t *testing.T, c *kube.Cluster) *appsv1.Deployment {
	t.Helper()
	ctx := timeout(t, 10*time.Second)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "web:1",
					Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "KEEP", Value: "k"}},
				}}},
			},
		},
	}
	d, err := c.Client.AppsV1().Deployments(c.Namespace).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func envOf(t *testing.T, c *kube.Cluster, name string) (map[string]string, string) {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments(c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env, d.Annotations[kube.AnnotationEnvRestore]
}

func TestPatchEnv(t *testing.T) {
	_, c := newCluster(t)
	ctx := timeout(t, 30*time.Second)
	userDeployment(t, c)
	run, err := c.Create(ctx, testSpec("env", 0))
	if err != nil {
		t.Fatal(err)
	}
	restore, err := run.PatchEnv(ctx, "web", "", map[string]string{"A": run.ProxyURL("A"), "B": run.ProxyURL("pay_ments")})
	if err != nil {
		t.Fatal(err)
	}
	env, note := envOf(t, c, "web")
	if env["A"] != run.ProxyURL("A") || env["B"] != run.ProxyURL("pay_ments") || env["KEEP"] != "k" || !strings.Contains(note, `"run":"env"`) {
		t.Fatalf("patched env %v, annotation %q", env, note)
	}
	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	env, note = envOf(t, c, "web")
	if !maps(env, map[string]string{"A": "1", "KEEP": "k"}) || note != "" {
		t.Fatalf("restored env %v, annotation %q; want A=1 KEEP=k, none", env, note)
	}

	// a killed runner's change: Clean restores it with the run
	if _, err := run.PatchEnv(ctx, "web", "web", map[string]string{"A": "x"}); err != nil {
		t.Fatal(err)
	}
	other, err := c.Create(ctx, testSpec("other", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.PatchEnv(ctx, "web", "", map[string]string{"A": "y"}); err == nil || !strings.Contains(err.Error(), "already changed") {
		t.Errorf("a second run's PatchEnv = %v; want refused", err)
	}
	if err := c.Client.CoordinationV1().Leases(c.Namespace).Delete(ctx, run.Lease, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Clean(ctx, false); err != nil || !slices.Equal(got, []string{"env"}) {
		t.Fatalf("Clean = %v, %v; want [env]", got, err)
	}
	env, note = envOf(t, c, "web")
	if !maps(env, map[string]string{"A": "1", "KEEP": "k"}) || note != "" {
		t.Fatalf("env after Clean %v, annotation %q; want A=1 KEEP=k, none", env, note)
	}
	if err := other.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestPodProxy(t *testing.T) {
	_, c := newCluster(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shard-0", Namespace: c.Namespace, UID: types.UID("u")}}
	base, rt, err := c.PodProxy(pod, 7070)
	if err != nil {
		t.Fatal(err)
	}
	want := "/api/v1/namespaces/" + c.Namespace + "/pods/shard-0:7070/proxy"
	if !strings.HasSuffix(base, want) || !strings.HasPrefix(base, c.Config.Host) || rt == nil {
		t.Errorf("PodProxy = %q, %v; want %s%s", base, rt, c.Config.Host, want)
	}
	c.PodURL = func(p *corev1.Pod, port int32) (string, http.RoundTripper, error) {
		return "http://127.0.0.1:1/" + p.Name + "/" + strconv.Itoa(int(port)), nil, nil
	}
	if base, _, _ := c.PodProxy(pod, 7070); base != "http://127.0.0.1:1/shard-0/7070" {
		t.Errorf("PodProxy with PodURL = %q", base)
	}
}
