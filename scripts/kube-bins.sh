#!/usr/bin/env bash
# Builds, once, the binaries the Kubernetes tests run (internal/kubetest):
# kube-apiserver and etcd (the layout controller-runtime's envtest reads
# from KUBEBUILDER_ASSETS) and kwok (fake nodes and pod lifecycles), plus
# kwok's Stage files and CRDs copied out of its module. Everything is built
# from Go modules with the Go toolchain, each in a scratch module of its
# own, into a cache directory keyed by the versions and the platform:
#
#   ${BULKHEADLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkheadlab}/kube/<key>/
#     bin/kube-apiserver   bin/etcd         (KUBEBUILDER_ASSETS=<dir>/bin)
#     bin/kwok                              (BULKHEADLAB_KWOK=<dir>/bin/kwok)
#     kwok/stage/...       kwok/crd/...     (kwok's kustomize/stage and CRDs)
#
# The cache directory is printed on the last line of stdout:
#   dir=$(bash scripts/kube-bins.sh | tail -1)
# When everything is there already it returns at once. A first build takes
# about 8 minutes on 2 cores (kube-apiserver alone about 7).
set -euo pipefail

K8S_VERSION=1.37.2      # k8s.io/kubernetes v1.37.2, its staging modules v0.37.2
ETCD_VERSION=3.7.3      # go.etcd.io/etcd/server/v3
KWOK_VERSION=0.8.0      # sigs.k8s.io/kwok

goos=$(go env GOOS)
goarch=$(go env GOARCH)
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_${goos}-${goarch}"
root="${BULKHEADLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkheadlab}/kube"
dir="$root/$key"

if [ -x "$dir/bin/kube-apiserver" ] && [ -x "$dir/bin/etcd" ] && [ -x "$dir/bin/kwok" ] &&
	[ -d "$dir/kwok/stage" ] && [ -d "$dir/kwok/crd" ]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$dir/bin" "$dir/kwok"
# shellcheck source=gobuild.lib.sh
. "$(dirname "$0")/gobuild.lib.sh"

# kube-apiserver: k8s.io/kubernetes as a dependency (gobuild.lib.sh).
if [ ! -x "$dir/bin/kube-apiserver" ]; then
	mod=$(kubernetes_module apiserver "$K8S_VERSION")
	build bin/kube-apiserver "$mod" k8s.io/kubernetes/cmd/kube-apiserver
fi

# etcd: the server's main package.
if [ ! -x "$dir/bin/etcd" ]; then
	mod=$(scratch etcd)
	echo "require go.etcd.io/etcd/server/v3 v$ETCD_VERSION" >>"$mod/go.mod"
	build bin/etcd "$mod" go.etcd.io/etcd/server/v3
fi

# kwok: the binary, and its Stage files and CRDs.
mod=$(scratch kwok)
echo "require sigs.k8s.io/kwok v$KWOK_VERSION" >>"$mod/go.mod"
build bin/kwok "$mod" sigs.k8s.io/kwok/cmd/kwok
if [ ! -d "$dir/kwok/stage" ] || [ ! -d "$dir/kwok/crd" ]; then
	src=$(cd "$mod" && go mod download -json sigs.k8s.io/kwok@v$KWOK_VERSION | sed -n 's/.*"Dir": *"\([^"]*\)".*/\1/p')
	tmp=$(mktemp -d "$dir/kwok/.tmp.XXXXXX")
	cp -r "$src/kustomize/stage" "$tmp/stage"
	find "$tmp/stage" -name "*.go" -delete
	cp -r "$src/kustomize/crd/bases" "$tmp/crd"
	chmod -R u+w "$tmp"
	rm -rf "$dir/kwok/stage" "$dir/kwok/crd"
	mv "$tmp/stage" "$dir/kwok/stage"
	mv "$tmp/crd" "$dir/kwok/crd"
	rmdir "$tmp"
fi

echo "$dir"
