//go:build kube

package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Labels and annotations on a run's objects.
const (
	// LabelRun is on every object of a run (and on its pods): the run id,
	// as a label value (see RunLabel).
	LabelRun = "bulkheadlab.dev/run"
	// LabelDependency is on a proxy's Deployment, Service and pods.
	LabelDependency = "bulkheadlab.dev/dependency"
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	LabelName       = "app.kubernetes.io/name"
	LabelComponent  = "app.kubernetes.io/component"
	LabelInstance   = "app.kubernetes.io/instance"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "bulkheadlab"
	// ComponentProxy and ComponentShard are LabelComponent's values.
	ComponentProxy = "proxy"
	ComponentShard = "shard"
	// AnnotationEnvRestore is on a user's Deployment that PatchEnv
	// changed: the run that did and the previous values, for Clean to put
	// back after a kill of the runner.
	AnnotationEnvRestore = "bulkheadlab.dev/env-restore"
	// CompletionIndex is the label and annotation that Kubernetes' Job
	// controller puts on an Indexed Job's pods.
	CompletionIndex = "batch.kubernetes.io/job-completion-index"
)

// maxName is the length of the objects' names: below DNS-1123's 63 so that
// the names Kubernetes derives from them (a Deployment's ReplicaSets and
// pods, an Indexed Job's pods and their host names) stay valid.
const maxName = 52

// dnsLabel turns s into a DNS-1123 label (lower-case letters, digits and
// '-', starting with a letter, at most max characters). When that changed
// s, or cut it, a hash of s is appended so that different names stay
// different ("A" and "a", "pay_ments" and "pay-ments").
func dnsLabel(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if out == "" || out[0] < 'a' || out[0] > 'z' {
		out = "x-" + out
		out = strings.TrimSuffix(out, "-")
	}
	if out == s && len(out) <= max {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:6]
	if len(out) > max-len(h)-1 {
		out = strings.TrimRight(out[:max-len(h)-1], "-")
	}
	return out + "-" + h
}

// RunLabel is the value of LabelRun for run id: id itself when it is a
// valid label value of DNS-label form, else a sanitized form with a hash.
func RunLabel(id string) string { return dnsLabel(id, 40) }

// names of a run's objects, derived from its label.
func leaseName(run string) string { return "bulkheadlab-" + run }
func shardJobName(run string) string {
	return dnsLabel("bulkheadlab-"+run+"-shards", maxName)
}
func proxyName(run, dep string) string {
	return dnsLabel("bulkheadlab-"+run+"-"+dnsLabel(dep, 30), maxName)
}
