#!/usr/bin/env bash
# Benchmark the fault proxy against Toxiproxy, side by side in one run.
#
#   bash scripts/bench-proxy.sh [proxybench flags...]
#
# Builds bulkheadlab and the proxybench program, installs the pinned
# Toxiproxy server (a Go module, fetched by the go command; not a
# dependency of this module) into a temporary folder, and runs
# cmd/proxybench, which prints a markdown report on stdout. Every
# process it starts listens on 127.0.0.1 and ends with it. Flags are
# passed through, e.g. -duration 10s, -rates 1000,3000,5000,
# -phases latency, -phases profile -profile-dir prof/, -phases tcp (the
# TCP data planes: ours with --protocol tcp, Toxiproxy's, a TCP echo
# upstream).
set -euo pipefail
cd "$(dirname "$0")/.."

TOXIPROXY_VERSION=v2.12.0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/bulkheadlab" ./cmd/bulkheadlab
go build -o "$work/proxybench" ./cmd/proxybench
# Build Toxiproxy outside this module so that its requirements never touch
# go.mod.
(cd "$work" && GOBIN="$work" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION")
mv "$work/server" "$work/toxiproxy-server"

# The load generator runs at the default niceness with every core; the
# children (upstream and both proxies) are started identically (see
# -child-nice and -child-procs).
"$work/proxybench" -bulkheadlab "$work/bulkheadlab" -toxiproxy "$work/toxiproxy-server" "$@"
