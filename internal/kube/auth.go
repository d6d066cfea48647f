//go:build kube

package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The run's Secret: its keys, and the environment variables the pods get
// them in (internal/ctlauth's and loadgen/shards').
const (
	SecretKeyToken   = "token"
	SecretKeyTargets = "targets"
	EnvToken         = "BULKHEADLAB_TOKEN"
	EnvShardTargets  = "BULKHEADLAB_SHARD_TARGETS"
)

// secretName is the name of run's Secret and NetworkPolicy: its Lease's.
func secretName(run string) string { return leaseName(run) }

// secret is the run's Secret, owned by its Lease: the token, and the
// shards' targets (a pod's spec holds only a reference to them).
func (r *Run) secret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: r.meta(secretName(r.Label), "", ""),
		Type:       corev1.SecretTypeOpaque,
		Immutable:  new(true),
		StringData: map[string]string{
			SecretKeyToken:   r.spec.Token,
			SecretKeyTargets: strings.Join(r.spec.ShardTargets, ","),
		},
	}
}

// fromSecret is the environment variable name set to key of the run's
// Secret.
func (r *Run) fromSecret(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secretName(r.Label)}, Key: key}}}
}

// networkPolicy is the run's NetworkPolicy: it selects the run's pods
// and lets in only what the run needs: the proxies' data ports from
// anywhere (the user's service calls them), and the proxies' control
// ports and the shards' port from ControlFrom (where the API server's pod
// proxy, by which the runner reaches them, comes from; any source when it
// is empty). A kubelet's readiness probe comes from the pod's node, which
// clusters let in whatever the policy.
func (r *Run) networkPolicy() *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	port := func(p int32) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(p)
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &v}
	}
	var data, control []networkingv1.NetworkPolicyPort
	seen := map[int32]bool{}
	for _, p := range r.spec.Proxies {
		if !seen[p.DataPort] {
			data = append(data, port(p.DataPort))
			seen[p.DataPort] = true
		}
	}
	seenCtl := map[int32]bool{}
	for _, p := range r.spec.Proxies {
		if !seenCtl[p.ControlPort] {
			control = append(control, port(p.ControlPort))
			seenCtl[p.ControlPort] = true
		}
	}
	if r.spec.Shards > 0 && !seenCtl[r.spec.ShardPort] {
		control = append(control, port(r.spec.ShardPort))
	}
	var from []networkingv1.NetworkPolicyPeer
	for _, cidr := range r.spec.ControlFrom {
		from = append(from, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	var rules []networkingv1.NetworkPolicyIngressRule
	if len(data) > 0 {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{Ports: data})
	}
	if len(control) > 0 {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{Ports: control, From: from})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: r.meta(secretName(r.Label), "", ""),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: r.Label}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     rules,
		},
	}
}
