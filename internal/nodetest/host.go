//go:build kube

package nodetest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The node's network: pods on Bridge in PodCIDR (the bridge is their
// gateway, and their only routes are PodCIDR and ServiceCIDR), Services in
// ServiceCIDR (kube-proxy's NAT; the rest of it unreachable), the DNS at
// DNSIP. Nothing routes either range off the machine: Start checks it
// with `ip route get` before any pod runs.
const (
	Bridge      = "bl-cni0"
	PodCIDR     = "10.244.0.0/24"
	GatewayIP   = "10.244.0.1"
	ServiceCIDR = "10.96.0.0/24"
	DNSIP       = "10.96.0.10"
	Domain      = "cluster.local"
	// guardTable is the nftables table that drops whatever would be
	// forwarded between the bridge and any other interface.
	guardTable = "bulkheadlab-node-guard"
	// cgroupRoot is the kubelet's cgroup root, in every hierarchy.
	cgroupRoot = "bulkheadlab-node"
)

// sysctls the kubelet, kube-proxy, the bridge plugin or Start change:
// their values are read before and written back by Stop (ip_forward last:
// writing it resets every interface's forwarding).
var sysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables",
	"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"net/ipv4/ip_forward",
}

// hostPaths are the machine's paths the kubelet, containerd or the CNI
// plugins write outside the node's directory: Stop removes those that
// were not there before Start (unmounting what is mounted under them).
var hostPaths = []string{
	"/var/lib/cni", "/run/containerd", "/run/netns", "/var/run/netns", "/var/log/containers",
	"/var/log/pods", "/var/lib/kubelet", "/etc/cni", "/opt/cni", "/opt/containerd",
	"/usr/libexec/kubernetes", "/etc/kubernetes",
}

// run runs a command and returns its error with its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func readSysctls() map[string]string {
	m := map[string]string{}
	for _, s := range sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			m[s] = strings.TrimSpace(string(b))
		}
	}
	return m
}

// restoreSysctls writes back every value of before that changed.
func restoreSysctls(before map[string]string) error {
	var errs []error
	for _, s := range sysctls {
		v, ok := before[s]
		if !ok {
			continue
		}
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", s, v, err))
		}
	}
	return errors.Join(errs...)
}

// setupNetwork makes the bridge with the gateway address, the
// unreachable route for the Service range and the forwarding guard, then
// checks the routes; undo removes all three.
func setupNetwork() (undo func() error, err error) {
	if _, err := net.InterfaceByName(Bridge); err == nil {
		return nil, fmt.Errorf("interface %s exists: another node test runs, or one was killed (remove it: ip link del %s)", Bridge, Bridge)
	}
	var undos []func() error
	undo = func() error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			errs = append(errs, undos[i]())
		}
		return errors.Join(errs...)
	}
	step := func(do []string, back []string) error {
		if err := run(do[0], do[1:]...); err != nil {
			return err
		}
		undos = append(undos, func() error { return run(back[0], back[1:]...) })
		return nil
	}
	fail := func(err error) (func() error, error) { return nil, errors.Join(err, undo()) }
	if err := step([]string{"ip", "link", "add", Bridge, "type", "bridge"}, []string{"ip", "link", "del", Bridge}); err != nil {
		return fail(err)
	}
	if err := run("ip", "addr", "add", GatewayIP+"/24", "dev", Bridge); err != nil {
		return fail(err)
	}
	if err := run("ip", "link", "set", Bridge, "up"); err != nil {
		return fail(err)
	}
	if err := step([]string{"ip", "route", "add", "unreachable", ServiceCIDR}, []string{"ip", "route", "del", "unreachable", ServiceCIDR}); err != nil {
		return fail(err)
	}
	guard := fmt.Sprintf(`table inet %s {
	chain forward {
		type filter hook forward priority -10; policy accept;
		iifname "%[2]s" oifname != "%[2]s" drop
		oifname "%[2]s" iifname != "%[2]s" drop
	}
}
`, guardTable, Bridge)
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(guard)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("nft: %w: %s", err, out))
	}
	undos = append(undos, func() error { return run("nft", "delete", "table", "inet", guardTable) })
	// a pod address goes to the bridge; a Service address nowhere (only
	// kube-proxy's NAT, before routing, takes it somewhere)
	if out, _ := exec.Command("ip", "route", "get", "10.244.0.7").CombinedOutput(); !strings.Contains(string(out), "dev "+Bridge) {
		return fail(fmt.Errorf("ip route get 10.244.0.7: %q, want dev %s", strings.TrimSpace(string(out)), Bridge))
	}
	if out, err := exec.Command("ip", "route", "get", DNSIP).CombinedOutput(); err == nil && !strings.Contains(string(out), "unreachable") {
		return fail(fmt.Errorf("ip route get %s: %q, want no route: the address would leave the machine", DNSIP, strings.TrimSpace(string(out))))
	}
	return undo, nil
}

