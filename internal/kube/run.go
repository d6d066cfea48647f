//go:build kube

package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default ports of the components' containers.
const (
	DataPort    = 8080 // a proxy's data port: what the user's service calls
	ControlPort = 8081 // a proxy's control port (/healthz, faults)
	ShardPort   = 7070 // a shard's control port (/healthz, the load)
)

// Spec is what a run creates.
type Spec struct {
	// RunID names the run: its objects' names and LabelRun derive from it.
	RunID string
	// Image is the bulkheadlab image that the proxies and shards run.
	Image      string
	PullPolicy corev1.PullPolicy
	Proxies    []Proxy
	// Shards is the number of load pods (an Indexed Job's completions);
	// ShardArgs their container's arguments (e.g. shard --listen :7070),
	// ShardPort the port of their /healthz (0: ShardPort).
	Shards    int
	ShardArgs []string
	ShardPort int32
	// ShardCPU, if set, is each shard pod's CPU request (a load generator
	// sends about 4,000 requests/s per core validly).
	ShardCPU resource.Quantity
	// TTL is the Lease's duration: a run not renewed for that long is
	// expired, and Clean deletes it (0: one minute).
	TTL time.Duration
	// MaxDuration bounds the shard pods' life (the Job's
	// activeDeadlineSeconds), so that a killed runner's load stops on its
	// own (0: two hours).
	MaxDuration time.Duration
	// Labels are added to every object and pod.
	Labels map[string]string
	// Token is the run's secret (internal/ctlauth): kept in a Secret owned
	// by the Lease, it reaches the proxies and shards as the environment
	// variable BULKHEADLAB_TOKEN from that Secret, never in an argument.
	// Required.
	Token string
	// ShardTargets are the URLs the shards may send to (the run's
	// targets), kept in the Secret too: a shard refuses any other.
	// Required with Shards.
	ShardTargets []string
	// ControlFrom are the CIDRs from which the proxies' and shards'
	// control ports take connections (the NetworkPolicy's): where the API
	// server's pod proxy comes from. Empty: any source (the token alone
	// guards them).
	ControlFrom []string
}

// Proxy is one dependency's fault proxy.
type Proxy struct {
	Dependency string
	Replicas   int32 // 0: 1
	// Args are the container's arguments (e.g. proxy --listen :8080
	// --control :8081 --upstream URL --allow-remote --name DEP).
	Args        []string
	DataPort    int32 // 0: DataPort
	ControlPort int32 // 0: ControlPort
}

// Run is a run's objects on the cluster.
type Run struct {
	c     *Cluster
	ID    string // Spec.RunID
	Label string // LabelRun's value
	// Lease is the name of the parent object.
	Lease string
	spec  Spec
	owner metav1.OwnerReference
}

func (s *Spec) defaults() error {
	if s.RunID == "" {
		return errors.New("kube: empty run id")
	}
	if s.Image == "" {
		return errors.New("kube: no image")
	}
	if s.Token == "" {
		return errors.New("kube: no token")
	}
	if s.Shards > 0 && len(s.ShardTargets) == 0 {
		return errors.New("kube: shards without targets")
	}
	if s.TTL <= 0 {
		s.TTL = time.Minute
	}
	if s.MaxDuration <= 0 {
		s.MaxDuration = 2 * time.Hour
	}
	if s.ShardPort == 0 {
		s.ShardPort = ShardPort
	}
	seen := map[string]string{}
	for i := range s.Proxies {
		p := &s.Proxies[i]
		if p.Replicas <= 0 {
			p.Replicas = 1
		}
		if p.DataPort == 0 {
			p.DataPort = DataPort
		}
		if p.ControlPort == 0 {
			p.ControlPort = ControlPort
		}
		name := proxyName(RunLabel(s.RunID), p.Dependency)
		if other, ok := seen[name]; ok {
			return fmt.Errorf("kube: dependencies %q and %q have the same name %s", other, p.Dependency, name)
		}
		seen[name] = p.Dependency
	}
	return nil
}

// labels returns the labels of the run's objects of component ("" for
// the Lease) and of dependency dep ("" for none).
func (r *Run) labels(component, dep string) map[string]string {
	l := maps.Clone(r.spec.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelRun] = r.Label
	l[LabelManagedBy] = ManagedBy
	l[LabelName] = "bulkheadlab"
	l[LabelInstance] = r.Label
	if component != "" {
		l[LabelComponent] = component
	}
	if dep != "" {
		l[LabelDependency] = dnsLabel(dep, 40)
	}
	return l
}

