//go:build node && kube

package nodetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/nodetest"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// shopSpec is the Kubernetes example of docs/clusters.md (the namespace shop, the
// dependencies payments and stock, a Deployment of the service per mode,
// expectations victim browse and culprit checkout, two payments proxies),
// with the built-in service's rules, short phases, one condition and two
// shard pods, to fit two cores.
const shopSpec = `name: shop
seed: 5
endpoints: [{name: checkout, dependency: payments}, {name: browse, dependency: stock}]
external:
  upstreams: {payments: "http://payments.shop.svc:8080", stock: "http://stock.shop.svc:8080"}
  kubernetes: {replicas: {payments: 2}, shards: 2}
  rules:
    - {status: 503, header: X-Bulkhead-Reject, class: rejected}
    - {status: 504, header: X-Dependency-Error, class: dep_timeout}
    - {status: 502, header: X-Dependency-Error, class: dep_error}
modes:
  - name: shared
    external:
      targets: {checkout: "http://checkout-shared.shop.svc/checkout", browse: "http://checkout-shared.shop.svc/browse"}
      canary: "http://checkout-shared.shop.svc/healthz"
  - name: bulkhead
    external:
      targets: {checkout: "http://checkout-bulkhead.shop.svc/checkout", browse: "http://checkout-bulkhead.shop.svc/browse"}
      canary: "http://checkout-bulkhead.shop.svc/healthz"
service: {timeout: 250ms, max_wait: 250ms, pool_size: 8, queue: 8}
dependencies:
  payments: {latency: 20ms, jitter: 2ms}
  stock: {latency: 20ms, jitter: 2ms}
load: {rates: {checkout: 60, browse: 60}}
phases: {warmup: 500ms, baseline: 1500ms, fault: 2500ms, recovery: 500ms}
conditions: [slow]
expectations: {victim: browse, culprit: checkout, check: [P1, P2]}
`

// The user's env before the run: the services call the dependencies.
const (
	paymentsURL = "http://payments.shop.svc:8080"
	stockURL    = "http://stock.shop.svc:8080"
)