// cgroupDirs are the kubelet's cgroup root in every hierarchy (v1: one
// per controller; v2: one).
func cgroupDirs() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{filepath.Join("/sys/fs/cgroup", cgroupRoot)}
	}
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var dirs []string
	for _, e := range ents {
		if e.IsDir() || e.Type()&os.ModeSymlink == 0 {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", e.Name(), "cgroup.procs")); err == nil {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), cgroupRoot))
			}
		}
	}
	return dirs
}

// makeCgroups creates the cgroup root (cpuset's cpus and mems copied
// from its parent, or no task could join it).
func makeCgroups() error {
	for _, d := range cgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			return fmt.Errorf("cgroup %s exists: another node test runs, or one was killed", d)
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(d), f)); err == nil {
				_ = os.WriteFile(filepath.Join(d, f), b, 0o644)
			}
		}
	}
	return nil
}

// removeCgroups kills every process left in the cgroup root's tree and
// removes its cgroups, deepest first.
func removeCgroups() error {
	var errs []error
	for _, root := range cgroupDirs() {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for try := 0; try < 50; try++ {
				killProcs(d)
				if err = os.Remove(d); err == nil || os.IsNotExist(err) {
					err = nil
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// killProcs sends SIGKILL to every process of cgroup dir.
func killProcs(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// mountsUnder are the mount points under any of dirs, deepest first.
func mountsUnder(dirs ...string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		for _, d := range dirs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				out = append(out, mp)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unmountUnder unmounts (lazily) everything mounted under dirs.
func unmountUnder(dirs ...string) error {
	var errs []error
	for _, mp := range mountsUnder(dirs...) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// newHostPaths are the hostPaths that do not exist now.
func newHostPaths() []string {
	var out []string
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			out = append(out, p)
		}
	}
	return out
}

// processesWith are the PIDs whose command line contains s.
func processesWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// leftovers names whatever the node left on the machine: its bridge, the
// Service range's route, nftables tables, cgroups, mounts or processes of
// its directory, the machine's paths it created, sysctls not as before,
// the directory itself.
func leftovers(dir string, before map[string]string, fresh []string) []string {
	var out []string
	if _, err := net.InterfaceByName(Bridge); err == nil {
		out = append(out, "interface "+Bridge)
	}
	if b, _ := exec.Command("ip", "route", "show", ServiceCIDR).Output(); strings.TrimSpace(string(b)) != "" {
		out = append(out, "route "+strings.TrimSpace(string(b)))
	}
	for _, t := range [][2]string{{"inet", guardTable}, {"ip", "kube-proxy"}, {"ip6", "kube-proxy"}} {
		if exec.Command("nft", "list", "table", t[0], t[1]).Run() == nil {
			out = append(out, "nftables table "+t[0]+" "+t[1])
		}
	}
	for _, d := range cgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			out = append(out, "cgroup "+d)
		}
	}
	for _, mp := range mountsUnder(append([]string{dir}, fresh...)...) {
		out = append(out, "mount "+mp)
	}
	for _, pid := range processesWith(dir) {
		out = append(out, "process "+strconv.Itoa(pid))
	}
	for _, p := range append([]string{dir}, fresh...) {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, "path "+p)
		}
	}
	now := readSysctls()
	for k, v := range before {
		if now[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s=%s (was %s)", k, now[k], v))
		}
	}
	return out
}

// kubeletRoot makes root, the kubelet's root directory, a tmpfs of the
// node's own (Stop unmounts it with everything under the node's
// directory). The kubelet makes its sockets (pod resources, the device
// plugins' registration) by binding a temporary name and renaming it, and
// some machines' temporary directories refuse to rename a socket (EXDEV).
// Where a tmpfs cannot be mounted the directory is used as it is. Either
// way the rename is tried first, so that a machine that refuses it fails
// here, saying so, rather than as a kubelet that exits at start.
func kubeletRoot(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	mountErr := syscall.Mount("tmpfs", root, "tmpfs", 0, "mode=0755")
	if err := renameSocket(root); err != nil {
		if mountErr != nil {
			err = fmt.Errorf("%w (and a tmpfs could not be mounted there: %v)", err, mountErr)
		}
		return fmt.Errorf("the kubelet's root directory %s cannot hold its sockets: %w", root, err)
	}
	return nil
}

// renameSocket binds a unix socket in dir under a temporary name and
// renames it, as the kubelet does with each of its sockets.
func renameSocket(dir string) error {
	tmp, final := filepath.Join(dir, "probe-tmp"), filepath.Join(dir, "probe.sock")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Remove(final)
}
