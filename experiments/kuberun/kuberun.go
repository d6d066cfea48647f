//go:build kube

// Package kuberun runs an experiment's matrix on a Kubernetes cluster: the
// fault proxies as a Deployment and a Service per dependency, the load as
// an Indexed Job of shard pods (loadgen/shards), all of them the objects
// of one run (internal/kube) that Close deletes. The runner stays where it
// is (a laptop, a CI job) and reaches every pod through the API server's
// pod proxy: it switches the faults on each proxy replica, releases the
// shards together and merges their results, so the verdicts are those of
// the runner's own experiments, for the load of the whole fleet.
//
// Built only with -tags kube (see internal/kube).
package kuberun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults of Options.
const (
	DefaultShards       = 1
	DefaultReadyTimeout = 3 * time.Minute
	DefaultTTL          = time.Minute
)

// Options configure a run on a cluster.
type Options struct {
	// Image is the bulkheadlab image the proxies and shards run (see
	// scripts/image.sh), of the runner's shard protocol (shards.Protocol).
	Image      string
	PullPolicy string
	// Shards is the number of load pods; 0 means DefaultShards.
	Shards int
	// ProxyReplicas is each proxy's Deployment's replicas; 0 means 1.
	ProxyReplicas int32
	// Replicas overrides ProxyReplicas per dependency.
	Replicas map[string]int32
	// ShardCPU, if set, is each shard pod's CPU request ("2", "1500m").
	ShardCPU string
	// Patches point env variables of the user's Deployments (one per mode:
	// each mode's service is its own Deployment) at the proxies for the
	// run, and put them back after, in reverse order.
	Patches []*EnvPatch
	// ReadyTimeout bounds the wait for every pod; 0 means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// TTL is the run's lease: a run whose runner was killed is cleaned
	// that long after (by the next run, or `bulkheadlab kube clean`).
	TTL time.Duration
	// MaxDuration bounds the pods' life; 0: the kube package's default.
	MaxDuration time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// ControlFrom are the CIDRs the API server's pod proxy reaches the
	// pods from (the run's NetworkPolicy lets only them in on the control
	// ports); empty: the API server's address when the kubeconfig names it
	// by IP, else any source.
	ControlFrom []string
}

