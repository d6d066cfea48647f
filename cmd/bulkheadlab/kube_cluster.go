package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/bulkheadlab/bulkheadlab/experiments/kuberun"
	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
)

// kubeOptions are the flags of a run on a Kubernetes cluster.
type kubeOptions struct {
	on                             bool
	kubeconfig, context, namespace string
	image, pullPolicy              string
	patchEnv                       []string // one per Deployment (a mode's service)
	shardCPU                       string
	proxyReplicas                  int32
	replicasSet                    bool // --proxy-replicas was given
	ttl, readyTimeout              time.Duration
	controlFrom                    []string
}

// addKubeFlags adds the flags of run --kubernetes (kubectl's names for
// the connection).
func (k *kubeOptions) addKubeFlags(f *pflag.FlagSet) {
	f.BoolVar(&k.on, "kubernetes", false, "run on a Kubernetes cluster: the proxies and --shards load pods there, the spec an external one whose targets and upstreams the pods reach")
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config; in a pod, its service account)")
	f.StringVar(&k.context, "context", "", "kubeconfig context (default: the current one)")
	f.StringVarP(&k.namespace, "namespace", "n", "", "namespace (default: the context's, else default)")
	f.StringVar(&k.image, "image", "", "the bulkheadlab image the pods run, built from the same release as this binary (scripts/image.sh)")
	f.StringVar(&k.pullPolicy, "image-pull-policy", "", "the pods' imagePullPolicy: Always, IfNotPresent or Never (default: the cluster's)")
	f.Int32Var(&k.proxyReplicas, "proxy-replicas", 1, "replicas of every dependency's proxy Deployment (every fault switch goes to each; default: external.kubernetes.replicas, else 1)")
	f.StringVar(&k.shardCPU, "shard-cpu", "", "each shard pod's CPU request, e.g. 2 (a shard sends about 4,000 requests/s per core validly; default: none)")
	f.StringArrayVar(&k.patchEnv, "patch-env", nil, "point env variables of your Deployment at the proxies for the run and put them back after: DEPLOYMENT[/CONTAINER]:VAR=DEPENDENCY[,VAR=DEPENDENCY…]; repeat it for each mode's Deployment")
	f.DurationVar(&k.ttl, "kube-ttl", kuberun.DefaultTTL, "the run's lease: if this process is killed, the next run (or bulkheadlab kube clean) deletes its objects this long after")
	f.DurationVar(&k.readyTimeout, "kube-ready-timeout", kuberun.DefaultReadyTimeout, "how long to wait for every pod to be ready")
	f.StringSliceVar(&k.controlFrom, "kube-control-from", nil, "CIDRs the API server's pod proxy reaches the pods from: the run's NetworkPolicy lets only them in on the proxies' control ports and the shards' (default: the API server's address when the kubeconfig names it by IP, else any source)")
}

