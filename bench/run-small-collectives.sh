#!/usr/bin/env bash
# The cost of NCCL's data exchange when no rank holds host data (gpu-emu/README.md "Device memory
# and data"): 8 simulated H100s of topologies/default.yaml, collective-bench all_reduce of 1 KiB,
# 5 warm-up + N timed iterations out of place and in place (4,010 all-reduces per rank for the
# default N = 2000), one process per GPU. Prints the virtual end, the wall time of three runs,
# and, when strace is installed, a count of the file system calls of one run (all processes).
# usage: bench/run-small-collectives.sh [OUT_DIR] [ITERATIONS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
out=${1:-/tmp/eidolon-small-collectives}
iterations=${2:-2000}
mkdir -p "$out"
run() {
  "$@" "$build/bin/eidolon" run --topology "$root/topologies/default.yaml" --gpus 8 --progress off \
    --out "$out/run" -- "$build/bin/collective-bench" all_reduce -b 1K -e 1K -w 5 -n "$iterations" \
    >"$out/log.txt" 2>&1
}
printf '%-6s %12s %10s\n' run "virtual end" "wall (s)"
for i in 1 2 3; do
  start=$(date +%s.%N)
  run
  end=$(date +%s.%N)
  virtual=$(grep -E "^virtual end" "$out/log.txt" | awk '{print $3 " " $4}')
  printf '%-6s %12s %10.2f\n' "$i" "$virtual" "$(echo "$end - $start" | bc)"
done
if command -v strace >/dev/null; then
  run strace -f -c -o "$out/strace.txt"
  echo "system calls of one run (all processes):"
  grep -E " (total|openat|access|rename|unlink|munmap|newfstatat)$" "$out/strace.txt" |
    awk '{print "  " $NF ": " $4}'
fi
