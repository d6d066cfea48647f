#!/usr/bin/env bash
# Build bulkheadlab's container image: the static binary alone, FROM
# scratch, run as user 65532:65532 with the entrypoint /bulkheadlab (so a
# pod's args are the subcommand: ["proxy", ...], ["shard", ...]). Needs only
# Go: no Docker daemon, no base image (scripts/mkimage writes the image).
# The binary is stripped (-trimpath -ldflags "-s -w") and, by default,
# bulkheadlab's default build: the proxy and shard pods of a run on a
# cluster need nothing else.
#
#   bash scripts/image.sh [NAME] [--tar FILE] [--oci DIR] [--push [--insecure]] [--tags TAGS]
#
#   NAME        the image's name (default bulkheadlab:VERSION; env IMAGE_NAME)
#   --tar FILE  write a tarball for docker load / kind load image-archive /
#               minikube image load (default bulkheadlab-image.tar, written
#               when neither --oci nor --push is given; env IMAGE_TAR)
#   --oci DIR   add the image to an OCI image layout (env IMAGE_OCI)
#   --push      push to NAME's registry, e.g. localhost:5001/bulkheadlab:dev,
#               with the credentials of `docker login` / the docker config
#               (env IMAGE_PUSH=1)
#   --insecure  with --push: plain HTTP for a registry without TLS (env
#               IMAGE_INSECURE=1; localhost and loopback need no flag)
#   --tags TAGS build tags of the binary (env IMAGE_TAGS), e.g. kube for
#               an image that can also be the runner of run --kubernetes,
#               in a pod (a CI job on the cluster)
#
# Other environment: GOARCH (default amd64) and GOARM pick the platform;
# VERSION (default `git describe --tags --always --dirty`, else dev) is
# stamped into the binary (main.version), the version label and the
# default tag; IMAGE_SOURCE sets the org.opencontainers.image.source label;
# SOURCE_DATE_EPOCH the creation time (default the Unix epoch, so the same
# commit gives the same digest). Relative paths are taken from the folder
# it is run in.
#
# Then, with the default name and tarball:
#   docker load -i bulkheadlab-image.tar                # docker / podman load
#   kind load image-archive bulkheadlab-image.tar       # a kind cluster (--name CLUSTER)
#   minikube image load bulkheadlab-image.tar           # minikube
#   bash scripts/image.sh localhost:5001/bulkheadlab:dev --push   # a local registry
# and in a pod: image: bulkheadlab:VERSION with imagePullPolicy: IfNotPresent
# (a loaded image is not in any registry), args: ["proxy", ...].
set -euo pipefail

here=$PWD
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$here/$1" ;; esac; }

name=${IMAGE_NAME:-}
tar=${IMAGE_TAR:-}
oci=${IMAGE_OCI:-}
push=${IMAGE_PUSH:-}
insecure=${IMAGE_INSECURE:-}
tags=${IMAGE_TAGS:-}
while [ $# -gt 0 ]; do
	case "$1" in
	--tar) tar=${2:?--tar needs a file}; shift 2 ;;
	--oci) oci=${2:?--oci needs a folder}; shift 2 ;;
	--push) push=1; shift ;;
	--insecure) insecure=1; shift ;;
	--tags) tags=${2?--tags needs build tags}; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "image.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
	*)
		if [ -n "${named:-}" ]; then
			echo "image.sh: one NAME only (got $name and $1)" >&2; exit 2
		fi
		name=$1 named=1; shift ;;
	esac
done
if [ -z "$tar" ] && [ -z "$oci" ] && [ "$push" != 1 ]; then
	tar=bulkheadlab-image.tar
fi

cd "$(dirname "$0")/.."

version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=$(git rev-parse HEAD 2>/dev/null || true)
arch=${GOARCH:-amd64}
platform=linux/$arch
if [ "$arch" = arm ] && [ -n "${GOARM:-}" ]; then
	platform=$platform/v${GOARM%%,*}
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building bulkheadlab $version for $platform${tags:+ with -tags $tags}" >&2
CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -tags "$tags" \
	-ldflags "-s -w -X main.version=$version" \
	-o "$work/bulkheadlab" ./cmd/bulkheadlab
# mkimage runs here, so it is built for this machine whatever GOARCH says.
env -u GOOS -u GOARCH -u GOARM go build -o "$work/mkimage" ./scripts/mkimage

args=(--binary "$work/bulkheadlab" --version "$version" --platform "$platform")
[ -n "$name" ] && args+=(--name "$name")
[ -n "$revision" ] && args+=(--revision "$revision")
[ -n "${IMAGE_SOURCE:-}" ] && args+=(--source "$IMAGE_SOURCE")
[ -n "$tar" ] && args+=(--tar "$(abs "$tar")")
[ -n "$oci" ] && args+=(--oci "$(abs "$oci")")
[ "$push" = 1 ] && args+=(--push)
[ "$insecure" = 1 ] && args+=(--insecure)
"$work/mkimage" "${args[@]}"
