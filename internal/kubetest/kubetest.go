//go:build kube

// Package kubetest starts a real Kubernetes API server for tests:
// etcd and kube-apiserver through controller-runtime's envtest, kwok for
// fake Nodes and the pods' lifecycle on them (pods become Running and
// Ready with an IP, deleted pods go away), and a small stand-in for
// kube-controller-manager (see Controller) that turns Deployments and
// Indexed Jobs into pods and reports their readiness in their status.
//
// The binaries come from scripts/kube-bins.sh's cache directory, or from
// the environment: KUBEBUILDER_ASSETS (a directory with kube-apiserver and
// etcd), BULKHEADLAB_KWOK (the kwok binary) and BULKHEADLAB_KWOK_DATA (the
// directory with kwok's crd/ and stage/; default: ../kwok beside the
// binary's directory, as the script lays it out). Without them a test is
// skipped, except when the environment sets CI, where it fails.
//
// Pods that must never become ready: NeverReady makes the controller put
// the label NeverReadyLabel on the pods it creates that match; kwok's
// pod-ready Stage is installed with a selector that leaves such pods out,
// and another Stage makes them Running but not Ready (their container
// running, not ready), as a pod whose readiness probe fails.
//
// Built only with -tags kube (see internal/kube).
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The versions scripts/kube-bins.sh builds (its cache key).
const (
	KubernetesVersion = "1.37.2"
	EtcdVersion       = "3.7.3"
	KwokVersion       = "0.8.0"
)

// CacheDir is scripts/kube-bins.sh's cache directory for this platform.
func CacheDir() string {
	root := os.Getenv("BULKHEADLAB_CACHE")
	if root == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		root = filepath.Join(base, "bulkheadlab")
	}
	key := fmt.Sprintf("k8s-%s_etcd-%s_kwok-%s_%s-%s", KubernetesVersion, EtcdVersion, KwokVersion, runtime.GOOS, runtime.GOARCH)
	return filepath.Join(root, "kube", key)
}

// Binaries are the files a Cluster runs.
type Binaries struct {
	Assets string // kube-apiserver and etcd (KUBEBUILDER_ASSETS)
	Kwok   string // the kwok binary
	Data   string // kwok's crd/ and stage/
}

// FindBinaries looks for the binaries in the environment, then in
// CacheDir.
func FindBinaries() (Binaries, error) {
	b := Binaries{Assets: os.Getenv("KUBEBUILDER_ASSETS"), Kwok: os.Getenv("BULKHEADLAB_KWOK"), Data: os.Getenv("BULKHEADLAB_KWOK_DATA")}
	cache := CacheDir()
	if b.Assets == "" {
		b.Assets = filepath.Join(cache, "bin")
	}
	if b.Kwok == "" {
		b.Kwok = filepath.Join(cache, "bin", "kwok")
	}
	if b.Data == "" {
		b.Data = filepath.Join(filepath.Dir(filepath.Dir(b.Kwok)), "kwok")
	}
	var missing []string
	for _, f := range []string{filepath.Join(b.Assets, "kube-apiserver"), filepath.Join(b.Assets, "etcd"), b.Kwok,
		filepath.Join(b.Data, "crd"), filepath.Join(b.Data, "stage")} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("missing %s (build them with: bash scripts/kube-bins.sh; or set KUBEBUILDER_ASSETS, BULKHEADLAB_KWOK, BULKHEADLAB_KWOK_DATA)", strings.Join(missing, ", "))
	}
	return b, nil
}

// Cluster is a running API server with kwok and the stand-in controller.
type Cluster struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Nodes are the fake nodes' names; the controller puts pods on them.
	Nodes []string
	// StartTime is how long Start took.
	StartTime time.Duration

	env        *envtest.Environment
	kubeconfig []byte
	ctrl       *Controller
	stops      []func() error
	dir        string
	kwokLog    string
	kwokExited chan struct{}
}

// binaries returns the binaries or skips (fails under CI) the test.
func binaries(t testing.TB) Binaries {
	t.Helper()
	b, err := FindBinaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Kubernetes test binaries: %v; CI must build them (.ci/run does)", err)
		}
		t.Skipf("skipping the Kubernetes test: %v", err)
	}
	return b
}

