//go:build kube

// Package kube runs an experiment's components on a Kubernetes cluster:
// a fault proxy per dependency as a Deployment behind a Service, and the
// load as an Indexed Job of shard pods. Every object of a run carries the
// label bulkheadlab.dev/run=<id> and an owner reference to one parent, a
// coordination.k8s.io Lease named after the run that the runner renews
// while it lives. Run.Delete removes a run's objects (at the end, on
// failure, on Ctrl-C); after a kill of the runner the Lease expires, a
// real cluster's garbage collector deletes what it owns once the Lease is
// deleted, and Cluster.Clean (run by the next run, or by hand) deletes
// expired runs and any labelled object whose Lease is gone.
//
// Built only with -tags kube, as everything that imports the Kubernetes
// client libraries: the default build of bulkheadlab leaves them out.
package kube

import (
	"fmt"
	"net/http"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options say which cluster and namespace to use, as kubectl's flags do:
// Kubeconfig (--kubeconfig; empty: $KUBECONFIG, else ~/.kube/config, else
// the in-cluster service account when running in a pod), Context
// (--context; empty: the kubeconfig's current context) and Namespace
// (--namespace; empty: the context's namespace, else "default").
type Options struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

// Cluster is a connection to one namespace of a cluster.
type Cluster struct {
	Config    *rest.Config
	Client    kubernetes.Interface
	Namespace string
	// Identity is the Lease holder of the runs this process creates
	// (default: host name and process id).
	Identity string
	// PodURL, when set, replaces the API server's pod proxy in PodProxy:
	// it returns the base URL of port on pod and the RoundTripper to reach
	// it with (tests point pods at local processes with it: the API server
	// refuses to proxy to loopback pod IPs).
	PodURL func(pod *corev1.Pod, port int32) (string, http.RoundTripper, error)
}

// Connect loads the client configuration as kubectl does (see Options) and
// returns a Cluster for the namespace it resolves to.
func Connect(o Options) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	overrides.Context.Namespace = o.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	where := describe(o, rules)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration (%s): %w", where, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubernetes namespace (%s): %w", where, err)
	}
	return NewCluster(cfg, ns)
}

// describe names where the configuration comes from, for errors.
func describe(o Options, rules *clientcmd.ClientConfigLoadingRules) string {
	s := "kubeconfig "
	switch {
	case o.Kubeconfig != "":
		s += strconv.Quote(o.Kubeconfig)
	case len(rules.Precedence) > 0:
		s += strconv.Quote(rules.Precedence[0])
		for _, p := range rules.Precedence[1:] {
			s += ", " + strconv.Quote(p)
		}
	default:
		s += "(none)"
	}
	if o.Context != "" {
		s += ", context " + strconv.Quote(o.Context)
	}
	return s
}

// NewCluster returns a Cluster for namespace ("": "default") of the
// cluster cfg reaches.
func NewCluster(cfg *rest.Config, namespace string) (*Cluster, error) {
	if namespace == "" {
		namespace = "default"
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	host, _ := os.Hostname()
	return &Cluster{
		Config:    cfg,
		Client:    client,
		Namespace: namespace,
		Identity:  fmt.Sprintf("%s-%d", host, os.Getpid()),
	}, nil
}

// PodProxy returns the base URL and the RoundTripper with which the runner
// reaches port on pod from outside the cluster: the API server's pod proxy
// subresource (/api/v1/namespaces/NS/pods/NAME:PORT/proxy), authenticated
// with the cluster's credentials (RBAC: pods/proxy get and create), or
// whatever c.PodURL says when it is set. A path appended to the base URL
// ("/healthz") reaches that path on the pod.
func (c *Cluster) PodProxy(pod *corev1.Pod, port int32) (string, http.RoundTripper, error) {
	if c.PodURL != nil {
		return c.PodURL(pod, port)
	}
	rt, err := rest.TransportFor(c.Config)
	if err != nil {
		return "", nil, fmt.Errorf("kubernetes transport: %w", err)
	}
	u := c.Client.CoreV1().RESTClient().Get().
		Namespace(pod.Namespace).Resource("pods").
		Name(pod.Name + ":" + strconv.Itoa(int(port))).SubResource("proxy").URL()
	return u.String(), rt, nil
}
