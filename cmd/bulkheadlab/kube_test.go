package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
)

// TestKubeUsageErrors: a run on a cluster refuses, before it connects,
// what it cannot do, naming the flag; `kube clean` names a kubeconfig it
// cannot read.
func TestKubeUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	ext := filepath.Join(tmp, "ext.yaml")
	if err := os.WriteFile(ext, []byte("name: ext\nmodes: [shared]\nexternal:\n"+
		"  targets: {a: 'http://checkout.shop.svc/a', b: 'http://checkout.shop.svc/b'}\n"+
		"  upstreams: {A: 'http://pay.shop.svc:8080', B: 'http://stock.shop.svc:8080'}\n"+
		"  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := filepath.Join(tmp, "cluster.yaml")
	if err := os.WriteFile(cluster, []byte("name: cluster\nmodes: [shared]\nexternal:\n"+
		"  targets: {a: 'http://checkout.shop.svc/a', b: 'http://checkout.shop.svc/b'}\n"+
		"  upstreams: {A: 'http://pay.shop.svc:8080', B: 'http://stock.shop.svc:8080'}\n"+
		"  kubernetes: {replicas: {A: 2}, shards: 4}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "no-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", ext, "--kubernetes"}, "--image"},
		{[]string{"run", "ci-regression", "--kubernetes", "--image", "x"}, "not an external spec"},
		{[]string{"run", ext, "--image", "x"}, "--image: only with --kubernetes"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--proxy-replicas", "0"}, "--proxy-replicas"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--image-pull-policy", "Sometimes"}, "--image-pull-policy"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--patch-env", "checkout"}, "--patch-env"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--patch-env", "checkout:A_URL=A", "--patch-env", "checkout:B_URL=B"}, "Deployment checkout given twice"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--patch-env", "checkout:A_URL=A", "--patch-env", "stock:"}, "--patch-env"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--shard-cpu", "lots"}, "--shard-cpu"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--shard-cpu", "-1"}, "--shard-cpu"},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--kubeconfig", missing, "--out", tmp}, missing},
		{[]string{"kube", "clean", "--kubeconfig", missing}, missing},
		{[]string{"run", cluster, "--allow-remote"}, "external.proxies.A: without it the spec runs only on a cluster"},
		{[]string{"run", cluster, "--kubernetes", "--image", "x", "--kubeconfig", missing, "--out", tmp}, missing},
	} {
		code, msg := execute(t, tc.args...)
		if code != ExitUsage || !strings.Contains(msg, tc.want) {
			t.Errorf("bulkheadlab %s: exit %d %q, want exit %d naming %q", strings.Join(tc.args, " "), code, msg, ExitUsage, tc.want)
		}
	}
}

func TestKubeRunID(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 4, 5, 0, time.UTC)
	for name, want := range map[string]string{
		"slow-dependency":                    "slow-dependency-20261202t160405z",
		"My_Shop Checkout!":                  "my-shop-checkout-20261202t160405z",
		"a-very-long-experiment-name-beyond": "a-very-long-experiment-name-be-20261202t160405z",
	} {
		if got := kubeRunID(name, at); got != want {
			t.Errorf("kubeRunID(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestValidateClusterSpec: `validate` of a spec laid out for a cluster
// (external.kubernetes) does not ask for --allow-remote — its targets are
// loaded from the shard pods — while a spec run from this machine still
// does.
func TestValidateClusterSpec(t *testing.T) {
	tmp := t.TempDir()
	body := "modes: [shared]\nexternal:\n" +
		"  targets: {a: 'http://checkout.shop.svc/a', b: 'http://checkout.shop.svc/b'}\n" +
		"  upstreams: {A: 'http://pay.shop.svc:8080', B: 'http://stock.shop.svc:8080'}\n"
	for _, tt := range []struct {
		name, layout string
		want, not    string
	}{
		{"cluster", "  kubernetes: {shards: 2}\n", "run --kubernetes", "--allow-remote"},
		{"machine", "  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n", "needs --allow-remote", "--kubernetes"},
	} {
		file := filepath.Join(tmp, tt.name+".yaml")
		if err := os.WriteFile(file, []byte("name: "+tt.name+"\n"+body+tt.layout), 0o644); err != nil {
			t.Fatal(err)
		}
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs([]string{"validate", file})
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err != nil {
			t.Fatalf("validate %s: %v\n%s", tt.name, err, out.String())
		}
		if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), tt.not) {
			t.Errorf("validate %s: output says %q: %v, %q: %v; want only the first:\n%s", tt.name,
				tt.want, strings.Contains(out.String(), tt.want), tt.not, strings.Contains(out.String(), tt.not), out.String())
		}
	}
}

// TestCleanReport: `kube clean` names a run whose lease has not expired,
// when it expires and how to delete it now, instead of "nothing to
// delete".
func TestCleanReport(t *testing.T) {
	now := time.Date(2026, 12, 2, 16, 4, 5, 0, time.UTC)
	held := []kube.HeldRun{{Run: "shop-20261202t160300z", Holder: "laptop-4242", Renewed: now.Add(-20 * time.Second), Expires: now.Add(40 * time.Second)}}
	for _, tt := range []struct {
		name      string
		deleted   int
		held      []kube.HeldRun
		want, not []string
	}{
		{"killed run", 0, held, []string{"run shop-20261202t160300z is held by laptop-4242 until 16:04:45 (in 40s)", "once its lease expires", "kube clean --all"}, []string{"nothing to delete"}},
		{"nothing", 0, nil, []string{"nothing to delete in namespace chaos"}, []string{"--all"}},
		{"deleted", 2, nil, nil, []string{"nothing to delete"}},
	} {
		got := cleanReport(tt.deleted, tt.held, "chaos", now)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", tt.name, got, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q says %q", tt.name, got, n)
			}
		}
	}
}

// TestPatchWarning: fewer patched Deployments than modes is warned about
// loudly, naming both counts; none, or one per mode, is not.
func TestPatchWarning(t *testing.T) {
	for _, tt := range []struct {
		patched, modes int
		want           string
	}{
		{1, 2, "points 1 Deployment(s) at the proxies, but the spec has 2 modes"},
		{2, 2, ""},
		{0, 2, ""},
		{3, 2, ""},
	} {
		got := patchWarning(tt.patched, tt.modes)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("patchWarning(%d, %d) = %q, want %q", tt.patched, tt.modes, got, tt.want)
		}
	}
}