func (r *Run) meta(name, component, dep string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       r.c.Namespace,
		Labels:          r.labels(component, dep),
		OwnerReferences: []metav1.OwnerReference{r.owner},
	}
}

// Create creates a run's objects: the Lease first (the parent), then each
// proxy's Service and Deployment, then the shards' Indexed Job. On an
// error it deletes what it created.
func (c *Cluster) Create(ctx context.Context, spec Spec) (*Run, error) {
	spec.Proxies = append([]Proxy(nil), spec.Proxies...)
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	label := RunLabel(spec.RunID)
	r := &Run{c: c, ID: spec.RunID, Label: label, Lease: leaseName(label), spec: spec}
	if err := r.create(ctx); err != nil {
		if r.owner.UID == "" {
			return nil, err // no Lease: nothing created (and another run's may exist)
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if derr := r.Delete(dctx); derr != nil {
			return nil, fmt.Errorf("%w (and deleting what was created: %v)", err, derr)
		}
		return nil, err
	}
	return r, nil
}

func (r *Run) create(ctx context.Context) error {
	ns := r.c.Namespace
	now := metav1.NowMicro()
	ttl := int32(r.spec.TTL.Round(time.Second) / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	holder := r.c.Identity
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: r.Lease, Namespace: ns, Labels: r.labels("", "")},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &holder,
			LeaseDurationSeconds: &ttl,
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	created, err := r.c.Client.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kube: run %s already exists in namespace %s (Lease %s): %w", r.ID, ns, r.Lease, err)
		}
		return fmt.Errorf("kube: creating Lease %s: %w", r.Lease, err)
	}
	r.owner = metav1.OwnerReference{
		APIVersion: "coordination.k8s.io/v1",
		Kind:       "Lease",
		Name:       created.Name,
		UID:        created.UID,
		Controller: new(true),
	}
	if _, err := r.c.Client.CoreV1().Secrets(ns).Create(ctx, r.secret(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube: creating the run's Secret: %w", err)
	}
	if _, err := r.c.Client.NetworkingV1().NetworkPolicies(ns).Create(ctx, r.networkPolicy(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube: creating the run's NetworkPolicy: %w", err)
	}
	for _, p := range r.spec.Proxies {
		if _, err := r.c.Client.CoreV1().Services(ns).Create(ctx, r.proxyService(p), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kube: creating the Service of dependency %s: %w", p.Dependency, err)
		}
		if _, err := r.c.Client.AppsV1().Deployments(ns).Create(ctx, r.proxyDeployment(p), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kube: creating the Deployment of dependency %s: %w", p.Dependency, err)
		}
	}
	if r.spec.Shards > 0 {
		if _, err := r.c.Client.BatchV1().Jobs(ns).Create(ctx, r.shardJob(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kube: creating the shards' Job: %w", err)
		}
	}
	return nil
}

func (r *Run) proxySelector(p Proxy) map[string]string {
	return map[string]string{
		LabelRun:        r.Label,
		LabelComponent:  ComponentProxy,
		LabelDependency: dnsLabel(p.Dependency, 40),
	}
}

func (r *Run) proxyService(p Proxy) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: r.meta(proxyName(r.Label, p.Dependency), ComponentProxy, p.Dependency),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: r.proxySelector(p),
			Ports: []corev1.ServicePort{
				{Name: "data", Port: p.DataPort, TargetPort: intstr.FromString("data"), Protocol: corev1.ProtocolTCP},
				{Name: "control", Port: p.ControlPort, TargetPort: intstr.FromString("control"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// grace is the pods' termination grace period: short, their state is
// the runner's, not theirs.
const grace = 5

func (r *Run) container(name string, args []string, ports []corev1.ContainerPort, health int32) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           r.spec.Image,
		ImagePullPolicy: r.spec.PullPolicy,
		Args:            args,
		Ports:           ports,
		Env: []corev1.EnvVar{
			{Name: "BULKHEADLAB_RUN", Value: r.ID},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			r.fromSecret(EnvToken, SecretKeyToken),
		},
		// What the restricted Pod Security Standard asks of a container:
		// the image's user (65532), no privilege, no capability, the
		// runtime's seccomp profile; nothing of it writes to its root.
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             new(true),
			RunAsUser:                new(int64(65532)),
			AllowPrivilegeEscalation: new(false),
			ReadOnlyRootFilesystem:   new(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromInt32(health),
			}},
			PeriodSeconds:    1,
			FailureThreshold: 3,
		},
	}
}

func (r *Run) proxyDeployment(p Proxy) *appsv1.Deployment {
	replicas := p.Replicas
	c := r.container("proxy", p.Args, []corev1.ContainerPort{
		{Name: "data", ContainerPort: p.DataPort, Protocol: corev1.ProtocolTCP},
		{Name: "control", ContainerPort: p.ControlPort, Protocol: corev1.ProtocolTCP},
	}, p.ControlPort)
	c.Env = append(c.Env, corev1.EnvVar{Name: "BULKHEADLAB_DEPENDENCY", Value: p.Dependency})
	return &appsv1.Deployment{
		ObjectMeta: r.meta(proxyName(r.Label, p.Dependency), ComponentProxy, p.Dependency),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: r.proxySelector(p)},
			// a proxy's replicas are replaced all at once: a run never
			// rolls them.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.labels(ComponentProxy, p.Dependency)},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					TerminationGracePeriodSeconds: new(int64(grace)),
					AutomountServiceAccountToken:  new(false),
				},
			},
		},
	}
}

