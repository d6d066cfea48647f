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
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch"
go_version=$(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1.0/')

# build NAME MODULEDIR PACKAGE: go build PACKAGE in the scratch module
# MODULEDIR into bin/NAME, through a temporary file renamed into place.
build() {
	local name=$1 mod=$2 pkg=$3 start=$SECONDS
	if [ -x "$dir/bin/$name" ]; then
		echo "$name: cached" >&2
		return
	fi
	echo "$name: building $pkg" >&2
	(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$dir/bin/.$name.tmp" "$pkg")
	mv -f "$dir/bin/.$name.tmp" "$dir/bin/$name"
	echo "$name: built in $((SECONDS - start)) s" >&2
}

# scratch NAME: a new empty module directory.
scratch() {
	mkdir -p "$scratch/$1"
	printf 'module scratch/%s\n\ngo %s\n' "$1" "$go_version" >"$scratch/$1/go.mod"
	echo "$scratch/$1"
}

# kube-apiserver: k8s.io/kubernetes as a dependency, its ./staging
# replacements rewritten to the published staging modules.
if [ ! -x "$dir/bin/kube-apiserver" ]; then
	mod=$(scratch apiserver)
	kmod=$(cd "$mod" && go mod download -json k8s.io/kubernetes@v$K8S_VERSION | sed -n 's/.*"GoMod": *"\([^"]*\)".*/\1/p')
	{
		echo "require k8s.io/kubernetes v$K8S_VERSION"
		echo "replace ("
		# staging modules: k8s.io/X => ./staging/src/k8s.io/X becomes k8s.io/X v0.minor.patch
		sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#\t\1 => \1 v0.'"${K8S_VERSION#1.}"'#p' "$kmod"
		# any other replacement kubernetes pins (module => module version)
		sed -n '/^replace (/,/^)/p' "$kmod" | grep '=>' | grep -v '\./staging/' || true
		echo ")"
	} >>"$mod/go.mod"
	build kube-apiserver "$mod" k8s.io/kubernetes/cmd/kube-apiserver
fi

# etcd: the server's main package.
if [ ! -x "$dir/bin/etcd" ]; then
	mod=$(scratch etcd)
	echo "require go.etcd.io/etcd/server/v3 v$ETCD_VERSION" >>"$mod/go.mod"
	build etcd "$mod" go.etcd.io/etcd/server/v3
fi

# kwok: the binary, and its Stage files and CRDs.
mod=$(scratch kwok)
echo "require sigs.k8s.io/kwok v$KWOK_VERSION" >>"$mod/go.mod"
build kwok "$mod" sigs.k8s.io/kwok/cmd/kwok
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
