#!/usr/bin/env bash
# Builds, once, the binaries of the real node that the node tests run
# (internal/nodetest): kubelet and kube-proxy from k8s.io/kubernetes (the
# same version and the same scratch-module approach as scripts/kube-bins.sh's
# kube-apiserver), and the CNI plugins bridge, host-local and loopback from
# github.com/containernetworking/plugins, into a cache directory beside
# kube-bins.sh's, keyed by the versions and the platform:
#
#   ${BULKHEADLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkheadlab}/node/<key>/
#     bin/kubelet  bin/kube-proxy            (BULKHEADLAB_NODE_BINS=<dir>/bin)
#     cni/bridge   cni/host-local  cni/loopback
#
# The cache directory is printed on the last line of stdout:
#   dir=$(bash scripts/node-bins.sh | tail -1)
# When everything is there already it returns at once. Builds run under
# `nice -n 10`. containerd and runc are not built: they are Debian's
# (.ci/run installs them); the pause image and the project's image are
# built by the tests themselves (internal/ociimage).
set -euo pipefail

K8S_VERSION=1.37.2      # k8s.io/kubernetes v1.37.2, its staging modules v0.37.2
CNI_VERSION=1.10.0      # github.com/containernetworking/plugins

goos=$(go env GOOS)
goarch=$(go env GOARCH)
key="k8s-${K8S_VERSION}_cni-${CNI_VERSION}_${goos}-${goarch}"
root="${BULKHEADLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkheadlab}/node"
dir="$root/$key"

bins=(bin/kubelet bin/kube-proxy cni/bridge cni/host-local cni/loopback)
all() {
	local f
	for f in "${bins[@]}"; do [ -x "$dir/$f" ] || return 1; done
}
if all; then
	echo "$dir"
	exit 0
fi

mkdir -p "$dir/bin" "$dir/cni"
# shellcheck source=gobuild.lib.sh
. "$(dirname "$0")/gobuild.lib.sh"

# kubelet and kube-proxy: k8s.io/kubernetes as a dependency, as kube-bins.sh
# builds kube-apiserver (gobuild.lib.sh), so Go's build cache is shared.
mod=$(kubernetes_module kubernetes "$K8S_VERSION")
build bin/kubelet "$mod" k8s.io/kubernetes/cmd/kubelet
build bin/kube-proxy "$mod" k8s.io/kubernetes/cmd/kube-proxy

# CNI plugins: the pod's veth on a bridge, its address from a range, lo.
mod=$(scratch cni)
echo "require github.com/containernetworking/plugins v$CNI_VERSION" >>"$mod/go.mod"
build cni/bridge "$mod" github.com/containernetworking/plugins/plugins/main/bridge
build cni/host-local "$mod" github.com/containernetworking/plugins/plugins/ipam/host-local
build cni/loopback "$mod" github.com/containernetworking/plugins/plugins/main/loopback

echo "$dir"
