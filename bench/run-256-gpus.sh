#!/usr/bin/env bash
# 256 simulated H100s (32 DGX nodes of dgx-h100-128node) running a collective loop: collective-bench
# all_reduce of 64 MiB, 1 warm-up + 10 timed iterations per buffer placement, one process per GPU.
# Prints the run's summary, the wall time, the simulator's peak resident memory, and the peak of
# the summed resident memory of all rank processes (sampled every 0.5 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
out=${1:-/tmp/eidolon-256}
mkdir -p "$out"
peak=0
(
  while sleep 0.5; do
    ps -C collective-bench -o rss= 2>/dev/null | awk '{s+=$1} END {print s+0}'
  done
) >"$out/rank-rss.txt" &
sampler=$!
start=$(date +%s.%N)
/usr/bin/time -v "$build/bin/eidolon" run --topology dgx-h100-128node --nodes 32 --gpus-per-node 8 \
  --out "$out" --progress off -- "$build/bin/collective-bench" all_reduce -b 64M -e 64M -w 1 -n 10 -g 1 \
  >"$out/stdout.txt" 2>"$out/stderr.txt" || true
end=$(date +%s.%N)
kill $sampler 2>/dev/null || true
grep -E "^\[rank0\]: +67108864" "$out/stdout.txt" || true
grep -E "virtual end|wall time|records ingested|flows|causality" "$out/stderr.txt" || true
echo "wall seconds (whole run incl. process start): $(echo "$end - $start" | bc)"
echo "simulator peak RSS: $(grep 'Maximum resident' "$out/stderr.txt" | awk '{print $6/1024 " MiB"}')"
echo "ranks' summed RSS, peak: $(sort -n "$out/rank-rss.txt" | tail -1 | awk '{print $1/1024 " MiB"}')"
