//go:build kube

package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// deleteWait bounds Delete's wait for the objects to be gone when its
// context has no deadline.
const deleteWait = 2 * time.Minute

// Delete deletes the run's objects: it restores the env of the
// Deployments that PatchEnv changed for the run, deletes every Job,
// Deployment, Service and Pod labelled with the run (background
// propagation: a real cluster's garbage collector removes their
// ReplicaSets and pods; the pods are deleted by label too, for clusters
// without one), then the Lease, and waits until none is left (at most 2
// minutes when ctx has no deadline). Deleting a run that is gone is not an
// error.
func (r *Run) Delete(ctx context.Context) error {
	return r.c.deleteRun(ctx, r.Label)
}

func (c *Cluster) deleteRun(ctx context.Context, run string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deleteWait)
		defer cancel()
	}
	var errs []error
	if err := c.restoreEnvOf(ctx, run, false); err != nil {
		errs = append(errs, err)
	}
	if err := c.deleteObjects(ctx, run); err != nil {
		errs = append(errs, err)
	}
	if err := c.Client.CoordinationV1().Leases(c.Namespace).Delete(ctx, leaseName(run), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kube: deleting Lease %s: %w", leaseName(run), err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("kube: deleting run %s: %w", run, errors.Join(errs...))
	}
	wait := 50 * time.Millisecond
	for {
		left, err := c.Left(ctx, run)
		if err == nil && len(left) == 0 {
			return nil
		}
		if err == nil && slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, "pod/") }) {
			// a ReplicaSet not yet collected may have made new pods
			_ = c.deletePods(ctx, run)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if err != nil {
				return fmt.Errorf("kube: deleting run %s: %w", run, err)
			}
			return fmt.Errorf("kube: deleting run %s: still there: %s: %w", run, strings.Join(left, ", "), ctx.Err())
		case <-t.C:
		}
		wait = min(wait*3/2, time.Second)
	}
}

func runSelector(run string) string { return labels.Set{LabelRun: run}.String() }

// deleteObjects deletes the run's Jobs, Deployments, Services and Pods.
func (c *Cluster) deleteObjects(ctx context.Context, run string) error {
	ns := c.Namespace
	list := metav1.ListOptions{LabelSelector: runSelector(run)}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	note := func(kind, name string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
		}
	}
	if jobs, err := c.Client.BatchV1().Jobs(ns).List(ctx, list); err != nil {
		note("listing", "jobs", err)
	} else {
		for _, j := range jobs.Items {
			note("deleting Job", j.Name, c.Client.BatchV1().Jobs(ns).Delete(ctx, j.Name, del))
		}
	}
	if ds, err := c.Client.AppsV1().Deployments(ns).List(ctx, list); err != nil {
		note("listing", "deployments", err)
	} else {
		for _, d := range ds.Items {
			note("deleting Deployment", d.Name, c.Client.AppsV1().Deployments(ns).Delete(ctx, d.Name, del))
		}
	}
	if ss, err := c.Client.CoreV1().Services(ns).List(ctx, list); err != nil {
		note("listing", "services", err)
	} else {
		for _, s := range ss.Items {
			note("deleting Service", s.Name, c.Client.CoreV1().Services(ns).Delete(ctx, s.Name, del))
		}
	}
	note("deleting", "pods", c.deletePods(ctx, run))
	// By name: the NetworkPolicy is the run's only one. The Secret is
	// deleted by the garbage collector with the Lease that owns it (the
	// Role grants no delete on Secrets); deleted here too where the
	// runner may (a cluster without a collector).
	note("deleting NetworkPolicy", secretName(run), c.Client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, secretName(run), del))
	if err := c.Client.CoreV1().Secrets(ns).Delete(ctx, secretName(run), del); !apierrors.IsForbidden(err) {
		note("deleting Secret", secretName(run), err)
	}
	return errors.Join(errs...)
}

func (c *Cluster) deletePods(ctx context.Context, run string) error {
	return c.Client.CoreV1().Pods(c.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: runSelector(run)})
}