// check refuses flag combinations before anything starts.
func (k *kubeOptions) check(o runOptions, sp *spec.Spec) error {
	if !k.on {
		for _, name := range []string{"image", "patch-env"} {
			if (name == "image" && k.image != "") || (name == "patch-env" && len(k.patchEnv) > 0) {
				return usageError(fmt.Errorf("--%s: only with --kubernetes", name))
			}
		}
		if x := sp.External; x != nil && x.Kubernetes != nil {
			for _, d := range sp.DependencyNames() {
				if x.Proxies[d] == "" {
					return usageError(fmt.Errorf("%s: external.proxies.%s: without it the spec runs only on a cluster: add --kubernetes, or give the address your service calls", sp.File(), d))
				}
			}
		}
		return nil
	}
	switch {
	case k.image == "":
		return usageError(errors.New("--kubernetes: give the image the pods run with --image (build it with scripts/image.sh)"))
	case sp.External == nil:
		return usageError(fmt.Errorf("--kubernetes: %s is not an external spec: in a cluster the service under test and its dependencies are yours (see docs/clusters.md)", sp.File()))
	case sp.Audit != nil:
		return usageError(errors.New("--kubernetes: an audit's calibration sends its requests from this machine; run the audit beside the service"))
	case o.inProcess:
		return usageError(errors.New("--kubernetes: drop --in-process"))
	case k.proxyReplicas < 1:
		return usageError(fmt.Errorf("--proxy-replicas: %d is not ≥ 1", k.proxyReplicas))
	}
	switch k.pullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return usageError(fmt.Errorf("--image-pull-policy: %q is not Always, IfNotPresent or Never", k.pullPolicy))
	}
	if k.shardCPU != "" {
		if q, err := resource.ParseQuantity(k.shardCPU); err != nil || q.Sign() <= 0 {
			return usageError(fmt.Errorf("--shard-cpu: %q is not a positive CPU quantity (2, 1500m)", k.shardCPU))
		}
	}
	if _, err := k.patches(); err != nil {
		return err
	}
	for _, c := range k.controlFrom {
		if _, err := netip.ParsePrefix(c); err != nil {
			return usageError(fmt.Errorf("--kube-control-from: %q is not a CIDR (10.0.0.0/8, 192.0.2.1/32)", c))
		}
	}
	return nil
}

// patches parses every --patch-env, one per Deployment.
func (k *kubeOptions) patches() ([]*kuberun.EnvPatch, error) {
	var out []*kuberun.EnvPatch
	seen := map[string]bool{}
	for _, s := range k.patchEnv {
		p, err := kuberun.ParseEnvPatch(s)
		if err != nil {
			return nil, usageError(fmt.Errorf("--patch-env: %w", err))
		}
		if seen[p.Deployment] {
			return nil, usageError(fmt.Errorf("--patch-env: Deployment %s given twice: give each Deployment once, with all its variables", p.Deployment))
		}
		seen[p.Deployment] = true
		out = append(out, p)
	}
	return out, nil
}

// patchWarning is the warning when --patch-env points fewer Deployments at
// the proxies than the spec has modes, "" otherwise: each mode's service
// is a Deployment of its own, and one not pointed at the proxies calls
// its dependencies directly — no fault reaches it.
func patchWarning(patched, modes int) string {
	if patched == 0 || patched >= modes {
		return ""
	}
	return fmt.Sprintf("--patch-env points %d Deployment(s) at the proxies, but the spec has %d modes: each mode's service is its own Deployment, "+
		"and one not pointed at the proxies (by --patch-env, or by its own configuration) calls its dependencies directly, so no fault reaches it "+
		"and its verdicts measure nothing: give --patch-env once per mode's Deployment", patched, modes)
}

var runIDUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// kubeRunID names the objects of an experiment started at t.
func kubeRunID(experiment string, t time.Time) string {
	name := strings.Trim(runIDUnsafe.ReplaceAllString(strings.ToLower(experiment), "-"), "-")
	if len(name) > 30 {
		name = strings.TrimRight(name[:30], "-")
	}
	return name + "-" + t.UTC().Format("20060102t150405z")
}

