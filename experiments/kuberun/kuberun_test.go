//go:build kube

package kuberun_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bulkheadlab/bulkheadlab/experiments/kuberun"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
	"github.com/bulkheadlab/bulkheadlab/service"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// testVersion is the runner's and every shard's version in these tests.
const testVersion = "kuberun-test"

// world is what a cluster would run, on loopback: the dependencies, the
// user's service in two layouts, a round-robin "Service" in front of each
// dependency's proxy pods, and a container runtime that runs a pod's
// container (a fault proxy, a shard) in this process when the runner
// first reaches it (the API server cannot proxy to loopback pod IPs, so
// kube.Cluster.PodURL points at these).
type world struct {
	t        testing.TB
	deps     map[string]string // dependency → its URL
	services map[string]*rr    // dependency → the proxies' Service
	svc      map[string]string // layout → the user's service base URL

	kc *kube.Cluster // reads the pods' Secrets, as a kubelet does

	mu      sync.Mutex
	pods    map[string]string // pod name → its control URL
	started atomic.Int64      // containers started
}

// attach makes c's pods run in w.
func (w *world) attach(c *kube.Cluster) {
	w.kc = c
	c.PodURL = w.podURL
}

// env is the value of the container's variable name, from its Secret
// when it refers to one (as a kubelet resolves it).
func (w *world) env(c corev1.Container, name string) (string, error) {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil {
			return e.Value, nil
		}
		s, err := w.kc.Client.CoreV1().Secrets(w.kc.Namespace).Get(context.Background(), ref.SecretKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(s.Data[ref.SecretKeyRef.Key]), nil
	}
	return "", nil
}

func newWorld(t testing.TB) *world {
	w := &world{t: t, deps: map[string]string{}, services: map[string]*rr{}, svc: map[string]string{}, pods: map[string]string{}}
	for _, d := range []string{"A", "B"} {
		dep, err := service.NewDep(service.DepConfig{Name: d, Latency: 5 * time.Millisecond, Seed: 1, Size: 16})
		if err != nil {
			t.Fatal(err)
		}
		w.deps[d] = "http://" + serveOn(t, dep.Serve)
		w.services[d] = &rr{}
		s := httptest.NewServer(w.services[d])
		t.Cleanup(s.Close)
		w.services[d].url = s.URL
	}
	for _, mode := range []service.Mode{service.ModeShared, service.ModeBulkhead} {
		svc, err := service.New(service.Config{
			Layout:  service.LayoutConfig{Mode: mode, PoolSize: 6, Queue: 2, MaxWait: 250 * time.Millisecond},
			Timeout: 250 * time.Millisecond, Endpoints: service.TwoEndpoints(w.services["A"].url, w.services["B"].url),
		})
		if err != nil {
			t.Fatal(err)
		}
		w.svc[string(mode)] = "http://" + serveOn(t, svc.Serve)
	}
	return w
}

