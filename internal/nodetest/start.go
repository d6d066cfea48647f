//go:build kube

package nodetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// snapshotter is containerd's: overlayfs, or native where overlay
// mounts fail (BULKHEADLAB_NODE_SNAPSHOTTER overrides).
func snapshotter() string {
	if s := os.Getenv("BULKHEADLAB_NODE_SNAPSHOTTER"); s != "" {
		return s
	}
	return "overlayfs"
}

// startContainerd starts containerd with its own configuration, builds
// and imports the pause image and the project's image, and builds the
// runner (n.Binary).
func (n *Node) startContainerd(ctx context.Context, modDir string) error {
	snap := snapshotter()
	cfg := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(n.dir, filepath.Join(BinDir(), "cni"), snap)), 0o644); err != nil {
		return err
	}
	// the images and the runner build while containerd starts
	type built struct {
		tar string
		err error
	}
	pause, proj := make(chan built, 1), make(chan built, 1)
	go func() {
		t, err := buildImage(modDir, "./internal/nodetest/pause", PauseImage, n.dir)
		pause <- built{t, err}
	}()
	go func() {
		t, err := buildImage(modDir, "./cmd/bulkheadlab", Image, n.dir)
		proj <- built{t, err}
	}()
	runner := filepath.Join(n.dir, "bulkheadlab-kube")
	runnerErr := make(chan error, 1)
	go func() { runnerErr <- goBuild(modDir, "./cmd/bulkheadlab", "kube", runner, false) }()
	d, err := startDaemon(n.dir, "containerd", "containerd", "--config", cfg)
	if err != nil {
		return err
	}
	sock := filepath.Join(n.dir, "containerd.sock")
	n.add("containerd and its shims", func() error {
		// the shims outlive containerd: by PID, those serving this one
		var errs []error
		errs = append(errs, d.stop(10*time.Second))
		for _, pid := range processesWith(sock + "\x00") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return errors.Join(errs...)
	})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitFor(wctx, d, "containerd's socket", func() bool {
		return exec.Command("ctr", "--address", sock, "version").Run() == nil
	}); err != nil {
		return err
	}
	for _, ch := range []chan built{pause, proj} {
		b := <-ch
		if b.err != nil {
			return b.err
		}
		if err := importImage(sock, snap, b.tar); err != nil {
			return err
		}
	}
	if err := <-runnerErr; err != nil {
		return err
	}
	n.Binary = runner
	return nil
}

// startKubeProxy starts kube-proxy; Stop kills it and deletes its
// nftables tables.
func (n *Node) startKubeProxy(ctx context.Context) error {
	hz, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	mt, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(kubeProxyConfig(n.Kubeconfig, NodeName, hz, mt)), 0o644); err != nil {
		return err
	}
	d, err := startDaemon(n.dir, "kube-proxy", filepath.Join(BinDir(), "bin", "kube-proxy"), "--config", cfg, "--v=1")
	if err != nil {
		return err
	}
	n.add("kube-proxy and its rules", func() error {
		err := d.stop(5 * time.Second)
		for _, fam := range []string{"ip", "ip6"} {
			if exec.Command("nft", "list", "table", fam, "kube-proxy").Run() == nil {
				err = errors.Join(err, run("nft", "delete", "table", fam, "kube-proxy"))
			}
		}
		return err
	})
	// its rules are there when the DNS Service's DNAT is
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return waitFor(wctx, d, "kube-proxy's rules for the DNS Service", func() bool {
		out, _ := exec.Command("nft", "list", "table", "ip", "kube-proxy").Output()
		return strings.Contains(string(out), DNSIP)
	})
}

// startKubelet starts the kubelet and waits until its Node is Ready. Stop
// first deletes every pod and waits until the kubelet has stopped them.
func (n *Node) startKubelet(ctx context.Context) error {
	port, err := freePort(GatewayIP)
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(n.dir, port)), 0o644); err != nil {
		return err
	}
	root := filepath.Join(n.dir, "kubelet")
	if err := kubeletRoot(root); err != nil {
		return err
	}
	d, err := startDaemon(n.dir, "kubelet", filepath.Join(BinDir(), "bin", "kubelet"),
		"--config", cfg, "--kubeconfig", n.Kubeconfig, "--hostname-override", NodeName, "--node-ip", GatewayIP,
		"--root-dir", root, "--cert-dir", filepath.Join(root, "pki"), "--v=1")
	if err != nil {
		return err
	}
	n.add("the kubelet and its pods", func() error {
		err := n.deleteWorkloads(d)
		return errors.Join(err, d.stop(10*time.Second))
	})
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return waitFor(wctx, d, "the Node to be Ready", func() bool {
		node, err := n.Cluster.Client.CoreV1().Nodes().Get(wctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

// deleteWorkloads deletes every Deployment and Job (lest the controller
// make their pods again), then every pod (grace 1 s), and waits up to a
// minute until the kubelet has stopped them and the API server has none.
func (n *Node) deleteWorkloads(kubelet *daemon) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := n.Cluster.Client
	if ds, err := client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range ds.Items {
			_ = client.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{})
		}
	}
	if js, err := client.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range js.Items {
			_ = client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{})
		}
	}
	pods := client.CoreV1().Pods(metav1.NamespaceAll)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range list.Items {
		_ = n.Cluster.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))})
	}
	var left []string
	err = waitFor(ctx, kubelet, "the kubelet to stop every pod", func() bool {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		left = left[:0]
		for _, p := range list.Items {
			left = append(left, p.Namespace+"/"+p.Name)
		}
		return len(left) == 0
	})
	if err != nil {
		return fmt.Errorf("pods left %v: %w", left, err)
	}
	return nil
}
