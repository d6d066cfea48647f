//go:build kube

package kubetest_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// waitFor polls cond until it holds, or fails after 15 s.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestController: a Deployment's pods and an Indexed Job's pods are made
// by the stand-in controller, run by kwok on the fake nodes (Ready, with
// an IP), and their readiness reaches the Deployment's and the Job's
// status; a pod labelled NeverReadyLabel runs but never becomes Ready.
func TestController(t *testing.T) {
	c := kubetest.Shared(t)
	t.Logf("cluster started in %s", c.StartTime.Round(time.Millisecond))
	ns := c.Namespace(t)
	c.NeverReady(t, func(p *corev1.Pod) bool {
		return p.Namespace == ns && p.Annotations[kubetest.CompletionIndex] == "1"
	})
	ctx := context.Background()
	labels := map[string]string{"app": "x"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := batchv1.IndexedCompletion
	jt := *tmpl.DeepCopy()
	jt.Labels = map[string]string{"app": "j"}
	jt.Spec.RestartPolicy = corev1.RestartPolicyNever
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j"},
		Spec:       batchv1.JobSpec{CompletionMode: &mode, Completions: new(int32(3)), Parallelism: new(int32(3)), Template: jt},
	}
	if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, "the Deployment's 2 ready replicas", func() (bool, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2 && d.Status.ObservedGeneration == d.Generation, err
	})
	waitFor(t, "the Job's 2 ready pods", func() (bool, error) {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "j", metav1.GetOptions{})
		return err == nil && j.Status.Ready != nil && *j.Status.Ready == 2 && j.Status.Active == 3, err
	})
	t.Logf("ready in %s", time.Since(start).Round(time.Millisecond))
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=j"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d Job pods; want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		i := p.Labels[kubetest.CompletionIndex]
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].Value != i || p.Annotations[kubetest.CompletionIndex] != i {
			t.Errorf("pod %s: index label %q, annotation %q, env %v", p.Name, i, p.Annotations[kubetest.CompletionIndex], env)
		}
		if p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: phase %s, IP %q; want Running with an IP", p.Name, p.Status.Phase, p.Status.PodIP)
		}
		if want := i != "1"; podReady(&p) != want {
			t.Errorf("pod %s (index %s): ready %v; want %v", p.Name, i, podReady(&p), want)
		}
		if i == "1" && p.Labels[kubetest.NeverReadyLabel] != "true" {
			t.Errorf("pod %s: labels %v; want %s", p.Name, p.Labels, kubetest.NeverReadyLabel)
		}
	}

	// a changed template replaces the Deployment's pods
	d, err = c.Client.AppsV1().Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	if _, err := c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rollout", func() (bool, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
		if err != nil || d.Status.ObservedGeneration != d.Generation || d.Status.ReadyReplicas != 2 {
			return false, err
		}
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if len(p.Spec.Containers[0].Env) != 1 {
				return false, nil
			}
		}
		return len(pods.Items) == 2, nil
	})

	// deleted pods go away (kwok's pod-delete Stage)
	if err := c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=j"}); err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	if err := c.Client.BatchV1().Jobs(ns).Delete(ctx, "j", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.AppsV1().Deployments(ns).Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no pods", func() (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
}

// TestNeverReadyByLabel: a bare pod that carries NeverReadyLabel itself
// (no controller involved) runs, with an IP, but is never Ready.
func TestNeverReadyByLabel(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	for i, label := range []bool{false, true} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(i)},
			Spec:       corev1.PodSpec{NodeName: c.Nodes[0], Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}
		if label {
			p.Labels = map[string]string{kubetest.NeverReadyLabel: "true"}
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both pods Running", func() (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				n++
			}
		}
		return n == 2, nil
	})
	time.Sleep(300 * time.Millisecond) // time for a wrong Ready
	for i, want := range []bool{true, false} {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "p"+strconv.Itoa(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if podReady(p) != want {
			t.Errorf("pod %s ready %v; want %v (conditions %+v)", p.Name, podReady(p), want, p.Status.Conditions)
		}
	}
	if err := c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestKubeconfig: the written kubeconfig reaches the API server with the
// namespace it was given.
func TestKubeconfig(t *testing.T) {
	c := kubetest.Shared(t)
	path := c.Kubeconfig(t, "some-ns")
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil)
	ns, _, err := cc.Namespace()
	if err != nil || ns != "some-ns" {
		t.Fatalf("namespace %q, %v", ns, err)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSuffix(cfg.Host, "/") != strings.TrimSuffix(c.Config.Host, "/") {
		t.Fatalf("host %s; want %s", cfg.Host, c.Config.Host)
	}
}

// TestCacheDirMatchesScript: the cache key here is the script's.
func TestCacheDirMatchesScript(t *testing.T) {
	b, err := os.ReadFile("../../scripts/kube-bins.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"K8S_VERSION=" + kubetest.KubernetesVersion, "ETCD_VERSION=" + kubetest.EtcdVersion, "KWOK_VERSION=" + kubetest.KwokVersion} {
		if !strings.Contains(string(b), v) {
			t.Errorf("scripts/kube-bins.sh does not set %s", v)
		}
	}
}
