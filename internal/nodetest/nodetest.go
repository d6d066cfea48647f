//go:build kube

// Package nodetest starts a one-node Kubernetes cluster with real pods for
// tests: kube-apiserver and etcd with the stand-in controller of
// internal/kubetest (Deployments, Indexed Jobs, and each Service's
// EndpointSlice; pods are put on the node directly, no scheduler), a
// kubelet on Debian's containerd and runc, kube-proxy (nftables), the CNI
// plugins bridge and host-local, and a DNS in the test process that
// answers <service>.<namespace>.svc.cluster.local. The project's image
// (Image) and a pause image are built from this module and imported.
//
// Everything stays on this machine: pods live on the bridge Bridge in
// PodCIDR with routes to PodCIDR and ServiceCIDR only, the Service range
// is unreachable but through kube-proxy's NAT, and an nftables table drops
// whatever would be forwarded between the bridge and another interface.
// Stop undoes all of it: daemons and shims killed by PID, the pods'
// cgroups, mounts, the bridge, routes, nftables tables and the sysctls the
// kubelet changes restored.
//
// It needs root, containerd, ctr, runc, nft and ip in PATH, and the
// binaries of scripts/kube-bins.sh and scripts/node-bins.sh. Without them
// Start returns an error wrapping ErrUnavailable (tests skip, or fail when
// the environment sets CI).
//
// Built only with -tags kube (see internal/kube); its tests with -tags
// node,kube. The image holds the default build (scripts/image.sh's: the
// pods run only its proxy and shard commands), the runner
// (Node.Binary) is built with -tags kube.
package nodetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bulkheadlab/bulkheadlab/internal/kubetest"
)

// Images the node has, by the names pods give (imagePullPolicy Never).
const (
	Image      = "bulkheadlab.test/bulkheadlab:nodetest"
	PauseImage = "bulkheadlab.test/pause:nodetest"
	// NodeName is the node's name.
	NodeName = "bulkheadlab-node"
	// K8sVersion and CNIVersion are scripts/node-bins.sh's.
	K8sVersion = "1.37.2"
	CNIVersion = "1.10.0"
)

// ErrUnavailable is wrapped by Start's error when this machine cannot run
// the node (not root, a program or a binary missing).
var ErrUnavailable = errors.New("nodetest: a real node cannot run here")

// BinDir is scripts/node-bins.sh's cache directory for this platform
// (BULKHEADLAB_NODE_BINS overrides it).
func BinDir() string {
	if d := os.Getenv("BULKHEADLAB_NODE_BINS"); d != "" {
		return d
	}
	root := filepath.Dir(filepath.Dir(kubetest.CacheDir())) // <cache>/bulkheadlab
	return filepath.Join(root, "node", fmt.Sprintf("k8s-%s_cni-%s_%s-%s", K8sVersion, CNIVersion, runtime.GOOS, runtime.GOARCH))
}

// Node is a running one-node cluster.
type Node struct {
	// Cluster is the API server and the stand-in controller.
	Cluster *kubetest.Cluster
	// Kubeconfig is an admin kubeconfig file (its context's namespace
	// "default").
	Kubeconfig string
	// Binary is a bulkheadlab binary with cluster support (-tags kube)
	// of the same commit as Image's (static, for this machine): the
	// runner. Image's is the default build, as scripts/image.sh makes it:
	// the pods run only its proxy and shard commands.
	Binary string
	// StartTime is how long Start took.
	StartTime time.Duration

	dir     string
	undos   []undo
	sysctls map[string]string // as they were before Start
	fresh   []string          // hostPaths that did not exist before Start
}

type undo struct {
	what string
	fn   func() error
}

func (n *Node) add(what string, fn func() error) { n.undos = append(n.undos, undo{what, fn}) }

