package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// clusterSupport is what a build with cluster support adds to the
// commands: everything that needs the Kubernetes client libraries.
// kube_cluster.go, built with -tags kube, plugs it in; without the tag
// cluster is nil, the binary carries none of those libraries, and
// `run --kubernetes` and `kube clean` say how to build one that has them.
// The proxies and shards a cluster's pods run need none of it.
type clusterSupport interface {
	// defaults are the defaults of --kube-ttl and --kube-ready-timeout.
	defaults() (ttl, readyTimeout time.Duration)
	// check refuses, before anything starts, the flags of a run on a
	// cluster that the Kubernetes libraries parse (--shard-cpu,
	// --patch-env).
	check(k *kubeOptions) error
	// start connects, creates the plan's objects and points r at them;
	// the returned close deletes them (Ctrl-C included: it takes a fresh
	// context).
	start(ctx context.Context, w io.Writer, k kubeOptions, nShards int, sp *spec.Spec, p *plan.Plan, r *runner.Runner) (func() error, error)
	// clean is `kube clean`: it deletes the runs whose lease expired
	// (every run with all) and says what it left.
	clean(ctx context.Context, w io.Writer, k kubeOptions, all bool) error
}

// cluster is the build's cluster support, nil without -tags kube.
var cluster clusterSupport

// clusterBuild says how to get a binary with cluster support.
const clusterBuild = "go build -tags kube ./cmd/bulkheadlab (see docs/clusters.md)"

// noCluster is the usage error of a cluster feature in a build without
// cluster support.
func noCluster(what string) error {
	return usageError(fmt.Errorf("%s: this bulkheadlab is built without cluster support "+
		"(the Kubernetes client libraries are left out of the default build): build one with it: %s", what, clusterBuild))
}

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
// the connection). A build without cluster support parses them all, so
// that a cluster's command line gets noCluster's answer rather than an
// unknown flag, but shows only --kubernetes, whose help says so.
func (k *kubeOptions) addKubeFlags(f *pflag.FlagSet) {
	onHelp := "run on a Kubernetes cluster: the proxies and --shards load pods there, the spec an external one whose targets and upstreams the pods reach"
	var ttl, ready time.Duration
	if cluster != nil {
		ttl, ready = cluster.defaults()
	} else {
		onHelp += "; needs a build with cluster support, which this one is not: " + clusterBuild
	}
	kf := pflag.NewFlagSet("kubernetes", pflag.ContinueOnError)
	kf.BoolVar(&k.on, "kubernetes", false, onHelp)
	kf.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config; in a pod, its service account)")
	kf.StringVar(&k.context, "context", "", "kubeconfig context (default: the current one)")
	kf.StringVarP(&k.namespace, "namespace", "n", "", "namespace (default: the context's, else default)")
	kf.StringVar(&k.image, "image", "", "the bulkheadlab image the pods run, built from the same release as this binary (scripts/image.sh)")
	kf.StringVar(&k.pullPolicy, "image-pull-policy", "", "the pods' imagePullPolicy: Always, IfNotPresent or Never (default: the cluster's)")
	kf.Int32Var(&k.proxyReplicas, "proxy-replicas", 1, "replicas of every dependency's proxy Deployment (every fault switch goes to each; default: external.kubernetes.replicas, else 1)")
	kf.StringVar(&k.shardCPU, "shard-cpu", "", "each shard pod's CPU request, e.g. 2 (a shard sends about 4,000 requests/s per core validly; default: none)")
	kf.StringArrayVar(&k.patchEnv, "patch-env", nil, "point env variables of your Deployment at the proxies for the run and put them back after: DEPLOYMENT[/CONTAINER]:VAR=DEPENDENCY[,VAR=DEPENDENCY…]; repeat it for each mode's Deployment")
	kf.DurationVar(&k.ttl, "kube-ttl", ttl, "the run's lease: if this process is killed, the next run (or bulkheadlab kube clean) deletes its objects this long after")
	kf.DurationVar(&k.readyTimeout, "kube-ready-timeout", ready, "how long to wait for every pod to be ready")
	kf.StringSliceVar(&k.controlFrom, "kube-control-from", nil, "CIDRs the API server's pod proxy reaches the pods from: the run's NetworkPolicy lets only them in on the proxies' control ports and the shards' (default: the API server's address when the kubeconfig names it by IP, else any source)")
	if cluster == nil {
		kf.VisitAll(func(fl *pflag.Flag) { fl.Hidden = fl.Name != "kubernetes" })
	}
	f.AddFlagSet(kf)
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
	case cluster == nil:
		return noCluster("--kubernetes")
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
	if err := cluster.check(k); err != nil {
		return err
	}
	for _, c := range k.controlFrom {
		if _, err := netip.ParsePrefix(c); err != nil {
			return usageError(fmt.Errorf("--kube-control-from: %q is not a CIDR (10.0.0.0/8, 192.0.2.1/32)", c))
		}
	}
	return nil
}

// newKubeCmd builds `kube`, the cluster housekeeping.
func newKubeCmd() *cobra.Command {
	var k kubeOptions
	var all bool
	short, note := "Housekeeping of runs on a Kubernetes cluster", ""
	if cluster == nil {
		short += " (needs a build with cluster support)"
		note = "\n\nThis build has no cluster support; build one with it: " + clusterBuild + "."
	}
	cmd := &cobra.Command{
		Use:   "kube",
		Short: short,
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
expired runs before it starts.` + note,
		Example: `  bulkheadlab kube clean -n chaos
  bulkheadlab kube clean --all --context staging`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cluster == nil {
				return noCluster("kube clean")
			}
			return cluster.clean(cmd.Context(), cmd.OutOrStdout(), k, all)
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
