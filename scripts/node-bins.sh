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
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch"
go_version=$(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1.0/')

# build OUT MODULEDIR PACKAGE: go build PACKAGE in the scratch module
# MODULEDIR into $dir/OUT, through a temporary file renamed into place.
build() {
	local out=$1 mod=$2 pkg=$3 start=$SECONDS
	if [ -x "$dir/$out" ]; then
		echo "$out: cached" >&2
		return
	fi
	echo "$out: building $pkg" >&2
	(cd "$mod" && nice -n 10 go build -trimpath -ldflags "-s -w" -o "$dir/$out.tmp" "$pkg")
	mv -f "$dir/$out.tmp" "$dir/$out"
	echo "$out: built in $((SECONDS - start)) s" >&2
}

# scratch NAME: a new empty module directory.
scratch() {
	mkdir -p "$scratch/$1"
	printf 'module scratch/%s\n\ngo %s\n' "$1" "$go_version" >"$scratch/$1/go.mod"
	echo "$scratch/$1"
}

# kubelet and kube-proxy: k8s.io/kubernetes as a dependency, its ./staging
# replacements rewritten to the published staging modules (as kube-bins.sh
# does for kube-apiserver, so Go's build cache is shared with it).
mod=$(scratch kubernetes)
kmod=$(cd "$mod" && go mod download -json k8s.io/kubernetes@v$K8S_VERSION | sed -n 's/.*"GoMod": *"\([^"]*\)".*/\1/p')
{
	echo "require k8s.io/kubernetes v$K8S_VERSION"
	echo "replace ("
	sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#\t\1 => \1 v0.'"${K8S_VERSION#1.}"'#p' "$kmod"
	sed -n '/^replace (/,/^)/p' "$kmod" | grep '=>' | grep -v '\./staging/' || true
	echo ")"
} >>"$mod/go.mod"
build bin/kubelet "$mod" k8s.io/kubernetes/cmd/kubelet
build bin/kube-proxy "$mod" k8s.io/kubernetes/cmd/kube-proxy

# CNI plugins: the pod's veth on a bridge, its address from a range, lo.
mod=$(scratch cni)
echo "require github.com/containernetworking/plugins v$CNI_VERSION" >>"$mod/go.mod"
build cni/bridge "$mod" github.com/containernetworking/plugins/plugins/main/bridge
build cni/host-local "$mod" github.com/containernetworking/plugins/plugins/ipam/host-local
build cni/loopback "$mod" github.com/containernetworking/plugins/plugins/main/loopback

echo "$dir"
