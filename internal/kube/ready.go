//go:build kube

package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodState is why one expected pod of a run is not ready.
type PodState struct {
	// Component is ComponentProxy or ComponentShard; Dependency the
	// proxy's dependency; Index the shard's completion index (-1 for a
	// proxy).
	Component  string
	Dependency string
	Index      int
	// Pod is the pod's name, "" when there is no pod (yet).
	Pod string
	// Phase is the pod's phase; Reason says why it is not ready (its
	// conditions and its containers' states).
	Phase  corev1.PodPhase
	Reason string
	// Failed: the pod failed, it will not become ready.
	Failed bool
}

func (s PodState) String() string {
	var who string
	switch {
	case s.Component == ComponentShard && s.Index >= 0:
		who = "shard " + strconv.Itoa(s.Index)
	case s.Component == ComponentShard:
		who = "shards"
	case s.Component == ComponentProxy:
		who = "proxy " + strconv.Quote(s.Dependency)
	default:
		who = "run"
	}
	if s.Pod == "" {
		return who + ": " + s.Reason
	}
	return fmt.Sprintf("%s (pod %s): %s", who, s.Pod, s.Reason)
}

// NotReadyError is WaitReady's error: the pods that were not ready when
// it gave up.
type NotReadyError struct {
	Run     string
	Pods    []PodState
	Elapsed time.Duration
	// Cause is why WaitReady stopped: the context's error, or nil when a
	// pod failed.
	Cause error
}

func (e *NotReadyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kube: run %s not ready after %s:", e.Run, e.Elapsed.Round(time.Millisecond))
	for _, p := range e.Pods {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *NotReadyError) Unwrap() error { return e.Cause }

// Shard returns the state of shard i when it was not ready.
func (e *NotReadyError) Shard(i int) (PodState, bool) {
	for _, p := range e.Pods {
		if p.Component == ComponentShard && p.Index == i {
			return p, true
		}
	}
	return PodState{}, false
}

// WaitReady returns when every proxy replica and every shard pod of the
// run is Ready (and the Deployments' and the Job's status say so), polling
// with a growing interval (50 ms to 1 s). When ctx ends first, or a pod
// fails, it returns a *NotReadyError naming each pod that is not ready and
// why.
func (r *Run) WaitReady(ctx context.Context) error {
	start := time.Now()
	wait := 50 * time.Millisecond
	var last []PodState
	for {
		pending, err := r.notReady(ctx)
		switch {
		case err == nil && len(pending) == 0:
			return nil
		case err == nil:
			last = pending
			if slices.ContainsFunc(pending, func(p PodState) bool { return p.Failed }) {
				return &NotReadyError{Run: r.ID, Pods: pending, Elapsed: time.Since(start)}
			}
		case ctx.Err() == nil && !isTransient(err):
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == nil {
				last = []PodState{{Index: -1, Reason: fmt.Sprintf("no state read: %v", err)}}
			}
			return &NotReadyError{Run: r.ID, Pods: last, Elapsed: time.Since(start), Cause: ctx.Err()}
		case <-t.C:
		}
		wait = min(wait*3/2, time.Second)
	}
}

func isTransient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}

// notReady reads the run's Deployments, Job and pods and returns what is
// not ready.
func (r *Run) notReady(ctx context.Context) ([]PodState, error) {
	ns := r.c.Namespace
	pods, err := r.pods(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []PodState
	for _, p := range r.spec.Proxies {
		name := proxyName(r.Label, p.Dependency)
		d, err := r.c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("kube: Deployment %s: %w", name, err)
		}
		dep := dnsLabel(p.Dependency, 40)
		var ready int32
		var waiting []PodState
		for i := range pods {
			pod := &pods[i]
			if pod.Labels[LabelComponent] != ComponentProxy || pod.Labels[LabelDependency] != dep {
				continue
			}
			if podReady(pod) {
				ready++
				continue
			}
			waiting = append(waiting, podState(pod, ComponentProxy, p.Dependency, -1))
		}
		if ready >= p.Replicas && d.Status.ReadyReplicas >= p.Replicas && d.Status.ObservedGeneration >= d.Generation {
			continue
		}
		out = append(out, waiting...)
		if missing := p.Replicas - ready - int32(len(waiting)); missing > 0 {
			out = append(out, PodState{Component: ComponentProxy, Dependency: p.Dependency, Index: -1,
				Reason: fmt.Sprintf("%d of %d replicas have no pod (Deployment %s: %d ready, %d available)",
					missing, p.Replicas, name, d.Status.ReadyReplicas, d.Status.AvailableReplicas)})
		} else if len(waiting) == 0 {
			out = append(out, PodState{Component: ComponentProxy, Dependency: p.Dependency, Index: -1,
				Reason: fmt.Sprintf("pods ready but Deployment %s reports %d of %d ready", name, d.Status.ReadyReplicas, p.Replicas)})
		}
	}
	if r.spec.Shards > 0 {
		name := shardJobName(r.Label)
		j, err := r.c.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("kube: Job %s: %w", name, err)
		}
		byIndex := shardsByIndex(pods)
		var jobReady int32
		if j.Status.Ready != nil {
			jobReady = *j.Status.Ready
		}
		allPodsReady := true
		for i := 0; i < r.spec.Shards; i++ {
			pod, ok := byIndex[i]
			switch {
			case !ok:
				allPodsReady = false
				out = append(out, PodState{Component: ComponentShard, Index: i, Failed: jobFailed(j),
					Reason: fmt.Sprintf("no pod (Job %s: %d active, %d ready, %d failed%s)", name,
						j.Status.Active, jobReady, j.Status.Failed, jobConditions(j.Status.Conditions))})
			case !podReady(&pod):
				allPodsReady = false
				out = append(out, podState(&pod, ComponentShard, "", i))
			}
		}
		if allPodsReady && jobReady < int32(r.spec.Shards) {
			out = append(out, PodState{Component: ComponentShard, Index: -1,
				Reason: fmt.Sprintf("pods ready but Job %s reports %d of %d ready", name, jobReady, r.spec.Shards)})
		}
	}
	return out, nil
}

