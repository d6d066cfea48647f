//go:build kube

package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// CompletionIndex is the label, annotation and (as JOB_COMPLETION_INDEX)
// env variable of an Indexed Job's pods.
const CompletionIndex = "batch.kubernetes.io/job-completion-index"

// Controller is the tests' stand-in for kube-controller-manager (which
// envtest does not run), and for the scheduler: it turns each Deployment
// into spec.replicas pods of its template (owned by the Deployment
// itself, without ReplicaSets; a changed template replaces them all), and
// each Indexed Job into one pod per completion index (label and
// annotation CompletionIndex, env JOB_COMPLETION_INDEX), puts the pods on
// the fake nodes, and writes the Deployments' status (replicas,
// updatedReplicas, readyReplicas, availableReplicas, observedGeneration)
// and the Jobs' (active, ready, succeeded, failed, startTime) from their
// pods. It creates no pod again after a failure, runs no rollout
// strategy, no garbage collection and no Job completion: tests delete
// what they create.
type Controller struct {
	client  kubernetes.Interface
	nodes   []string
	factory informers.SharedInformerFactory
	queue   workqueue.TypedRateLimitingInterface[key]
	pods    cache.Indexer
	// services: the Services (with Options.Endpoints only).
	services cache.Indexer

	// created are the pods created per owner that the informer's cache
	// has not shown yet: an owner is not synced again until it has (the
	// "expectations" of Kubernetes' controllers), lest it create twice.
	created map[types.UID]map[string]time.Time

	// endpoints: keep every Service's EndpointSlice (see syncService).
	endpoints bool

	mu         sync.Mutex
	neverReady map[int]func(*corev1.Pod) bool
	next       int
	placed     int
}

type key struct {
	kind            string // "deployment", "job" or "service"
	namespace, name string
}

const byOwner = "owner"

func newController(client kubernetes.Interface, nodes []string) *Controller {
	return &Controller{
		client:     client,
		nodes:      nodes,
		neverReady: map[int]func(*corev1.Pod) bool{},
		created:    map[types.UID]map[string]time.Time{},
	}
}

func (c *Controller) addNeverReady(match func(*corev1.Pod) bool) (remove func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.neverReady[id] = match
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.neverReady, id)
	}
}

// start starts the informers and the worker; stop ends them.
func (c *Controller) start() (stop func(), err error) {
	c.factory = informers.NewSharedInformerFactory(c.client, 0)
	c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[key](5*time.Millisecond, time.Second))
	enqueue := func(kind string) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if m, ok := obj.(metav1.Object); ok {
				c.queue.Add(key{kind, m.GetNamespace(), m.GetName()})
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
	}
	deployments := c.factory.Apps().V1().Deployments().Informer()
	jobs := c.factory.Batch().V1().Jobs().Informer()
	pods := c.factory.Core().V1().Pods().Informer()
	if _, err := deployments.AddEventHandler(enqueue("deployment")); err != nil {
		return nil, err
	}
	if _, err := jobs.AddEventHandler(enqueue("job")); err != nil {
		return nil, err
	}
	owner := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if c.endpoints {
			c.enqueueServices(p.Namespace)
		}
		if ref := metav1.GetControllerOf(p); ref != nil {
			switch ref.Kind {
			case "Deployment":
				c.queue.Add(key{"deployment", p.Namespace, ref.Name})
			case "Job":
				c.queue.Add(key{"job", p.Namespace, ref.Name})
			}
		}
	}
	if c.endpoints {
		if err := c.watchServices(); err != nil {
			return nil, err
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: owner, UpdateFunc: func(_, obj any) { owner(obj) }, DeleteFunc: owner,
	}); err != nil {
		return nil, err
	}
	if err := pods.AddIndexers(cache.Indexers{byOwner: func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		if ref := metav1.GetControllerOf(p); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	c.pods = pods.GetIndexer()
	ctx, cancel := context.WithCancel(context.Background())
	c.factory.Start(ctx.Done())
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("kubetest: controller: %v cache not synced", typ)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c.work(ctx) {
		}
	}()
	return func() {
		cancel()
		c.queue.ShutDown()
		<-done
		c.factory.Shutdown()
	}, nil
}

func (c *Controller) work(ctx context.Context) bool {
	k, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(k)
	var err error
	switch k.kind {
	case "deployment":
		err = c.syncDeployment(ctx, k)
	case "job":
		err = c.syncJob(ctx, k)
	case "service":
		err = c.syncService(ctx, k)
	}
	if err == errNotSeen {
		c.queue.AddAfter(k, 5*time.Millisecond)
		return true
	}
	if err != nil && ctx.Err() == nil {
		c.queue.AddRateLimited(k)
		return true
	}
	c.queue.Forget(k)
	return true
}

// errNotSeen: pods created are not in the cache yet.
var errNotSeen = fmt.Errorf("kubetest: controller: created pods not seen yet")

