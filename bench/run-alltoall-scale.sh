#!/usr/bin/env bash
# Live alltoall at scale: collective-bench alltoall of 1 GiB (one timed iteration, no warm-up) on
# N nodes x 8 GPUs of dgx-h100-128node through `eidolon run`, one process per node driving its 8
# GPUs (nccl-tests' -g 8). Prints per size of cluster the wall time of the whole run (start-up
# included), the largest process's peak resident memory (the simulator's), the flows and the flow model's rate solves
# (summary.json), the causality violations and the alltoall's virtual time as collective-bench
# reports it.
#
#   bench/run-alltoall-scale.sh [OUT_DIR] [NODES...]   (default nodes: 16 32 64)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
out=${1:-/tmp/eidolon-alltoall-scale}
shift || true
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=(16 32 64)
mkdir -p "$out"
printf '| ranks | wall s (run) | peak RSS (simulator) | flows | rate solves (flows each) | violations | virtual alltoall |\n'
printf '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for n in "${nodes[@]}"; do
  dir="$out/nodes$n"
  rm -rf "$dir"
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$out/rss-$n.txt" "$build/bin/eidolon" run --topology dgx-h100-128node \
    --nodes "$n" --gpus-per-node 8 --launch node --out "$dir" --progress off -- \
    "$build/bin/collective-bench" alltoall -b 1G -e 1G -g 8 -w 0 -n 1 \
    >"$out/stdout-$n.txt" 2>"$out/stderr-$n.txt"
  end=$(date +%s.%N)
  python3 - "$dir/summary.json" "$out/stdout-$n.txt" "$out/rss-$n.txt" "$n" \
    "$(echo "$end - $start" | bc)" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
virtual = "?"
for line in open(sys.argv[2]):
    fields = line.split()
    if len(fields) > 6 and fields[1] == "1073741824":
        virtual = f"{float(fields[6]) / 1000:.2f} ms"
rss_kb = int(open(sys.argv[3]).read().split()[-1])
solves = summary.get("rate_solves", {})
count = solves.get("count", 0)
each = solves.get("flows", 0) / count if count else 0
print(f"| {int(sys.argv[4]) * 8} | {float(sys.argv[5]):.1f} | {rss_kb / 1048576:.2f} GB | "
      f"{summary['flows']:,} | {count} ({each:,.0f}) | "
      f"{summary['causality_violations']['count']} | {virtual} |")
PY
done
