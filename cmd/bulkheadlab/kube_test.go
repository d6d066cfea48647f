package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubeUsageErrors: a run on a cluster refuses, before it connects,
// what it cannot do, naming the flag; `kube clean` names a kubeconfig it
// cannot read. Without cluster support (no -tags kube) every command line
// that needs a cluster is a usage error that says how to build a binary
// with it, whatever else is wrong with it; the flags that do not need a
// cluster are checked alike in both builds.
func TestKubeUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	ext := filepath.Join(tmp, "ext.yaml")
	if err := os.WriteFile(ext, []byte("name: ext\nmodes: [shared]\nexternal:\n"+
		"  targets: {a: 'http://checkout.shop.svc/a', b: 'http://checkout.shop.svc/b'}\n"+
		"  upstreams: {A: 'http://pay.shop.svc:8080', B: 'http://stock.shop.svc:8080'}\n"+
		"  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clusterSpec := filepath.Join(tmp, "cluster.yaml")
	if err := os.WriteFile(clusterSpec, []byte("name: cluster\nmodes: [shared]\nexternal:\n"+
		"  targets: {a: 'http://checkout.shop.svc/a', b: 'http://checkout.shop.svc/b'}\n"+
		"  upstreams: {A: 'http://pay.shop.svc:8080', B: 'http://stock.shop.svc:8080'}\n"+
		"  kubernetes: {replicas: {A: 2}, shards: 4}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "no-kubeconfig")
	for _, tc := range []struct {
		args    []string
		want    string
		cluster bool // needs cluster support
	}{
		{[]string{"run", ext, "--kubernetes"}, "--image", true},
		{[]string{"run", "ci-regression", "--kubernetes", "--image", "x"}, "not an external spec", true},
		{[]string{"run", ext, "--image", "x"}, "--image: only with --kubernetes", false},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--proxy-replicas", "0"}, "--proxy-replicas", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--image-pull-policy", "Sometimes"}, "--image-pull-policy", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--patch-env", "checkout"}, "--patch-env", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--patch-env", "checkout:A_URL=A", "--patch-env", "checkout:B_URL=B"}, "Deployment checkout given twice", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--patch-env", "checkout:A_URL=A", "--patch-env", "stock:"}, "--patch-env", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--shard-cpu", "lots"}, "--shard-cpu", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--shard-cpu", "-1"}, "--shard-cpu", true},
		{[]string{"run", ext, "--kubernetes", "--image", "x", "--kubeconfig", missing, "--out", tmp}, missing, true},
		{[]string{"kube", "clean", "--kubeconfig", missing}, missing, true},
		{[]string{"run", clusterSpec, "--allow-remote"}, "external.proxies.A: without it the spec runs only on a cluster", false},
		{[]string{"run", clusterSpec, "--kubernetes", "--image", "x", "--kubeconfig", missing, "--out", tmp}, missing, true},
	} {
		want := tc.want
		if tc.cluster && cluster == nil {
			want = "built without cluster support (the Kubernetes client libraries are left out of the default build): build one with it: go build -tags kube ./cmd/bulkheadlab"
		}
		code, msg := execute(t, tc.args...)
		if code != ExitUsage || !strings.Contains(msg, want) {
			t.Errorf("bulkheadlab %s: exit %d %q, want exit %d naming %q", strings.Join(tc.args, " "), code, msg, ExitUsage, want)
		}
	}
}

// TestKubeHelp: the help says whether this build runs on a cluster. With
// cluster support run's help shows every cluster flag; without it only
// --kubernetes, saying how to build a binary that has it, as `kube` does.
func TestKubeHelp(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(append(args, "--help"))
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err != nil {
			t.Fatalf("%s --help: %v", strings.Join(args, " "), err)
		}
		return out.String()
	}
	const needs = "needs a build with cluster support"
	run, kube, clean := help("run"), help("kube"), help("kube", "clean")
	for _, tt := range []struct {
		what, text, says string
		with             bool // says it with cluster support, else without
	}{
		{"run's help", run, "--image string", true},
		{"run's help", run, "--kube-ttl duration", true},
		{"run's help", run, "(default 1m0s)", true},
		{"run's help", run, needs + ", which this one is not: go build -tags kube ./cmd/bulkheadlab", false},
		{"kube's help", kube, "Kubernetes cluster (" + needs + ")", false},
		{"kube clean's help", clean, "This build has no cluster support; build one with it: go build -tags kube ./cmd/bulkheadlab", false},
	} {
		if want := tt.with == (cluster != nil); strings.Contains(tt.text, tt.says) != want {
			t.Errorf("cluster support %v: %s says %q: %v, want %v:\n%s", cluster != nil, tt.what, tt.says, !want, want, tt.text)
		}
	}
	if !strings.Contains(run, "--kubernetes") || !strings.Contains(clean, "--namespace") {
		t.Errorf("run's help does not show --kubernetes, or kube clean's --namespace:\n%s\n%s", run, clean)
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
