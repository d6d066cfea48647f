#!/usr/bin/env bash
# The end-to-end tests: every preset run for real, each verdict shown able
# to fail. Runs only the tests of cmd/bulkheadlab's e2e-tagged files; the
# package's other tests run with `go test -race ./...` already.
#
#   bash scripts/e2e.sh [go test flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
names=$(grep -l '^//go:build e2e' cmd/bulkheadlab/*_test.go | xargs grep -ho '^func Test[A-Za-z0-9_]*' | sed 's/^func //' | sort -u | paste -sd'|' -)
if [ -z "$names" ]; then
	echo "e2e.sh: no e2e-tagged tests found" >&2
	exit 1
fi
exec go test -tags e2e -timeout 30m -run "^($names)\$" "$@" ./cmd/bulkheadlab