// spec is the user's external spec: the dependencies as the proxy pods
// reach them, the two layouts as the shard pods reach them.
func (w *world) spec(t testing.TB, fault string) *spec.Spec {
	text := fmt.Sprintf(`name: kube-lifecycle
seed: 3
external:
  upstreams: {A: "%s", B: "%s"}
  proxies:   {A: "127.0.0.1:1", B: "127.0.0.1:2"}
modes:
  - name: shared
    external: {targets: {a: "%[3]s/a", b: "%[3]s/b"}, canary: "%[3]s/healthz"}
  - name: bulkhead
    external: {targets: {a: "%[4]s/a", b: "%[4]s/b"}, canary: "%[4]s/healthz"}
service: {timeout: 250ms, max_wait: 250ms}
load: {rates: {a: 40, b: 40}}
phases: {warmup: 300ms, baseline: 1s, fault: %s, recovery: 1s}
conditions: [slow]
validity: {retries: 2}
# a 2 s fault sends /b 80 calls: one lost to a stall of the loaded machine is 1.25 %%,
# a bulkhead that does not isolate loses most of them
expectations: {check: [P1, P2], p2_max_error_rate: 0.05}
`, w.deps["A"], w.deps["B"], w.svc["shared"], w.svc["bulkhead"], fault)
	sp, err := spec.Parse("kube-lifecycle.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// podURL runs pod's container on loopback the first time the runner
// reaches it, and returns where.
func (w *world) podURL(pod *corev1.Pod, port int32) (string, http.RoundTripper, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if u, ok := w.pods[pod.Name]; ok {
		return u, http.DefaultTransport, nil
	}
	c := pod.Spec.Containers[0]
	token, err := w.env(c, kube.EnvToken)
	if err != nil || token == "" {
		return "", nil, fmt.Errorf("pod %s: no token from its Secret: %v", pod.Name, err)
	}
	var u string
	switch {
	case len(c.Args) > 0 && c.Args[0] == "proxy" && port == kube.ControlPort:
		u, err = w.runProxy(arg(c.Args, "--upstream"), arg(c.Args, "--name"), token)
	case len(c.Args) > 0 && c.Args[0] == "shard" && port == kube.ShardPort:
		idx := -1
		for _, e := range c.Env {
			if e.Name == "JOB_COMPLETION_INDEX" {
				idx, _ = strconv.Atoi(e.Value)
			}
		}
		if v, ok := pod.Labels[kubetest.CompletionIndex]; ok {
			idx, _ = strconv.Atoi(v)
		}
		var targets []string
		if v, verr := w.env(c, kube.EnvShardTargets); verr != nil {
			err = verr
		} else if targets, err = shards.ParseTargets(v); err == nil && len(targets) == 0 {
			err = fmt.Errorf("pod %s: no targets in its Secret", pod.Name)
		}
		if err != nil {
			return "", nil, err
		}
		a := &shards.Agent{Version: testVersion, Index: idx, Token: token, Targets: targets}
		s := httptest.NewServer(a.Handler())
		w.t.Cleanup(s.Close)
		u = s.URL
	default:
		err = fmt.Errorf("pod %s: nothing listens on port %d (args %v)", pod.Name, port, c.Args)
	}
	if err != nil {
		return "", nil, err
	}
	w.started.Add(1)
	w.pods[pod.Name] = u
	return u, http.DefaultTransport, nil
}

// runProxy runs a fault proxy to upstream and puts its data plane behind
// dep's Service; it returns its control URL.
func (w *world) runProxy(upstream, dep, token string) (string, error) {
	up, err := url.Parse(upstream)
	if err != nil {
		return "", err
	}
	quiet := log.New(io.Discard, "", 0)
	p, err := faultproxy.New(faultproxy.Config{Upstream: up, Seed: 1, ErrorLog: quiet, Token: token})
	if err != nil {
		return "", err
	}
	srv, err := faultproxy.Listen(p, "127.0.0.1:0", "127.0.0.1:0", quiet)
	if err != nil {
		return "", err
	}
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		p.Close()
	})
	w.services[dep].add("http://" + srv.Addr())
	return "http://" + srv.ControlAddr(), nil
}

func arg(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// rr is a Service: requests go round-robin to its endpoints (the proxy
// pods), 503 before there is one.
type rr struct {
	url  string
	mu   sync.Mutex
	ends []*httputil.ReverseProxy
	next int
}

func (s *rr) add(target string) {
	u, _ := url.Parse(target)
	s.mu.Lock()
	s.ends = append(s.ends, httputil.NewSingleHostReverseProxy(u))
	s.mu.Unlock()
}

func (s *rr) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if len(s.ends) == 0 {
		s.mu.Unlock()
		http.Error(w, "no endpoints", http.StatusServiceUnavailable)
		return
	}
	p := s.ends[s.next%len(s.ends)]
	s.next++
	s.mu.Unlock()
	p.ServeHTTP(w, r)
}

// serveOn serves fn on a new loopback listener until the test ends.
func serveOn(t testing.TB, fn func(context.Context, net.Listener) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fn(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func TestParseEnvPatch(t *testing.T) {
	p, err := kuberun.ParseEnvPatch("checkout/app:PAY_URL=A,STOCK_URL=B")
	if err != nil || p.Deployment != "checkout" || p.Container != "app" || p.Env["PAY_URL"] != "A" || p.Env["STOCK_URL"] != "B" {
		t.Errorf("got %+v, %v", p, err)
	}
	for _, bad := range []string{"", "checkout", "checkout:", ":A=B", "checkout:PAY_URL", "checkout:=A", "checkout:A=B,"} {
		if _, err := kuberun.ParseEnvPatch(bad); err == nil || !strings.Contains(err.Error(), "DEPENDENCY") && !strings.Contains(err.Error(), "is not") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}
