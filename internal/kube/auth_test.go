//go:build kube

package kube_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
)

// TestRunSecretAndNetworkPolicy: a run's token and targets are in a Secret
// its Lease owns, which its pods read by reference (no argument holds the
// token); its NetworkPolicy selects the run's pods and lets in the data
// ports from anywhere and the control ports from ControlFrom only; Delete
// removes the policy.
func TestRunSecretAndNetworkPolicy(t *testing.T) {
	_, c := newCluster(t)
	ctx := timeout(t, 30*time.Second)
	spec := testSpec("auth", 2)
	run, err := c.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	secrets, err := c.Client.CoreV1().Secrets(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + run.Label})
	if err != nil || len(secrets.Items) != 1 {
		t.Fatalf("the run's Secrets: %d, %v; want 1", len(secrets.Items), err)
	}
	sec := secrets.Items[0]
	if string(sec.Data[kube.SecretKeyToken]) != spec.Token || string(sec.Data[kube.SecretKeyTargets]) != strings.Join(spec.ShardTargets, ",") {
		t.Errorf("Secret data %q", sec.Data)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].Kind != "Lease" || sec.OwnerReferences[0].Name != run.Lease {
		t.Errorf("Secret owners %+v; want the Lease %s", sec.OwnerReferences, run.Lease)
	}
	pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + run.Label})
	if err != nil || len(pods.Items) < 3 {
		t.Fatalf("the run's pods: %d, %v", len(pods.Items), err)
	}
	for _, p := range pods.Items {
		ct := p.Spec.Containers[0]
		refs := map[string]string{}
		for _, e := range ct.Env {
			if strings.Contains(e.Value, spec.Token) {
				t.Errorf("pod %s: env %s holds the token", p.Name, e.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == sec.Name {
				refs[e.Name] = e.ValueFrom.SecretKeyRef.Key
			}
		}
		if strings.Contains(strings.Join(ct.Args, " "), spec.Token) {
			t.Errorf("pod %s: an argument holds the token", p.Name)
		}
		want := map[string]string{kube.EnvToken: kube.SecretKeyToken}
		if p.Labels[kube.LabelComponent] == kube.ComponentShard {
			want[kube.EnvShardTargets] = kube.SecretKeyTargets
		}
		for k, v := range want {
			if refs[k] != v {
				t.Errorf("pod %s: $%s from the Secret's %q, want %q", p.Name, k, refs[k], v)
			}
		}
	}
	np, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, run.Lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := np.Spec.PodSelector.MatchLabels; len(got) != 1 || got[kube.LabelRun] != run.Label {
		t.Errorf("NetworkPolicy selects %v; want the run's pods", got)
	}
	ports := func(i int) []int32 {
		var out []int32
		for _, p := range np.Spec.Ingress[i].Ports {
			if *p.Protocol != corev1.ProtocolTCP {
				t.Errorf("rule %d: protocol %s", i, *p.Protocol)
			}
			out = append(out, p.Port.IntVal)
		}
		slices.Sort(out)
		return out
	}
	switch {
	case len(np.Spec.Ingress) != 2:
		t.Fatalf("NetworkPolicy ingress %+v; want the data rule and the control rule", np.Spec.Ingress)
	case !slices.Equal(ports(0), []int32{kube.DataPort}) || len(np.Spec.Ingress[0].From) != 0:
		t.Errorf("data rule %+v; want port %d from anywhere", np.Spec.Ingress[0], kube.DataPort)
	case !slices.Equal(ports(1), []int32{kube.ShardPort, kube.ControlPort}) || len(np.Spec.Ingress[1].From) != 1 ||
		np.Spec.Ingress[1].From[0].IPBlock == nil || np.Spec.Ingress[1].From[0].IPBlock.CIDR != spec.ControlFrom[0]:
		t.Errorf("control rule %+v; want ports %d, %d from %s only", np.Spec.Ingress[1], kube.ShardPort, kube.ControlPort, spec.ControlFrom[0])
	}
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, c, run.Label)
}