// Start starts a cluster of its own for t, stopped when t ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	b := binaries(t)
	c, err := start(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

var shared struct {
	sync.Mutex
	main    bool
	c       *Cluster
	err     error
	started bool
}

// Shared returns the test binary's one cluster, starting it on first use.
// The package's TestMain must call Main, which stops it.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	b := binaries(t)
	shared.Lock()
	defer shared.Unlock()
	if !shared.main {
		t.Fatal("kubetest.Shared needs the package's TestMain to call kubetest.Main(m)")
	}
	if !shared.started {
		shared.started = true
		shared.c, shared.err = start(b, Options{})
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

// Main runs the tests (m.Run) and stops the shared cluster, then exits.
func Main(m *testing.M) {
	shared.Lock()
	shared.main = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	shared.Unlock()
	os.Exit(code)
}

// Options change what StartWith starts.
type Options struct {
	// Nodes, when set, are real nodes (their kubelets register them):
	// kwok is not started, no fake node is made, and the controller puts
	// pods on these.
	Nodes []string
	// ServiceCIDR is the API server's service-cluster-ip-range ("": the
	// envtest default).
	ServiceCIDR string
	// Endpoints makes the controller keep each Service's EndpointSlice
	// (kube-proxy's input), as kube-controller-manager would.
	Endpoints bool
}

// StartWith starts a cluster as o says; Stop stops it. Shared and Start
// use the zero Options (kwok's fake nodes).
func StartWith(b Binaries, o Options) (*Cluster, error) { return start(b, o) }

// AdminKubeconfig is a kubeconfig of the cluster's admin user (for a
// kubelet or kube-proxy to connect with).
func (c *Cluster) AdminKubeconfig() []byte { return c.kubeconfig }

func start(b Binaries, o Options) (_ *Cluster, err error) {
	begin := time.Now()
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	c.stops = append(c.stops, func() error { return os.RemoveAll(dir) })
	env := &envtest.Environment{
		BinaryAssetsDirectory:    b.Assets,
		CRDInstallOptions:        envtest.CRDInstallOptions{Paths: []string{filepath.Join(b.Data, "crd")}, ErrorIfPathMissing: true},
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	api := env.ControlPlane.GetAPIServer()
	// no controller-manager keeps the kubernetes Service's endpoints
	api.Configure().Set("endpoint-reconciler-type", "none")
	if o.ServiceCIDR != "" {
		api.Configure().Set("service-cluster-ip-range", o.ServiceCIDR)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("kubetest: starting etcd and kube-apiserver: %w", err)
	}
	c.env = env
	c.stops = append(c.stops, env.Stop)
	c.Config = cfg
	c.kubeconfig = env.KubeConfig
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(o.Nodes) > 0 {
		c.Nodes = o.Nodes
	} else {
		if err := c.startKwok(ctx, b); err != nil {
			return nil, err
		}
		if err := c.addNodes(ctx, 2); err != nil {
			return nil, err
		}
	}
	c.ctrl = newController(c.Client, c.Nodes)
	c.ctrl.endpoints = o.Endpoints
	stopCtrl, err := c.ctrl.start()
	if err != nil {
		return nil, err
	}
	c.stops = append(c.stops, func() error { stopCtrl(); return nil })
	c.StartTime = time.Since(begin)
	return c, nil
}

// Stop stops the controller, kwok (if started), kube-apiserver and etcd.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.stops) - 1; i >= 0; i-- {
		errs = append(errs, c.stops[i]())
	}
	c.stops = nil
	return errors.Join(errs...)
}

// Namespace creates a namespace for t (named after it). envtest has no
// namespace controller, so it is not deleted: tests leave it as they
// found it instead.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 40 {
		name = name[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(name, "-") + "-"}}
	created, err := c.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Name
}

// Kubeconfig writes a kubeconfig file for the cluster's admin user whose
// one context ("kubetest") has namespace, and returns its path (removed
// when t ends).
func (c *Cluster) Kubeconfig(t testing.TB, namespace string) string {
	t.Helper()
	cfg, err := clientcmd.Load(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, ctx := range cfg.Contexts {
		ctx.Namespace = namespace
		cfg.Contexts["kubetest"] = ctx
		if name != "kubetest" {
			delete(cfg.Contexts, name)
		}
		break
	}
	cfg.CurrentContext = "kubetest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// NeverReadyLabel marks pods that kwok leaves not Ready (see NeverReady).
const NeverReadyLabel = "kubetest.bulkheadlab.dev/never-ready"

// NeverReady makes the controller label the pods it creates that match
// with NeverReadyLabel, until t ends: kwok runs them but never makes them
// Ready.
func (c *Cluster) NeverReady(t testing.TB, match func(*corev1.Pod) bool) {
	remove := c.ctrl.addNeverReady(match)
	t.Cleanup(remove)
}