// startKube connects, creates the plan's objects and points r at them; the
// returned close deletes them (Ctrl-C included: it takes a fresh context).
func startKube(ctx context.Context, w io.Writer, k kubeOptions, nShards int, sp *spec.Spec, p *plan.Plan, r *runner.Runner) (func() error, error) {
	c, err := kube.Connect(kube.Options{Kubeconfig: k.kubeconfig, Context: k.context, Namespace: k.namespace})
	if err != nil {
		return nil, usageError(err)
	}
	o := kuberun.Options{Image: k.image, PullPolicy: k.pullPolicy, Shards: nShards, ProxyReplicas: k.proxyReplicas,
		ShardCPU: k.shardCPU, TTL: k.ttl, ReadyTimeout: k.readyTimeout, Log: w, ControlFrom: k.controlFrom}
	// The spec's layout, where the flags left it.
	if l := sp.External.Kubernetes; l != nil {
		if !k.replicasSet {
			o.Replicas = map[string]int32{}
			for d, n := range l.Replicas {
				o.Replicas[d] = int32(n)
			}
		}
		if o.Shards == 0 {
			o.Shards = l.Shards
		}
	}
	o.Patches, _ = k.patches() // checked before
	if w := patchWarning(len(o.Patches), len(sp.Modes)); w != "" {
		fmt.Fprintf(o.Log, "WARNING: %s\n", w)
	}
	e, err := kuberun.Start(ctx, c, p, kubeRunID(sp.Name, time.Now()), shards.Protocol, o)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, withCode(ExitInterrupted, err)
		}
		return nil, err
	}
	r.Launcher, r.Remote = e.Launcher, e.Remote
	// The pods reach the targets, not this machine; kuberun.Start checked
	// that every pod answers.
	r.SkipTargetProbes = true
	return func() error {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := e.Close(dctx)
		if err == nil {
			fmt.Fprintf(w, "kubernetes: run %s deleted\n", e.Run.ID)
		}
		return err
	}, nil
}

// newKubeCmd builds `kube`, the cluster housekeeping.
func newKubeCmd() *cobra.Command {
	var k kubeOptions
	var all bool
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Housekeeping of runs on a Kubernetes cluster",
	}
	clean := &cobra.Command{
		Use:   "clean",
		Short: "Delete the objects of runs whose runner is gone (their lease expired)",
		Long: `clean deletes every object of the runs in the namespace whose lease expired
(their runner was killed: a run deletes its own objects at its end, on a
failure and on Ctrl-C), and puts back the env variables a run patched in a
Deployment. A run whose lease has not expired (live, or killed less than
its --kube-ttl ago) is named, with when its lease expires. With --all it
deletes every run, live or not. Every run on a cluster does this for
expired runs before it starts.`,
		Example: `  bulkheadlab kube clean -n chaos
  bulkheadlab kube clean --all --context staging`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kube.Connect(kube.Options{Kubeconfig: k.kubeconfig, Context: k.context, Namespace: k.namespace})
			if err != nil {
				return usageError(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			gone, err := c.Clean(ctx, all)
			for _, g := range gone {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted run %s\n", g)
			}
			if err != nil {
				return err
			}
			var held []kube.HeldRun
			if !all {
				if held, err = c.HeldRuns(ctx, time.Now()); err != nil {
					return err
				}
			}
			fmt.Fprint(cmd.OutOrStdout(), cleanReport(len(gone), held, c.Namespace, time.Now()))
			return nil
		},
	}
	f := clean.Flags()
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&k.context, "context", "", "kubeconfig context (default: the current one)")
	f.StringVarP(&k.namespace, "namespace", "n", "", "namespace (default: the context's, else default)")
	f.BoolVar(&all, "all", false, "delete every run, not only the expired ones")
	cmd.AddCommand(clean)
	return cmd
}

// cleanReport says what `kube clean` left: each run whose lease has not
// expired, until when, and how to delete it now; "nothing to delete" only
// when nothing is left.
func cleanReport(deleted int, held []kube.HeldRun, namespace string, now time.Time) string {
	if len(held) == 0 {
		if deleted > 0 {
			return ""
		}
		return fmt.Sprintf("nothing to delete in namespace %s\n", namespace)
	}
	var b strings.Builder
	for _, h := range held {
		fmt.Fprintf(&b, "run %s is held by %s until %s (in %s): live, or its runner was killed less than its lease (--kube-ttl) ago\n",
			h.Run, h.Holder, h.Expires.UTC().Format(time.TimeOnly), h.Expires.Sub(now).Round(time.Second))
	}
	b.WriteString("a live run deletes its own objects when it ends; a killed run's are deleted by `bulkheadlab kube clean` once its lease expires, " +
		"or now by `bulkheadlab kube clean --all`, which deletes every run, live ones too\n")
	return b.String()
}