// shardTargets are the URLs every run of p loads: the shards' allow-list.
func shardTargets(p *plan.Plan) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(run string, a plan.Address) error {
		u, err := a.Resolve(nil)
		if err != nil {
			return fmt.Errorf("run %s: target: %w", run, err)
		}
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
		return nil
	}
	for _, run := range p.Runs {
		eps := run.Load.Endpoints
		if run.Load.Canary != nil {
			eps = append(slices.Clone(eps), *run.Load.Canary)
		}
		for _, e := range eps {
			addrs := e.Targets
			if len(addrs) == 0 {
				addrs = []plan.Address{e.Target}
			}
			for _, a := range addrs {
				if err := add(run.ID, a); err != nil {
					return nil, err
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// apiServerCIDR is the API server's address as a /32 (/128), when the
// cluster's config names it by IP; "" otherwise.
func apiServerCIDR(c *kube.Cluster) string {
	if c.Config == nil {
		return ""
	}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return ""
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return ""
	}
	return netip.PrefixFrom(ip, ip.BitLen()).String()
}

// EnvPatch points env variables of a container of the user's Deployment
// at the proxies: Env maps a variable to a dependency's name.
type EnvPatch struct {
	Deployment, Container string
	Env                   map[string]string
}

// ParseEnvPatch reads DEPLOYMENT[/CONTAINER]:VAR=DEP[,VAR=DEP…].
func ParseEnvPatch(s string) (*EnvPatch, error) {
	target, vars, ok := strings.Cut(s, ":")
	if !ok || target == "" || vars == "" {
		return nil, fmt.Errorf("%q: want DEPLOYMENT[/CONTAINER]:VAR=DEPENDENCY[,VAR=DEPENDENCY…]", s)
	}
	p := &EnvPatch{Env: map[string]string{}}
	p.Deployment, p.Container, _ = strings.Cut(target, "/")
	for _, kv := range strings.Split(vars, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%q: %q is not VAR=DEPENDENCY", s, kv)
		}
		p.Env[k] = v
	}
	return p, nil
}

// Experiment is a plan's objects on a cluster, ready: its Launcher and
// Remote go to the runner. Close deletes them.
type Experiment struct {
	Run *kube.Run
	// Launcher gives every run the cluster's proxies.
	Launcher runner.Launcher
	// Remote sends every run's load from the shard pods.
	Remote *shards.Fleet

	cluster   *kube.Cluster
	stopAlive context.CancelFunc
	aliveErr  chan error
	restores  []func(context.Context) error
	closeOnce sync.Once
	closeErr  error
}

// proxyOf is one dependency's proxy as the plan has it.
type proxyOf struct {
	component, dependency, upstream string
}

// proxies collects the plan's proxies; every run must have the same ones,
// and nothing else: in a cluster the service under test and its
// dependencies are the user's.
func proxies(p *plan.Plan) ([]proxyOf, error) {
	byComp := map[string]proxyOf{}
	for _, run := range p.Runs {
		for _, c := range run.Components {
			switch {
			case c.Proxy != nil:
				cc, err := c.Resolve(nil)
				if err != nil {
					return nil, fmt.Errorf("run %s: proxy %s: %w (in a cluster an upstream is a URL the proxy pods reach)", run.ID, c.Name, err)
				}
				px := proxyOf{component: c.Name, dependency: c.Proxy.Name, upstream: cc.Proxy.Upstream.URL}
				if old, ok := byComp[c.Name]; ok && old != px {
					return nil, fmt.Errorf("run %s: proxy %s goes to %s, another run's to %s: one proxy per dependency serves every run", run.ID, c.Name, px.upstream, old.upstream)
				}
				byComp[c.Name] = px
			case c.Command != nil:
				return nil, fmt.Errorf("run %s: a mode's external.start (%s) cannot start the service in a cluster: deploy each mode's service and give its targets", run.ID, strings.Join(c.Command.Argv, " "))
			default:
				return nil, fmt.Errorf("run %s: component %s runs on this machine; a Kubernetes run takes an external spec (the user's service and dependencies in the cluster)", run.ID, c.Name)
			}
		}
	}
	out := make([]proxyOf, 0, len(byComp))
	for _, px := range byComp {
		out = append(out, px)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].component < out[j].component })
	return out, nil
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Start creates the plan's objects on c under runID, waits until every
// pod is ready, points the user's Deployment at the proxies if asked, and
// returns the Experiment. On an error nothing is left behind. version is
// the shards' protocol (shards.Protocol; the pods' must be the same).
func Start(ctx context.Context, c *kube.Cluster, p *plan.Plan, runID, version string, o Options) (*Experiment, error) {
	pxs, err := proxies(p)
	if err != nil {
		return nil, err
	}
	if o.Image == "" {
		return nil, errors.New("no image: build one with scripts/image.sh and give it with --image")
	}
	if cleaned, err := c.Clean(ctx, false); err != nil {
		o.logf("kubernetes: cleaning expired runs: %v", err)
	} else if len(cleaned) > 0 {
		o.logf("kubernetes: deleted expired runs %s", strings.Join(cleaned, ", "))
	}
	targets, err := shardTargets(p)
	if err != nil {
		return nil, err
	}
	// The run's secret: in a Secret the Lease owns, read by the pods from
	// it, sent by this process alone.
	token := ctlauth.NewToken()
	spec := kube.Spec{RunID: runID, Image: o.Image, Shards: max(o.Shards, 0), TTL: o.TTL, MaxDuration: o.MaxDuration,
		ShardArgs: []string{"shard", "--listen", fmt.Sprintf(":%d", kube.ShardPort), "--allow-remote"},
		Token:     token, ShardTargets: targets, ControlFrom: o.ControlFrom}
	if len(spec.ControlFrom) == 0 {
		if cidr := apiServerCIDR(c); cidr != "" {
			spec.ControlFrom = []string{cidr}
		} else {
			o.logf("kubernetes: the API server's address is a name: the run's NetworkPolicy lets any source reach the control ports (the token guards them); give --kube-control-from to narrow it")
		}
	}
	if spec.Shards == 0 {
		spec.Shards = DefaultShards
	}
	if spec.TTL == 0 {
		spec.TTL = DefaultTTL
	}
	if o.ShardCPU != "" {
		q, err := resource.ParseQuantity(o.ShardCPU)
		if err != nil || q.Sign() <= 0 {
			return nil, fmt.Errorf("shard CPU %q is not a positive quantity (2, 1500m)", o.ShardCPU)
		}
		spec.ShardCPU = q
	}
	if o.PullPolicy != "" {
		spec.PullPolicy = corePullPolicy(o.PullPolicy)
	}
	for _, px := range pxs {
		replicas := o.ProxyReplicas
		if n, ok := o.Replicas[px.dependency]; ok {
			replicas = n
		}
		spec.Proxies = append(spec.Proxies, kube.Proxy{Dependency: px.dependency, Replicas: replicas,
			Args: []string{"proxy", "--listen", fmt.Sprintf(":%d", kube.DataPort), "--control", fmt.Sprintf(":%d", kube.ControlPort),
				"--upstream", px.upstream, "--allow-remote", "--name", px.dependency}})
	}
	o.logf("kubernetes: creating run %s in namespace %s: %d proxies, %d shards, image %s", runID, c.Namespace, len(pxs), spec.Shards, o.Image)
	run, err := c.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	e := &Experiment{Run: run, cluster: c, aliveErr: make(chan error, 1)}
	actx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stopAlive = stop
	go func() { e.aliveErr <- run.KeepAlive(actx) }()
	fail := func(err error) (*Experiment, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := e.Close(dctx); cerr != nil {
			err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
		}
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, orDefault(o.ReadyTimeout, DefaultReadyTimeout))
	err = run.WaitReady(rctx)
	cancel()
	if err != nil {
		return fail(err)
	}
	o.logf("kubernetes: every pod ready")
	for _, px := range pxs {
		o.logf("kubernetes: the proxy of %s is the Service %s", px.dependency, run.ProxyURL(px.dependency))
	}
	for _, pt := range o.Patches {
		if err := e.patch(ctx, run, pt, pxs); err != nil {
			return fail(err)
		}
		o.logf("kubernetes: deployment %s points at the proxies (put back at the end)", pt.Deployment)
	}
	l := &launcher{urls: map[string]string{}, controls: map[string]string{}, replicas: map[string][]runner.Control{}}
	var reachable []reachTarget
	for _, px := range pxs {
		pods, err := run.ProxyPods(ctx, px.dependency)
		if err != nil {
			return fail(err)
		}
		for i := range pods {
			u, rt, err := c.PodProxy(&pods[i], kube.ControlPort)
			if err != nil {
				return fail(err)
			}
			hc := ctlauth.Client(&http.Client{Transport: rt, Timeout: 10 * time.Second}, token)
			l.replicas[px.component] = append(l.replicas[px.component], runner.Control{Name: pods[i].Name, URL: u, Client: hc})
			reachable = append(reachable, newReachTarget(&pods[i], "the proxy of "+px.dependency+", control port", kube.ControlPort, u, hc))
		}
		if len(l.replicas[px.component]) == 0 {
			return fail(fmt.Errorf("the proxy of %s has no pod", px.dependency))
		}
		l.urls[px.component] = run.ProxyURL(px.dependency)
		l.controls[px.component] = l.replicas[px.component][0].URL
	}
	pods, err := run.ShardPods(ctx)
	if err != nil {
		return fail(err)
	}
	fleet := &shards.Fleet{Version: version, Token: token}
	for i := range pods {
		u, rt, err := c.PodProxy(&pods[i], kube.ShardPort)
		if err != nil {
			return fail(err)
		}
		hc := &http.Client{Transport: rt}
		fleet.Endpoints = append(fleet.Endpoints, shards.Endpoint{Name: pods[i].Name, URL: u, Client: hc})
		reachable = append(reachable, newReachTarget(&pods[i], fmt.Sprintf("shard %d", i), kube.ShardPort, u, hc))
	}
	// Ready is the kubelet's word; the runner reaches every pod through the
	// API server, which may not (a network policy, a node the API server
	// has no route to): once, before any load.
	if err := reachAll(ctx, reachable); err != nil {
		return fail(fmt.Errorf("the runner cannot reach every pod through the API server's pod proxy; no load was sent:\n%w", err))
	}
	o.logf("kubernetes: every pod answers through the API server (%d proxies' control ports, %d shards)", len(reachable)-len(pods), len(pods))
	e.Launcher, e.Remote = l, fleet
	return e, nil
}

// patch points pt's Deployment at the proxies and records how to put it
// back.
func (e *Experiment) patch(ctx context.Context, run *kube.Run, pt *EnvPatch, pxs []proxyOf) error {
	env := map[string]string{}
	for k, dep := range pt.Env {
		u := run.ProxyURL(dep)
		if u == "" {
			return fmt.Errorf("--patch-env %s: %s=%s: no proxy of that dependency (the spec's are %s)", pt.Deployment, k, dep, depNames(pxs))
		}
		env[k] = u
	}
	restore, err := run.PatchEnv(ctx, pt.Deployment, pt.Container, env)
	if err != nil {
		return err
	}
	e.restores = append(e.restores, restore)
	return nil
}

// Close puts the user's Deployment back, stops renewing the lease and
// deletes every object of the run; it is idempotent. ctx should outlive a
// cancelled run's (Ctrl-C): use a fresh one with a deadline.
func (e *Experiment) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		var errs []error
		for i := len(e.restores) - 1; i >= 0; i-- {
			if err := e.restores[i](ctx); err != nil {
				errs = append(errs, fmt.Errorf("putting the deployment back: %w", err))
			}
		}
		e.stopAlive()
		if err := <-e.aliveErr; err != nil {
			errs = append(errs, err)
		}
		if err := e.Run.Delete(ctx); err != nil {
			errs = append(errs, err)
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// launcher gives every run the cluster's proxies: nothing starts, nothing
// stops (faults are cleared by the runner after each run).
type launcher struct {
	urls, controls map[string]string
	replicas       map[string][]runner.Control
}

func (l *launcher) Launch(_ context.Context, _ plan.Run, _ func(string) string) (*runner.Stack, error) {
	return runner.NewStack(l.urls, l.controls, l.replicas, nil), nil
}

func depNames(pxs []proxyOf) string {
	var names []string
	for _, px := range pxs {
		names = append(names, px.dependency)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func corePullPolicy(s string) corev1.PullPolicy { return corev1.PullPolicy(s) }
