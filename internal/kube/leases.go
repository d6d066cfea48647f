//go:build kube

package kube

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// HeldRun is a run whose Lease has not expired: its runner renews it (a
// live run), or was killed less than a TTL ago. Clean without all leaves
// it.
type HeldRun struct {
	// Run is its LabelRun value.
	Run string
	// Holder is the runner that holds the Lease (host-pid).
	Holder string
	// Renewed is when the Lease was last renewed, Expires when it expires
	// unless renewed again.
	Renewed, Expires time.Time
}

// HeldRuns returns the runs of the namespace whose Lease has not expired
// at now, by Run.
func (c *Cluster) HeldRuns(ctx context.Context, now time.Time) ([]HeldRun, error) {
	managed := metav1.ListOptions{LabelSelector: labels.Set{LabelManagedBy: ManagedBy}.String()}
	leases, err := c.Client.CoordinationV1().Leases(c.Namespace).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("kube: listing the runs' Leases in %s: %w", c.Namespace, err)
	}
	var out []HeldRun
	for i := range leases.Items {
		l := &leases.Items[i]
		run := l.Labels[LabelRun]
		if run == "" || expired(l, now) {
			continue
		}
		h := HeldRun{Run: run, Renewed: l.CreationTimestamp.Time}
		if l.Spec.AcquireTime != nil {
			h.Renewed = l.Spec.AcquireTime.Time
		}
		if l.Spec.RenewTime != nil {
			h.Renewed = l.Spec.RenewTime.Time
		}
		h.Expires = h.Renewed
		if l.Spec.LeaseDurationSeconds != nil {
			h.Expires = h.Renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		}
		if l.Spec.HolderIdentity != nil {
			h.Holder = *l.Spec.HolderIdentity
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out, nil
}