// TestShopExperimentOnRealPods runs the Kubernetes example of docs/clusters.md with
// `bulkheadlab run --kubernetes` (a build with cluster support of the
// image's commit, as a user would run it; the pods run the image's
// default build) on the real node: the user's dependencies and a Deployment of the
// built-in service per mode, all reached by their *.svc names; the
// proxies' Deployments and Services, the shards' Indexed Job; the
// services pointed at the proxies' Services by --patch-env. The verdicts
// must be those of one machine (P1 and P2 SUPPORTED), the faults set on
// both payments replicas, and the namespace left as the user had it.
func TestShopExperimentOnRealPods(t *testing.T) {
	n := nodetest.Shared(t)
	client := n.Cluster.Client
	ctx := context.Background()
	const ns = "shop"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deploy(t, client, ns, "payments", 8080, restricted("dep", "--name", "payments", "--latency", "20ms", "--jitter", "2ms", "--seed", "1", "--size", "16", "--listen", ":8080", "--allow-remote"))
	deploy(t, client, ns, "stock", 8080, restricted("dep", "--name", "stock", "--latency", "20ms", "--jitter", "2ms", "--seed", "2", "--size", "16", "--listen", ":8080", "--allow-remote"))
	for _, mode := range []string{"shared", "bulkhead"} {
		c := restricted("serve", "--mode", mode, "--pool-size", "8", "--queue", "8", "--timeout", "250ms", "--max-wait", "250ms",
			"--endpoint", "checkout=$(PAYMENTS_URL)", "--endpoint", "browse=$(STOCK_URL)", "--listen", ":8080", "--allow-remote")
		c.Env = []corev1.EnvVar{{Name: "PAYMENTS_URL", Value: paymentsURL}, {Name: "STOCK_URL", Value: stockURL}}
		deploy(t, client, ns, "checkout-"+mode, 80, c)
	}
	defer deleteAll(t, client, ns)
	for _, d := range []string{"payments", "stock", "checkout-shared", "checkout-bulkhead"} {
		waitReady(t, client, ns, d, 2*time.Minute)
	}

	tmp := t.TempDir()
	bin := n.Binary // -tags kube, the image's commit
	file := filepath.Join(tmp, "shop.yaml")
	if err := os.WriteFile(file, []byte(shopSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	var dir string
	var out bytes.Buffer
	code := -1
	for attempt := 1; attempt <= 2; attempt++ { // 3: INVALID, the machine could not hold the load
		outDir := filepath.Join(tmp, "results", string(rune('0'+attempt)))
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		cmd := exec.CommandContext(rctx, bin, "run", file, "--kubernetes", "--kubeconfig", n.Kubeconfig, "-n", ns,
			"--image", nodetest.Image, "--image-pull-policy", "Never",
			"--patch-env", "checkout-shared:PAYMENTS_URL=payments,STOCK_URL=stock",
			"--patch-env", "checkout-bulkhead:PAYMENTS_URL=payments,STOCK_URL=stock",
			"--out", outDir, "--check")
		out.Reset()
		cmd.Stdout, cmd.Stderr = &out, &out
		begin := time.Now()
		err := cmd.Run()
		cancel()
		code = cmd.ProcessState.ExitCode()
		t.Logf("attempt %d: exit %d in %s (%v)", attempt, code, time.Since(begin).Round(time.Millisecond), err)
		m, _ := filepath.Glob(filepath.Join(outDir, "shop", "2*"))
		if len(m) == 1 {
			dir = m[0]
		}
		if code != 3 {
			break
		}
	}
	if code != 0 {
		t.Fatalf("run --kubernetes --check: exit %d, want 0; output:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), ".shop.svc:8080") {
		t.Errorf("the output names no proxy Service by name:\n%s", out.String())
	}
	var sum verdict.Summary
	b, err := os.ReadFile(filepath.Join(dir, rundata.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		t.Fatalf("summary: %v", err)
	}
	for _, v := range sum.Verdicts {
		if (v.Name == "P1" || v.Name == "P2") && v.Outcome != verdict.Supported {
			t.Errorf("%s: %s (%s)", v.Name, v.Outcome, v.Reason)
		}
	}
	for _, rs := range sum.Runs {
		if rs.Shards == nil || rs.Shards.Count != 2 {
			t.Errorf("%s: shards %+v, want 2", rs.ID, rs.Shards)
		}
	}
	var meta rundata.RunMeta
	if b, err := os.ReadFile(filepath.Join(dir, rundata.RunsDir, "slow-shared-r1", rundata.MetaFile)); err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("meta.json of slow-shared-r1: %v", err)
	}
	replicas := map[string]bool{}
	for _, ev := range meta.Faults {
		if ev.Dependency == "payments" && ev.Action == rundata.FaultSet {
			replicas[ev.Replica] = true
		}
	}
	if len(replicas) != 2 {
		t.Errorf("the fault set on payments replicas %v, want both", replicas)
	}
	for dep, u := range meta.Proxies {
		if !strings.HasSuffix(u, "-"+dep+".shop.svc:8080") {
			t.Errorf("proxy of %s: %s, want its Service by name", dep, u)
		}
	}
	nothingLeftButTheUsers(t, n, ns)
}

// nothingLeftButTheUsers checks that namespace ns has only the user's
// objects: no Lease, no Job, the four Deployments and Services, the
// services' env as before the run.
func nothingLeftButTheUsers(t *testing.T, n *nodetest.Node, ns string) {
	t.Helper()
	ctx := context.Background()
	client := n.Cluster.Client
	if ls, err := client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{}); err != nil || len(ls.Items) > 0 {
		t.Errorf("leases left: %v %v", ls, err)
	}
	if js, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); err != nil || len(js.Items) > 0 {
		t.Errorf("jobs left: %v %v", js, err)
	}
	ds, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(ds.Items) != 4 {
		t.Errorf("deployments after the run: %d (%v), want the user's 4", len(ds.Items), err)
	}
	for _, d := range ds.Items {
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "PAYMENTS_URL" && e.Value != paymentsURL || e.Name == "STOCK_URL" && e.Value != stockURL {
				t.Errorf("%s: %s=%s after the run, want it put back", d.Name, e.Name, e.Value)
			}
		}
	}
	if ss, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{}); err != nil || len(ss.Items) != 4 {
		t.Errorf("services after the run: %d (%v), want the user's 4", len(ss.Items), err)
	}
}
