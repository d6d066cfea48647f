#!/usr/bin/env bash
# Runs a preset and commits-ready keeps its results as a reference:
#   scripts/reference.sh PRESET [DEST]   (DEST defaults to results/reference-PRESET)
# Kept: index.json, spec.yaml and, per run, meta.json and the data the
# analysis reads (windows, phases, metrics) gzip-compressed; left out: the
# raw vegeta files, the components' logs and earlier INVALID attempts. The
# report (summary.json, report.md, index.html, figures of repeat 1) is then
# rendered from the kept data alone, so that `bulkheadlab report DEST
# --run-figures 1` reproduces it (analysis's TestReferenceRegenerates).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:?usage: scripts/reference.sh PRESET [DEST]}
dest=${2:-results/reference-$preset}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bulkheadlab" ./cmd/bulkheadlab
# The verdicts may be anything: the reference records what was measured.
"$work/bulkheadlab" run "$preset" --out "$work/out" || echo "run exited $? (kept: a reference records any outcome)"
src=$(ls -d "$work/out/$preset"/*/ | head -n 1)
rm -rf "$dest"
mkdir -p "$dest/runs"
cp "$src/index.json" "$src/spec.yaml" "$dest/"
for id in $(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$src/index.json"); do
	mkdir -p "$dest/runs/$id"
	cp "$src/runs/$id/meta.json" "$dest/runs/$id/"
	for f in windows.jsonl phases.json metrics.jsonl; do
		[ -f "$src/runs/$id/$f" ] && gzip -9 -n -c "$src/runs/$id/$f" >"$dest/runs/$id/$f.gz"
	done
done
"$work/bulkheadlab" report "$dest" --run-figures 1 >/dev/null
du -sh "$dest"
