//go:build kube

package nodetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ociimage"
)

// daemon is a process the node started, stopped by its PID.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startDaemon starts argv with its output in dir/<name>.log, in a process
// group of its own.
func startDaemon(dir, name string, argv ...string) (*daemon, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { _ = cmd.Wait(); close(d.done) }()
	return d, nil
}

// exited reports whether the process has ended.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// tail is the end of the daemon's log.
func (d *daemon) tail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// stop sends SIGTERM, then SIGKILL after grace, and waits.
func (d *daemon) stop(grace time.Duration) error {
	if d.exited() {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(grace):
	}
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit", d.name, d.cmd.Process.Pid)
	}
}

// waitFor polls ok every 100 ms until it returns true, d exits or ctx
// ends.
func waitFor(ctx context.Context, d *daemon, what string, ok func() bool) error {
	for !ok() {
		if d != nil && d.exited() {
			return fmt.Errorf("%s exited while waiting for %s; its log ends:\n%s", d.name, what, d.tail())
		}
		select {
		case <-ctx.Done():
			msg := ""
			if d != nil {
				msg = "; " + d.name + "'s log ends:\n" + d.tail()
			}
			return fmt.Errorf("waiting for %s: %w%s", what, ctx.Err(), msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// freePort is a TCP port free on ip now.
func freePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// containerdConfig is containerd's configuration: its root, state and
// sockets in dir, the CRI plugin with the pause image, cgroupfs, the
// given snapshotter, the CNI plugins of cniBin with the configuration in
// dir/net.d, and restrict_oom_score_adj (root here may lack
// CAP_SYS_RESOURCE, without which runc cannot set a sandbox's score).
func containerdConfig(dir, cniBin, snapshotter string) string {
	return fmt.Sprintf(`version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "%[4]s"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "%[1]s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%[3]s"
    conf_dir = "%[1]s/net.d"
    max_conf_num = 1
`, dir, PauseImage, cniBin, snapshotter)
}

// cniConfig puts pods on Bridge with an address of PodCIDR, routes only
// to PodCIDR and ServiceCIDR (no default route: a pod cannot send
// anywhere else), IPAM state in dir.
func cniConfig(dir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "bulkheadlab-node",
  "plugins": [{
    "type": "bridge", "bridge": "%s", "isGateway": true, "isDefaultGateway": false,
    "ipMasq": false, "hairpinMode": true,
    "ipam": {
      "type": "host-local", "dataDir": "%s",
      "ranges": [[{"subnet": "%s", "gateway": "%s"}]],
      "routes": [{"dst": "%s"}]
    }
  }]
}
`, Bridge, filepath.Join(dir, "ipam"), PodCIDR, GatewayIP, ServiceCIDR)
}

// kubeletConfig is the kubelet's configuration: cgroupfs under
// cgroupRoot (cgroup v1 allowed), the node's containerd, the cluster DNS,
// its server on GatewayIP:port, no read-only or healthz port, no image
// garbage collection or eviction, no change of its own OOM score.
func kubeletConfig(dir string, port int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s/containerd.sock
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %s/resolv.conf
failSwapOn: false
oomScoreAdj: 0
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
podLogsDir: %s/pod-logs
volumePluginDir: %s/volume-plugins
serializeImagePulls: false
syncFrequency: 10s
fileCheckFrequency: 1h
`, cgroupRoot, dir, GatewayIP, port, DNSIP, Domain, dir, dir, dir)
}

// kubeProxyConfig is kube-proxy's: nftables, every Service connection
// masqueraded (pods on one bridge reach each other's Services without
// br_netfilter), conntrack settings left alone, node ports only on the
// gateway address.
func kubeProxyConfig(kubeconfig, node string, healthz, metrics int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %s}
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
mode: nftables
clusterCIDR: %s
detectLocalMode: ClusterCIDR
nodePortAddresses: ["%s/32"]
oomScoreAdj: 0
nftables: {masqueradeAll: true, syncPeriod: 30s, minSyncPeriod: 0s}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, kubeconfig, node, GatewayIP, healthz, metrics, PodCIDR, GatewayIP)
}

// goBuild builds the Go package pkg of the module at modDir into bin, with
// the build tags tags (comma-separated, or ""): static and stripped for an
// image, or for this host as `go vet` and `go build` compile (their
// packages come from the build cache the suite's other steps filled; a
// static build of the Kubernetes client compiles it all again, minutes on
// an empty cache).
func goBuild(modDir, pkg, tags, bin string, static bool) error {
	args := []string{"build", "-o", bin}
	if static {
		args = append(args, "-trimpath", "-ldflags", "-s -w")
	}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = modDir
	if static {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// buildImage builds the Go package pkg of the module at modDir (the
// default build, as scripts/image.sh does) into dir and writes it as the
// image ref (internal/ociimage) to a tarball in dir; it returns the
// tarball's path.
func buildImage(modDir, pkg, ref, dir string) (tar string, err error) {
	base := strings.NewReplacer("/", "_", ":", "_").Replace(ref)
	bin := filepath.Join(dir, base+".bin")
	if err := goBuild(modDir, pkg, "", bin, true); err != nil {
		return "", err
	}
	img, err := ociimage.BuildFile(bin, ociimage.Options{Platform: "linux/" + goarch(), Version: "nodetest", Created: time.Unix(0, 0)})
	if err != nil {
		return "", err
	}
	tar = filepath.Join(dir, base+".tar")
	if err := ociimage.WriteTarball(img, ref, tar); err != nil {
		return "", err
	}
	return tar, nil
}

// importImage imports a tarball into containerd's k8s.io namespace.
func importImage(sock, snapshotter, tar string) error {
	return run("ctr", "--address", sock, "-n", "k8s.io", "images", "import", "--snapshotter", snapshotter, tar)
}

func goarch() string { return runtime.GOARCH }
