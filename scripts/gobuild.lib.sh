# Sourced by kube-bins.sh and node-bins.sh: building a binary of a Go module
# that is not this project's, in a scratch module of its own, into a cache
# directory. Before sourcing, set dir (the cache directory), goos and goarch;
# sourcing makes the scratch folder (removed on exit) and sets Go's
# environment for static builds of that platform.

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch"
go_version=$(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1.0/')

# build OUT MODULEDIR PACKAGE: go build PACKAGE in the scratch module
# MODULEDIR into $dir/OUT, through a temporary file renamed into place;
# nothing when $dir/OUT is there. Under nice -n 10: the machine goes on.
build() {
	local out=$1 mod=$2 pkg=$3 start=$SECONDS
	if [ -x "$dir/$out" ]; then
		echo "$out: cached" >&2
		return
	fi
	echo "$out: building $pkg" >&2
	mkdir -p "$(dirname "$dir/$out")"
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

# kubernetes_module NAME VERSION: a scratch module requiring
# k8s.io/kubernetes VERSION, its ./staging replacements rewritten to the
# published staging modules (v0.minor.patch) and its other replacements
# kept; the one recipe for every Kubernetes binary, so that they share Go's
# build cache.
kubernetes_module() {
	local mod kmod
	mod=$(scratch "$1")
	kmod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@v$2" | sed -n 's/.*"GoMod": *"\([^"]*\)".*/\1/p')
	{
		echo "require k8s.io/kubernetes v$2"
		echo "replace ("
		# staging modules: k8s.io/X => ./staging/src/k8s.io/X becomes k8s.io/X v0.minor.patch
		sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#\t\1 => \1 v0.'"${2#1.}"'#p' "$kmod"
		# any other replacement kubernetes pins (module => module version)
		sed -n '/^replace (/,/^)/p' "$kmod" | grep '=>' | grep -v '\./staging/' || true
		echo ")"
	} >>"$mod/go.mod"
	echo "$mod"
}