// check returns what is missing to run a node, wrapping ErrUnavailable.
func check() (kubetest.Binaries, error) {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, p := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "nft", "ip"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p+" (apt-get install containerd runc nftables iproute2)")
		}
	}
	for _, f := range []string{"bin/kubelet", "bin/kube-proxy", "cni/bridge", "cni/host-local", "cni/loopback"} {
		if _, err := os.Stat(filepath.Join(BinDir(), f)); err != nil {
			missing = append(missing, f+" (bash scripts/node-bins.sh)")
		}
	}
	b, err := kubetest.FindBinaries()
	if err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("%w: missing %s", ErrUnavailable, strings.Join(missing, ", "))
	}
	return b, nil
}

// Start starts the node; on an error nothing it started is left. modDir
// is this module's root (the images are built from it).
func Start(ctx context.Context, modDir string) (_ *Node, err error) {
	begin := time.Now()
	b, err := check()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nodetest-")
	if err != nil {
		return nil, err
	}
	n := &Node{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	n.add("the node's directory", func() error {
		return errors.Join(unmountUnder(dir), os.RemoveAll(dir))
	})
	fresh := newHostPaths()
	n.fresh = fresh
	n.add("the machine's paths the node created", func() error {
		var errs []error
		for _, p := range fresh {
			errs = append(errs, unmountUnder(p), os.RemoveAll(p))
		}
		return errors.Join(errs...)
	})
	before := readSysctls()
	n.sysctls = before
	n.add("sysctls", func() error { return restoreSysctls(before) })
	undoNet, err := setupNetwork()
	if err != nil {
		return nil, err
	}
	n.add("the bridge, routes and guard", undoNet)
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return nil, err
	}

	c, err := kubetest.StartWith(b, kubetest.Options{Nodes: []string{NodeName}, ServiceCIDR: ServiceCIDR, Endpoints: true})
	if err != nil {
		return nil, err
	}
	n.Cluster = c
	n.add("the API server", c.Stop)
	n.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(n.Kubeconfig, c.AdminKubeconfig(), 0o600); err != nil {
		return nil, err
	}
	dns, err := serveDNS(GatewayIP+":0", c.Client, Domain)
	if err != nil {
		return nil, err
	}
	n.add("the DNS", dns.close)
	if err := n.dnsService(ctx, dns.Port()); err != nil {
		return nil, err
	}

	if err := makeCgroups(); err != nil {
		return nil, err
	}
	n.add("cgroups", removeCgroups)
	for _, d := range []string{"net.d", "ipam", "pod-logs", "kubelet"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "net.d", "10-bulkheadlab.conflist"), []byte(cniConfig(dir)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), nil, 0o644); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx, modDir); err != nil {
		return nil, err
	}
	// kube-proxy after the kubelet: it waits for the Node and exits when
	// the Node's addresses change
	if err := n.startKubelet(ctx); err != nil {
		return nil, err
	}
	if err := n.startKubeProxy(ctx); err != nil {
		return nil, err
	}
	n.StartTime = time.Since(begin)
	return n, nil
}

// dnsService makes the Service kube-system/kube-dns at DNSIP whose one
// endpoint is the test process's DNS on GatewayIP:port.
func (n *Node) dnsService(ctx context.Context, port int) error {
	client := n.Cluster.Client
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: DNSIP, Ports: []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}}}
	if _, err := client.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the DNS Service: %w", err)
	}
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system", Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{GatewayIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: new("dns"), Protocol: new(corev1.ProtocolUDP), Port: new(int32(port))}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the DNS EndpointSlice: %w", err)
	}
	return nil
}

// Stop undoes everything Start did, in reverse order, and returns every
// failure, and an error naming whatever is still left on the machine then
// (an interface, a route, an nftables table, a cgroup, a mount, a
// process, a path, a sysctl not as it was).
func (n *Node) Stop() error {
	var errs []error
	for i := len(n.undos) - 1; i >= 0; i-- {
		if err := n.undos[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("nodetest: stopping %s: %w", n.undos[i].what, err))
		}
	}
	n.undos = nil
	if n.dir != "" {
		if left := leftovers(n.dir, n.sysctls, n.fresh); len(left) > 0 {
			errs = append(errs, fmt.Errorf("nodetest: left on the machine: %s", strings.Join(left, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Dir is the node's directory (containerd's and the kubelet's state, the
// daemons' logs); Stop removes it.
func (n *Node) Dir() string { return n.dir }
