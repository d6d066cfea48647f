//go:build kube

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// envRestore is AnnotationEnvRestore's value: the run that changed a
// container's env and the variables' previous values (nil: the variable
// was not there).
type envRestore struct {
	Run       string                    `json:"run"`
	Container string                    `json:"container"`
	Previous  map[string]*corev1.EnvVar `json:"previous"`
}

// PatchEnv sets the env variables env in container (""; the only one) of
// the user's Deployment deployment, to point it at the run's proxies, and
// waits for the Deployment's rollout (until ctx ends: an error then, with
// restore usable). It records the previous values in the Deployment's
// annotation AnnotationEnvRestore, so that Delete and Clean restore them
// even after a kill of the runner. restore puts the previous values back
// (removing the variables that were not there) and waits for that
// rollout. RBAC: deployments get, list and patch.
func (r *Run) PatchEnv(ctx context.Context, deployment, container string, env map[string]string) (restore func(context.Context) error, err error) {
	c := r.c
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.Client.AppsV1().Deployments(c.Namespace).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kube: Deployment %s: %w", deployment, err)
		}
		i, err := containerIndex(d, container)
		if err != nil {
			return err
		}
		rec := envRestore{Run: r.Label, Container: d.Spec.Template.Spec.Containers[i].Name, Previous: map[string]*corev1.EnvVar{}}
		if v, ok := d.Annotations[AnnotationEnvRestore]; ok {
			var have envRestore
			if err := json.Unmarshal([]byte(v), &have); err != nil || have.Run != r.Label || have.Container != rec.Container {
				return fmt.Errorf("kube: Deployment %s is already changed by bulkheadlab (annotation %s=%s): restore it first (bulkheadlab kube clean)", deployment, AnnotationEnvRestore, v)
			}
			rec = have // a second PatchEnv of the same run keeps the first values
		}
		cs := d.Spec.Template.Spec.Containers
		vars := cs[i].Env
		for _, name := range sortedKeys(env) {
			j := slices.IndexFunc(vars, func(e corev1.EnvVar) bool { return e.Name == name })
			if _, ok := rec.Previous[name]; !ok {
				if j >= 0 {
					rec.Previous[name] = new(vars[j])
				} else {
					rec.Previous[name] = nil
				}
			}
			if j >= 0 {
				vars[j] = corev1.EnvVar{Name: name, Value: env[name]}
			} else {
				vars = append(vars, corev1.EnvVar{Name: name, Value: env[name]})
			}
		}
		cs[i].Env = vars
		note, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return patchContainers(ctx, c, d, cs, string(note))
	})
	if err != nil {
		return nil, err
	}
	restore = func(ctx context.Context) error {
		if _, err := c.restoreEnv(ctx, deployment, r.Label); err != nil {
			return err
		}
		return c.waitRollout(ctx, deployment)
	}
	return restore, c.waitRollout(ctx, deployment)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func containerIndex(d *appsv1.Deployment, name string) (int, error) {
	cs := d.Spec.Template.Spec.Containers
	if name == "" {
		if len(cs) != 1 {
			return 0, fmt.Errorf("kube: Deployment %s has %d containers: name one", d.Name, len(cs))
		}
		return 0, nil
	}
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		return 0, fmt.Errorf("kube: Deployment %s has no container %q", d.Name, name)
	}
	return i, nil
}

// patchContainers replaces d's containers and sets (note != "") or
// removes its AnnotationEnvRestore, with a merge patch conditional on d's
// resourceVersion (a Conflict error when d changed since it was read).
func patchContainers(ctx context.Context, c *Cluster, d *appsv1.Deployment, cs []corev1.Container, note string) error {
	var ann any
	if note != "" {
		ann = note
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": d.ResourceVersion,
			"annotations":     map[string]any{AnnotationEnvRestore: ann},
		},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": cs}}},
	})
	if err != nil {
		return err
	}
	_, err = c.Client.AppsV1().Deployments(c.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		err = fmt.Errorf("kube: patching Deployment %s: %w", d.Name, err)
	}
	return err
}

// restoreEnv puts back the env that run (any run when "") recorded on
// deployment, and reports whether there was something to restore.
func (c *Cluster) restoreEnv(ctx context.Context, deployment, run string) (bool, error) {
	restored := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		restored = false
		d, err := c.Client.AppsV1().Deployments(c.Namespace).Get(ctx, deployment, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kube: Deployment %s: %w", deployment, err)
		}
		v, ok := d.Annotations[AnnotationEnvRestore]
		if !ok {
			return nil
		}
		var rec envRestore
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			return fmt.Errorf("kube: Deployment %s: annotation %s: %w", deployment, AnnotationEnvRestore, err)
		}
		if run != "" && rec.Run != run {
			return nil
		}
		cs := d.Spec.Template.Spec.Containers
		i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == rec.Container })
		if i >= 0 {
			for name, prev := range rec.Previous {
				j := slices.IndexFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == name })
				switch {
				case prev == nil && j >= 0:
					cs[i].Env = slices.Delete(cs[i].Env, j, j+1)
				case prev != nil && j >= 0:
					cs[i].Env[j] = *prev
				case prev != nil:
					cs[i].Env = append(cs[i].Env, *prev)
				}
			}
		}
		restored = true
		return patchContainers(ctx, c, d, cs, "")
	})
	return restored, err
}

type patchedDeployment struct {
	name    string
	restore envRestore
}

// envPatched lists the namespace's Deployments that carry
// AnnotationEnvRestore.
func (c *Cluster) envPatched(ctx context.Context) ([]patchedDeployment, error) {
	ds, err := c.Client.AppsV1().Deployments(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: listing Deployments in %s: %w", c.Namespace, err)
	}
	var out []patchedDeployment
	for _, d := range ds.Items {
		v, ok := d.Annotations[AnnotationEnvRestore]
		if !ok {
			continue
		}
		var rec envRestore
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			continue
		}
		out = append(out, patchedDeployment{name: d.Name, restore: rec})
	}
	return out, nil
}

// restoreEnvOf restores the Deployments that run changed; with wait it
// also waits for their rollouts.
func (c *Cluster) restoreEnvOf(ctx context.Context, run string, wait bool) error {
	patched, err := c.envPatched(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range patched {
		if p.restore.Run != run {
			continue
		}
		if _, err := c.restoreEnv(ctx, p.name, run); err != nil {
			errs = append(errs, err)
			continue
		}
		if wait {
			errs = append(errs, c.waitRollout(ctx, p.name))
		}
	}
	return errors.Join(errs...)
}

// waitRollout waits until deployment's controller has rolled out its
// current template: observedGeneration caught up, every replica updated
// and available, no old replica left.
func (c *Cluster) waitRollout(ctx context.Context, deployment string) error {
	wait := 50 * time.Millisecond
	for {
		d, err := c.Client.AppsV1().Deployments(c.Namespace).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kube: Deployment %s: %w", deployment, err)
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		if s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas >= want && s.Replicas == want {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("kube: Deployment %s not rolled out (generation %d, observed %d; %d of %d updated, %d available, %d replicas): %w",
				deployment, d.Generation, s.ObservedGeneration, s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*3/2, time.Second)
	}
}