func (r *Run) shardJob() *batchv1.Job {
	n := int32(r.spec.Shards)
	mode := batchv1.IndexedCompletion
	deadline := int64(r.spec.MaxDuration.Round(time.Second) / time.Second)
	c := r.container("shard", r.spec.ShardArgs, []corev1.ContainerPort{
		{Name: "shard", ContainerPort: r.spec.ShardPort, Protocol: corev1.ProtocolTCP},
	}, r.spec.ShardPort)
	c.Env = append(c.Env, corev1.EnvVar{Name: "BULKHEADLAB_SHARDS", Value: strconv.Itoa(r.spec.Shards)},
		r.fromSecret(EnvShardTargets, SecretKeyTargets))
	if q := r.spec.ShardCPU; !q.IsZero() {
		// A request, not a limit: a limit's CFS throttling would show as
		// schedule lag, and the run would be INVALID for it.
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q}
	}
	return &batchv1.Job{
		ObjectMeta: r.meta(shardJobName(r.Label), ComponentShard, ""),
		Spec: batchv1.JobSpec{
			CompletionMode:          &mode,
			Completions:             &n,
			Parallelism:             &n,
			BackoffLimit:            new(int32(0)),
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: new(int32(600)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.labels(ComponentShard, "")},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					RestartPolicy:                 corev1.RestartPolicyNever,
					ActiveDeadlineSeconds:         &deadline,
					TerminationGracePeriodSeconds: new(int64(grace)),
					AutomountServiceAccountToken:  new(false),
				},
			},
		},
	}
}

// ProxyService is the name of dependency dep's Service ("" when the run
// has no such proxy).
func (r *Run) ProxyService(dep string) string {
	for _, p := range r.spec.Proxies {
		if p.Dependency == dep {
			return proxyName(r.Label, dep)
		}
	}
	return ""
}

// ProxyURL is the URL at which a pod of the cluster reaches dependency
// dep's proxy (http://SERVICE.NAMESPACE.svc:PORT): what the user's service
// is pointed at. "" when the run has no such proxy.
func (r *Run) ProxyURL(dep string) string {
	for _, p := range r.spec.Proxies {
		if p.Dependency == dep {
			return fmt.Sprintf("http://%s.%s.svc:%d", proxyName(r.Label, dep), r.c.Namespace, p.DataPort)
		}
	}
	return ""
}

// Renew renews the run's Lease once (its renewTime becomes now).
func (r *Run) Renew(ctx context.Context) error {
	patch := fmt.Appendf(nil, `{"spec":{"renewTime":%q}}`, metav1.NowMicro().UTC().Format(metav1.RFC3339Micro))
	_, err := r.c.Client.CoordinationV1().Leases(r.c.Namespace).Patch(ctx, r.Lease, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("kube: renewing Lease %s: %w", r.Lease, err)
	}
	return nil
}

// KeepAlive renews the run's Lease every third of its TTL until ctx ends
// (then it returns nil). A failed renewal is tried again at the next tick;
// it returns an error when the Lease is gone (the run was cleaned) or when
// no renewal succeeded for a whole TTL (the run may be cleaned any time).
func (r *Run) KeepAlive(ctx context.Context) error {
	tick := time.NewTicker(max(r.spec.TTL/3, 100*time.Millisecond))
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := r.Renew(ctx)
		switch {
		case err == nil:
			last = time.Now()
		case ctx.Err() != nil:
			return nil
		case apierrors.IsNotFound(err):
			return err
		case time.Since(last) >= r.spec.TTL:
			return fmt.Errorf("kube: Lease %s not renewed for %s: %w", r.Lease, time.Since(last).Round(time.Second), err)
		}
	}
}