func jobFailed(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobConditions(cs []batchv1.JobCondition) string {
	var s string
	for _, c := range cs {
		if c.Status == corev1.ConditionTrue {
			s += fmt.Sprintf("; %s: %s %s", c.Type, c.Reason, c.Message)
		}
	}
	return s
}

// pods lists the run's pods of component ("": all) that are not being
// deleted.
func (r *Run) pods(ctx context.Context, component string) ([]corev1.Pod, error) {
	sel := labels.Set{LabelRun: r.Label}
	if component != "" {
		sel[LabelComponent] = component
	}
	list, err := r.c.Client.CoreV1().Pods(r.c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("kube: listing the pods of run %s: %w", r.ID, err)
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// completionIndex is a shard pod's completion index (-1: none).
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Labels[CompletionIndex]
	if !ok {
		v, ok = p.Annotations[CompletionIndex]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return i
}

// shardsByIndex keeps one shard pod per completion index, a ready one
// when there is one.
func shardsByIndex(pods []corev1.Pod) map[int]corev1.Pod {
	m := map[int]corev1.Pod{}
	for _, p := range pods {
		if p.Labels[LabelComponent] != ComponentShard {
			continue
		}
		i := completionIndex(&p)
		if i < 0 {
			continue
		}
		if have, ok := m[i]; ok && (podReady(&have) || !podReady(&p) && have.CreationTimestamp.After(p.CreationTimestamp.Time)) {
			continue
		}
		m[i] = p
	}
	return m
}

// ShardPods returns the run's shard pods, one per completion index, in
// index order (a missing index is left out: compare with the length).
func (r *Run) ShardPods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := r.pods(ctx, ComponentShard)
	if err != nil {
		return nil, err
	}
	m := shardsByIndex(pods)
	out := make([]corev1.Pod, 0, len(m))
	for i := 0; len(out) < len(m); i++ {
		if p, ok := m[i]; ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// ProxyPods returns dependency dep's proxy pods, by name.
func (r *Run) ProxyPods(ctx context.Context, dep string) ([]corev1.Pod, error) {
	if r.ProxyService(dep) == "" {
		return nil, fmt.Errorf("kube: run %s has no proxy for dependency %q", r.ID, dep)
	}
	pods, err := r.pods(ctx, ComponentProxy)
	if err != nil {
		return nil, err
	}
	want := dnsLabel(dep, 40)
	out := slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.Labels[LabelDependency] != want })
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState says why pod is not ready: its phase, its conditions that are
// not True, and its containers' waiting or terminated states.
func podState(p *corev1.Pod, component, dep string, index int) PodState {
	s := PodState{Component: component, Dependency: dep, Index: index, Pod: p.Name, Phase: p.Status.Phase}
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		s.Failed = true
	}
	if p.Status.Reason != "" {
		parts = append(parts, p.Status.Reason+": "+p.Status.Message)
	}
	if p.Spec.NodeName == "" {
		parts = append(parts, "not scheduled")
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			continue
		}
		part := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			part += " (" + c.Reason
			if c.Message != "" {
				part += ": " + c.Message
			}
			part += ")"
		}
		parts = append(parts, part)
	}
	if len(p.Status.Conditions) == 0 {
		parts = append(parts, "no conditions")
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message))
		case c.State.Terminated != nil:
			t := c.State.Terminated
			parts = append(parts, fmt.Sprintf("container %s terminated: %s (exit %d) %s", c.Name, t.Reason, t.ExitCode, t.Message))
			// a shard is not restarted; a proxy is
			s.Failed = s.Failed || component == ComponentShard
		case c.State.Running != nil && !c.Ready:
			parts = append(parts, fmt.Sprintf("container %s running, not ready (restarts %d)", c.Name, c.RestartCount))
		}
	}
	s.Reason = strings.Join(parts, ", ")
	return s
}
