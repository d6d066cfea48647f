#!/usr/bin/env bash
# How often an experiment decides its verdicts beside other work:
#
#   bash scripts/decided.sh [-n RUNS] [-duty SHARE] [-keep DIR] [PRESET] [-- run flags...]
#
# Builds bulkheadlab, starts a process that keeps one core busy for SHARE
# of every 10 ms (default 0.5: 5 ms busy, 5 ms asleep, at the default
# niceness, as a laptop's browser or a shared CI runner's neighbour), runs
# `bulkheadlab run PRESET` RUNS times (default 10, the default experiment)
# beside it and prints, per verdict, how many runs decided it (SUPPORTED or
# NOT SUPPORTED) and how many gave each outcome, with every run's exit code
# and duration. -duty 0 runs without the busy process (lagsense's noise,
# -noise-only); -keep DIR keeps each run's summary.json and console output
# there. Needs python3 to read summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10
duty=0.5
preset=slow-dependency
keep=
while [ $# -gt 0 ]; do
	case "$1" in
	-n) runs=$2; shift 2 ;;
	-duty) duty=$2; shift 2 ;;
	-keep) keep=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "decided.sh: unknown flag $1" >&2; exit 2 ;;
	*) preset=$1; shift ;;
	esac
done

work=$(mktemp -d)
busy=
cleanup() {
	[ -n "$busy" ] && kill "$busy" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/bulkheadlab" ./cmd/bulkheadlab

if [ "$duty" != 0 ]; then
	go build -o "$work/lagsense" ./cmd/lagsense
	"$work/lagsense" -noise "$duty" -noise-only &
	busy=$!
fi

echo "# $preset, $runs runs beside a core busy $duty of the time"
echo
echo "| run | exit | seconds | verdicts |"
echo "|---|---|---|---|"
for i in $(seq 1 "$runs"); do
	start=$(date +%s)
	rc=0
	"$work/bulkheadlab" run "$preset" --out "$work/out-$i" "$@" >"$work/console-$i.txt" 2>&1 || rc=$?
	secs=$(($(date +%s) - start))
	sum=$(ls -d "$work/out-$i/$preset"/*/ 2>/dev/null | head -n 1)summary.json
	line=$(python3 -c 'import json,sys
try:
    d = json.load(open(sys.argv[1]))
except OSError:
    print("(no summary.json)"); sys.exit()
print(", ".join("%s %s" % (v["name"], v["outcome"]) for v in d["verdicts"]))' "$sum")
	echo "| $i | $rc | $secs | $line |"
	[ -f "$sum" ] && cp "$sum" "$work/summary-$i.json"
	if [ -n "$keep" ]; then
		mkdir -p "$keep"
		cp "$work/console-$i.txt" "$keep/"
		[ -f "$sum" ] && cp "$sum" "$keep/summary-$i.json"
	fi
done

echo
python3 - "$work" "$runs" <<'EOF'
import glob, json, sys, collections
work, runs = sys.argv[1], int(sys.argv[2])
out = collections.OrderedDict()
for f in sorted(glob.glob(work + "/summary-*.json")):
    for v in json.load(open(f))["verdicts"]:
        out.setdefault(v["name"], collections.Counter())[v["outcome"]] += 1
print("| verdict | decided | outcomes |")
print("|---|---|---|")
for name, c in out.items():
    decided = c["SUPPORTED"] + c["NOT SUPPORTED"]
    print("| %s | %d of %d | %s |" % (name, decided, runs, ", ".join("%s %d" % kv for kv in sorted(c.items()))))
EOF
