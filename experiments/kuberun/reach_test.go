//go:build kube

package kuberun_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bulkheadlab/bulkheadlab/experiments/kuberun"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
)

// closedAddr is a loopback address where nothing listens (a moment ago
// something did).
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestUnreachablePod: once every pod is ready, the runner calls every
// shard and every proxy's control port through the API server; a pod it
// cannot reach stops the experiment in seconds, before any load, with the
// pod, the address dialled and why in words — the API server's message,
// not its JSON — and leaves nothing. The last hop is a loopback address
// where nothing listens, or the API server's own answer for a pod proxy
// it cannot serve (a pod of that name does not exist: nothing is dialled).
func TestUnreachablePod(t *testing.T) {
	kc := kubetest.Shared(t)
	for _, tt := range []struct {
		name  string
		which func(*corev1.Pod) bool
		hop   func(t *testing.T, c *kube.Cluster, pod *corev1.Pod, port int32) (string, http.RoundTripper, error)
		want  []string
	}{
		{"last hop refused",
			func(p *corev1.Pod) bool { return p.Labels[kubetest.CompletionIndex] == "1" },
			func(t *testing.T, _ *kube.Cluster, _ *corev1.Pod, _ int32) (string, http.RoundTripper, error) {
				return "http://" + closedAddr(t), http.DefaultTransport, nil
			},
			[]string{"(shard 1) cannot be reached at ", ":7070", "connection refused", "no load was sent"}},
		{"API server's status",
			func(p *corev1.Pod) bool { return strings.HasPrefix(p.Labels[kube.LabelDependency], "a-") }, // A, hashed
			func(t *testing.T, c *kube.Cluster, pod *corev1.Pod, port int32) (string, http.RoundTripper, error) {
				direct, err := kube.NewCluster(c.Config, c.Namespace)
				if err != nil {
					t.Fatal(err)
				}
				gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "-gone", Namespace: pod.Namespace}}
				return direct.PodProxy(gone, port)
			},
			[]string{"(the proxy of A, control port) cannot be reached at ", ":8081", "the API server answered 404", "not found"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kube.NewCluster(kc.Config, kc.Namespace(t))
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld(t)
			w.kc = c // reads the pods' Secrets; the last hop is this test's own
			var named []string
			c.PodURL = func(pod *corev1.Pod, port int32) (string, http.RoundTripper, error) {
				if tt.which(pod) {
					named = append(named, pod.Name)
					return tt.hop(t, c, pod, port)
				}
				return w.podURL(pod, port)
			}
			p, err := w.spec(t, "1s").Plan()
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			_, err = kuberun.Start(context.Background(), c, p, "unreachable", testVersion, kuberun.Options{Image: "bulkheadlab:test", Shards: 3, ReadyTimeout: 30 * time.Second})
			var ue *kuberun.UnreachableError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want an UnreachableError", err)
			}
			if len(named) != 1 || !strings.Contains(err.Error(), "pod "+named[0]+" ") {
				t.Errorf("error %q does not name the unreachable pod %v", err, named)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), `"kind"`) {
				t.Errorf("error %q quotes the API server's JSON", err)
			}
			if d := time.Since(began); d > 20*time.Second {
				t.Errorf("took %s to stop", d)
			}
			nothingLeft(t, c, kube.RunLabel("unreachable"))
		})
	}
}