// owned returns the pods whose controller has uid, not being deleted, or
// errNotSeen.
func (c *Controller) owned(uid types.UID) ([]*corev1.Pod, error) {
	objs, _ := c.pods.ByIndex(byOwner, string(uid))
	var out []*corev1.Pod
	seen := map[string]bool{}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		seen[p.Name] = true
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	for name, at := range c.created[uid] {
		// (a pod deleted at once may never be seen: expected for 5 s)
		if !seen[name] && time.Since(at) < 5*time.Second {
			return nil, errNotSeen
		}
		delete(c.created[uid], name)
	}
	return out, nil
}

// create creates pod and expects it in the cache.
func (c *Controller) create(ctx context.Context, uid types.UID, p *corev1.Pod) error {
	created, err := c.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if c.created[uid] == nil {
		c.created[uid] = map[string]time.Time{}
	}
	c.created[uid][created.Name] = time.Now()
	return nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return p.Status.Phase == corev1.PodRunning && c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// newPod makes a pod of template owned by owner, changed by mutate, on
// the next fake node.
func (c *Controller) newPod(ns, generateName string, template *corev1.PodTemplateSpec, owner metav1.OwnerReference, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    generateName,
			Namespace:       ns,
			Labels:          map[string]string{},
			Annotations:     map[string]string{},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	for k, v := range template.Labels {
		p.Labels[k] = v
	}
	for k, v := range template.Annotations {
		p.Annotations[k] = v
	}
	mutate(p)
	c.mu.Lock()
	p.Spec.NodeName = c.nodes[c.placed%len(c.nodes)]
	c.placed++
	for _, match := range c.neverReady {
		if match(p) {
			p.Labels[NeverReadyLabel] = "true"
		}
	}
	c.mu.Unlock()
	return p
}

func templateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

func (c *Controller) syncDeployment(ctx context.Context, k key) error {
	d, err := c.client.AppsV1().Deployments(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || d.DeletionTimestamp != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	hash := templateHash(&d.Spec.Template)
	var current []*corev1.Pod
	pods, err := c.owned(d.UID)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || int32(len(current)) >= want {
			if err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		current = append(current, p)
	}
	owner := *metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	for n := int32(len(current)); n < want; n++ {
		p := c.newPod(d.Namespace, d.Name+"-"+hash+"-", &d.Spec.Template, owner, func(p *corev1.Pod) {
			p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		})
		if err := c.create(ctx, d.UID, p); err != nil {
			return err
		}
	}
	var readyN int32
	for _, p := range current {
		if ready(p) {
			readyN++
		}
	}
	s := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           int32(len(current)),
		UpdatedReplicas:    int32(len(current)),
		ReadyReplicas:      readyN,
		AvailableReplicas:  readyN,
	}
	s.UnavailableReplicas = max(0, want-readyN)
	if d.Status.ObservedGeneration == s.ObservedGeneration && d.Status.Replicas == s.Replicas &&
		d.Status.UpdatedReplicas == s.UpdatedReplicas && d.Status.ReadyReplicas == s.ReadyReplicas &&
		d.Status.AvailableReplicas == s.AvailableReplicas && d.Status.UnavailableReplicas == s.UnavailableReplicas {
		return nil
	}
	d.Status = s
	_, err = c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

func (c *Controller) syncJob(ctx context.Context, k key) error {
	j, err := c.client.BatchV1().Jobs(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || j.DeletionTimestamp != nil {
		return err
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return nil
	}
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion || j.Spec.Completions == nil {
		return nil // only Indexed Jobs
	}
	pods, err := c.owned(j.UID)
	if err != nil {
		return err
	}
	have := map[int]bool{}
	var active, readyN, succeeded, failed int32
	for _, p := range pods {
		if i, err := strconv.Atoi(p.Annotations[CompletionIndex]); err == nil {
			have[i] = true
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
		default:
			active++
			if ready(p) {
				readyN++
			}
		}
	}
	owner := *metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))
	for i := range int(*j.Spec.Completions) {
		if have[i] {
			continue
		}
		idx := strconv.Itoa(i)
		p := c.newPod(j.Namespace, fmt.Sprintf("%s-%d-", j.Name, i), &j.Spec.Template, owner, func(p *corev1.Pod) {
			p.Labels[CompletionIndex] = idx
			p.Annotations[CompletionIndex] = idx
			p.Spec.Hostname = fmt.Sprintf("%s-%d", j.Name, i)
			for ci := range p.Spec.Containers {
				cs := &p.Spec.Containers[ci]
				cs.Env = append(slices.Clone(cs.Env), corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", Value: idx})
			}
		})
		if err := c.create(ctx, j.UID, p); err != nil {
			return err
		}
		active++
	}
	s := j.Status.DeepCopy()
	if s.StartTime == nil {
		now := metav1.Now()
		s.StartTime = &now
	}
	s.Active, s.Succeeded, s.Failed = active, succeeded, failed
	s.Ready = &readyN
	if j.Status.StartTime != nil && j.Status.Active == s.Active && j.Status.Succeeded == s.Succeeded &&
		j.Status.Failed == s.Failed && j.Status.Ready != nil && *j.Status.Ready == readyN {
		return nil
	}
	j.Status = *s
	_, err = c.client.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
	return err
}
