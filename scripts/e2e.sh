#!/usr/bin/env bash
# The end-to-end tests: every preset run for real, each verdict shown able
# to fail. Runs only the tests of cmd/bulkheadlab's e2e-tagged files; the
# package's other tests run with `go test -race ./...` already.
#
#   bash scripts/e2e.sh [--ci] [go test flags...]
#
# --ci leaves out the tests below, to keep CI's whole run within its time
# budget on 2 cores (the full suite takes about 22 minutes there): each
# checks an older preset whose verdict logic the analysis' unit tests
# cover on recorded and synthetic runs, or something another e2e test
# CI runs also exercises. Run the full suite before changing what they
# test.
set -euo pipefail
cd "$(dirname "$0")/.."
not_in_ci=(
	TestLeakHuntDefects          # leak on timeout and cancel; leak on error and the racy counter: TestALeakIsNotSupportedWhereverTheMatrixLooks, TestOneSharedConnectionLimitPasses
	TestShardsReproduceDefault   # loadgen/shards' tests merge shards exactly; the cluster tests run shard pods
	TestAuditPreset              # the audit of the built-in service: TestAuditOnePool and the external audits
	TestRunExternalTwoModesByCommand # external modes by command: the evidence tests start theirs so
	TestBulkheadSizingPreset     # the sizing curve
	TestAutoRepeatsStopWhenClear # repeats: auto
	TestAdaptivePinnedToThePoolDoesNotIsolate # the third adaptive-limit layout
)
ci=false
if [ "${1:-}" = "--ci" ]; then
	ci=true
	shift
fi
names=$(grep -l '^//go:build e2e' cmd/bulkheadlab/*_test.go | xargs grep -ho '^func Test[A-Za-z0-9_]*' | sed 's/^func //' | sort -u)
if [ -z "$names" ]; then
	echo "e2e.sh: no e2e-tagged tests found" >&2
	exit 1
fi
if $ci; then
	for n in "${not_in_ci[@]}"; do
		grep -qx "$n" <<<"$names" || { echo "e2e.sh: $n is not an e2e test (not_in_ci is stale)" >&2; exit 1; }
	done
	names=$(grep -vxF -f <(printf '%s\n' "${not_in_ci[@]}") <<<"$names")
fi
exec go test -tags e2e -timeout 30m -run "^($(paste -sd'|' - <<<"$names"))\$" "$@" ./cmd/bulkheadlab
