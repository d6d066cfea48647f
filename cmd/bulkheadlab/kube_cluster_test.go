//go:build kube

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
)

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

// TestKubeCleanReport: `kube clean` names a run whose lease has not expired,
// when it expires and how to delete it now, instead of "nothing to
// delete".
func TestKubeCleanReport(t *testing.T) {
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

// TestKubePatchWarning: fewer patched Deployments than modes is warned about
// loudly, naming both counts; none, or one per mode, is not.
func TestKubePatchWarning(t *testing.T) {
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
