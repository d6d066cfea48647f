//go:build kube

package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://one.example:6443"}
- name: two
  cluster: {server: "https://two.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: first
  context: {cluster: one, user: u, namespace: chaos}
- name: second
  context: {cluster: two, user: u}
current-context: first
`

func TestConnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	for _, tc := range []struct {
		name          string
		o             kube.Options
		env           string
		host, ns, err string
	}{
		{name: "current context", o: kube.Options{Kubeconfig: path}, host: "https://one.example:6443", ns: "chaos"},
		{name: "context flag", o: kube.Options{Kubeconfig: path, Context: "second"}, host: "https://two.example:6443", ns: "default"},
		{name: "namespace flag", o: kube.Options{Kubeconfig: path, Namespace: "mine"}, host: "https://one.example:6443", ns: "mine"},
		{name: "KUBECONFIG", env: path, o: kube.Options{Context: "second", Namespace: "x"}, host: "https://two.example:6443", ns: "x"},
		{name: "no such context", o: kube.Options{Kubeconfig: path, Context: "third"}, err: `kubeconfig "` + path + `", context "third"`},
		{name: "no such file", o: kube.Options{Kubeconfig: path + ".missing"}, err: `kubeconfig "` + path + `.missing"`},
		{name: "nothing", err: "kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			c, err := kube.Connect(tc.o)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Connect = %v; want an error naming %s", err, tc.err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Config.Host != tc.host || c.Namespace != tc.ns {
				t.Errorf("host %s, namespace %s; want %s, %s", c.Config.Host, c.Namespace, tc.host, tc.ns)
			}
		})
	}
}
