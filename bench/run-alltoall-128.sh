#!/usr/bin/env bash
# A live 128-rank alltoall: collective-bench alltoall of 1 GiB on 16 DGX nodes of dgx-h100-128node
# (one process per node driving its 8 GPUs, as nccl-tests' -g 8), run twice: 1 and 11 timed
# iterations per buffer placement (2 and 22 alltoalls). The difference of the two wall times over
# 20 is the wall time of one alltoall, start-up excluded. Each alltoall is 16,256 send/recv pairs
# that the simulator matches and posts one by one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
out=${1:-/tmp/eidolon-alltoall-128}
mkdir -p "$out"
declare -A wall
for n in 1 11; do
  start=$(date +%s.%N)
  "$build/bin/eidolon" run --topology dgx-h100-128node --nodes 16 --gpus-per-node 8 --launch node \
    --out "$out/n$n" --progress off -- "$build/bin/collective-bench" alltoall -b 1G -e 1G -g 8 \
    -w 0 -n "$n" >"$out/stdout-$n.txt" 2>"$out/stderr-$n.txt"
  end=$(date +%s.%N)
  wall[$n]=$(echo "$end - $start" | bc)
  grep -E "^\[node0\]: +1073741824" "$out/stdout-$n.txt" || true
  grep -E "virtual end|flows|causality" "$out/stderr-$n.txt" || true
  echo "-n $n: ${wall[$n]} s wall (whole run)"
done
echo "wall seconds per alltoall: $(echo "scale=3; (${wall[11]} - ${wall[1]}) / 20" | bc)"