// Left lists the objects of run (its label) still there, as kind/name:
// none once Delete or Clean returned without an error.
func (c *Cluster) Left(ctx context.Context, run string) ([]string, error) {
	ns := c.Namespace
	list := metav1.ListOptions{LabelSelector: runSelector(run)}
	var out []string
	jobs, err := c.Client.BatchV1().Jobs(ns).List(ctx, list)
	if err != nil {
		return nil, err
	}
	for _, o := range jobs.Items {
		out = append(out, "job/"+o.Name)
	}
	ds, err := c.Client.AppsV1().Deployments(ns).List(ctx, list)
	if err != nil {
		return nil, err
	}
	for _, o := range ds.Items {
		out = append(out, "deployment/"+o.Name)
	}
	ss, err := c.Client.CoreV1().Services(ns).List(ctx, list)
	if err != nil {
		return nil, err
	}
	for _, o := range ss.Items {
		out = append(out, "service/"+o.Name)
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, list)
	if err != nil {
		return nil, err
	}
	for _, o := range pods.Items {
		out = append(out, "pod/"+o.Name)
	}
	_, err = c.Client.NetworkingV1().NetworkPolicies(ns).Get(ctx, secretName(run), metav1.GetOptions{})
	switch {
	case err == nil:
		out = append(out, "networkpolicy/"+secretName(run))
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	_, err = c.Client.CoordinationV1().Leases(ns).Get(ctx, leaseName(run), metav1.GetOptions{})
	switch {
	case err == nil:
		out = append(out, "lease/"+leaseName(run))
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	return out, nil
}

// expired reports whether lease was not renewed within its duration.
func expired(l *coordinationv1.Lease, now time.Time) bool {
	last := l.CreationTimestamp.Time
	if l.Spec.AcquireTime != nil {
		last = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		last = l.Spec.RenewTime.Time
	}
	d := time.Duration(0)
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return last.Add(d).Before(now)
}

// Clean deletes the runs of the namespace whose Lease expired (every run
// with all), and the runs whose objects are left without their Lease,
// restoring the Deployments that PatchEnv changed for them, and returns
// their LabelRun values, sorted. It is what removes a killed runner's
// objects: the next run (or `bulkheadlab kube clean`) calls it.
func (c *Cluster) Clean(ctx context.Context, all bool) ([]string, error) {
	ns := c.Namespace
	managed := metav1.ListOptions{LabelSelector: labels.Set{LabelManagedBy: ManagedBy}.String()}
	leases, err := c.Client.CoordinationV1().Leases(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("kube: listing the runs' Leases in %s: %w", ns, err)
	}
	now := time.Now()
	live := map[string]bool{} // runs with a Lease: true when it has not expired
	doomed := map[string]bool{}
	for i := range leases.Items {
		l := &leases.Items[i]
		run := l.Labels[LabelRun]
		if run == "" {
			continue
		}
		live[run] = !all && !expired(l, now)
		if !live[run] {
			doomed[run] = true
		}
	}
	// labelled objects whose Lease is gone
	var found []string
	jobs, err := c.Client.BatchV1().Jobs(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("kube: listing Jobs in %s: %w", ns, err)
	}
	for _, o := range jobs.Items {
		found = append(found, o.Labels[LabelRun])
	}
	ds, err := c.Client.AppsV1().Deployments(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("kube: listing Deployments in %s: %w", ns, err)
	}
	for _, o := range ds.Items {
		found = append(found, o.Labels[LabelRun])
	}
	ss, err := c.Client.CoreV1().Services(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("kube: listing Services in %s: %w", ns, err)
	}
	for _, o := range ss.Items {
		found = append(found, o.Labels[LabelRun])
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("kube: listing Pods in %s: %w", ns, err)
	}
	for _, o := range pods.Items {
		found = append(found, o.Labels[LabelRun])
	}
	// Deployments whose env a run changed
	patched, err := c.envPatched(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range patched {
		found = append(found, p.restore.Run)
	}
	for _, run := range found {
		if _, hasLease := live[run]; run != "" && !hasLease {
			doomed[run] = true
		}
	}
	var cleaned []string
	var errs []error
	for run := range doomed {
		if err := c.deleteRun(ctx, run); err != nil {
			errs = append(errs, err)
			continue
		}
		cleaned = append(cleaned, run)
	}
	slices.Sort(cleaned)
	return cleaned, errors.Join(errs...)
}
