//go:build node && kube

package nodetest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/bulkheadlab/bulkheadlab/internal/nodetest"
)

// restricted is a container of the project's image as the restricted Pod
// Security Standard asks, listening on port 8080 (readiness: /healthz).
func restricted(args ...string) corev1.Container {
	return corev1.Container{
		Name: "app", Image: nodetest.Image, ImagePullPolicy: corev1.PullNever, Args: args,
		Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: new(true), AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// deploy creates the Deployment name of one container c and the Service
// name on port (to the container's 8080).
func deploy(t *testing.T, client kubernetes.Interface, ns, name string, port int32, c corev1.Container) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{c}, AutomountServiceAccountToken: new(false),
					TerminationGracePeriodSeconds: new(int64(2))}},
		},
	}
	ctx := context.Background()
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until Deployment name has ready replicas and returns
// its first ready pod.
func waitReady(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration) corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err == nil {
			for _, p := range pods.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
						return p
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Deployment %s: no ready pod within %s (pods: %s)", name, timeout, podStates(client, ns))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podStates(client kubernetes.Interface, ns string) string {
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		s := p.Name + " " + string(p.Status.Phase) + " " + p.Status.PodIP
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				s += " waiting " + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
			}
			if cs.State.Terminated != nil {
				s += fmt.Sprintf(" terminated %d %s", cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// TestServiceByName runs a dependency stub and the built-in service as
// restricted pods on the real node, the service calling the stub through
// its Service by name (the cluster DNS, kube-proxy's NAT), and reaches
// the service through the API server's pod proxy.
func TestServiceByName(t *testing.T) {
	n := nodetest.Shared(t)
	client := n.Cluster.Client
	ns := n.Cluster.Namespace(t)
	deploy(t, client, ns, "payments", 8080, restricted("dep", "--name", "payments", "--latency", "2ms", "--size", "7", "--listen", ":8080", "--allow-remote"))
	url := fmt.Sprintf("http://payments.%s.svc:8080", ns)
	deploy(t, client, ns, "front", 80, restricted("serve", "--mode", "shared", "--dep-a", url, "--dep-b", url, "--listen", ":8080", "--allow-remote"))
	waitReady(t, client, ns, "payments", 2*time.Minute)
	front := waitReady(t, client, ns, "front", 2*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var body []byte
	var err error
	for range 20 { // the Service's rules may lag its endpoints by a sync
		body, err = client.CoreV1().Pods(ns).ProxyGet("http", front.Name, "8080", "/a", nil).DoRaw(ctx)
		if err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("GET /a of %s (%s) through the API server: %v %s", front.Name, front.Status.PodIP, err, body)
	}
	if len(body) != 7 {
		t.Errorf("GET /a: %q, want the stub's 7 bytes through the Service", body)
	}
	deleteAll(t, client, ns)
}

// deleteAll deletes the namespace's Deployments and Services and waits
// until none of its pods is left.
func deleteAll(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds, _ := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	for _, d := range ds.Items {
		_ = client.AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{})
	}
	ss, _ := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	for _, s := range ss.Items {
		_ = client.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
	}
	pods, _ := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		_ = client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
	}
	for {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pods of %s left: %s", ns, podStates(client, ns))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
