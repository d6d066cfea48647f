//go:build kube

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/bulkheadlab/bulkheadlab/experiments/kuberun"
	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/kube"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
)

// The cluster support of a build with -tags kube (see clusterSupport).
func init() { cluster = kubeCluster{} }

// kubeCluster runs experiments on a cluster with experiments/kuberun.
type kubeCluster struct{}

func (kubeCluster) defaults() (ttl, readyTimeout time.Duration) {
	return kuberun.DefaultTTL, kuberun.DefaultReadyTimeout
}

func (kubeCluster) check(k *kubeOptions) error {
	if k.shardCPU != "" {
		if q, err := resource.ParseQuantity(k.shardCPU); err != nil || q.Sign() <= 0 {
			return usageError(fmt.Errorf("--shard-cpu: %q is not a positive CPU quantity (2, 1500m)", k.shardCPU))
		}
	}
	_, err := k.patches()
	return err
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

func (kubeCluster) start(ctx context.Context, w io.Writer, k kubeOptions, nShards int, sp *spec.Spec, p *plan.Plan, r *runner.Runner) (func() error, error) {
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

func (kubeCluster) clean(ctx context.Context, w io.Writer, k kubeOptions, all bool) error {
	c, err := kube.Connect(kube.Options{Kubeconfig: k.kubeconfig, Context: k.context, Namespace: k.namespace})
	if err != nil {
		return usageError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	gone, err := c.Clean(ctx, all)
	for _, g := range gone {
		fmt.Fprintf(w, "deleted run %s\n", g)
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
	fmt.Fprint(w, cleanReport(len(gone), held, c.Namespace, time.Now()))
	return nil
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
