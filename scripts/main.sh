#!/usr/bin/env bash
# Builds eidolon and runs the main job: collective-bench (nccl-tests' all_reduce_perf, unmodified
# CUDA/NCCL code) as 16 ranks under `eidolon run` on topologies/default.yaml (2 nodes x 8 H100,
# rail-optimized 400 Gb/s InfiniBand). Prints the program's table and the run summary; the
# summary and a Perfetto trace land in eidolon-out/. Extra arguments replace the benchmark's
# (default: all_reduce -b 8 -e 1G -f 4 -g 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
  args=(all_reduce -b 8 -e 1G -f 4 -g 1)
fi
"$build/bin/eidolon" topo check "$root/topologies/default.yaml"
echo
exec "$build/bin/eidolon" run --topology "$root/topologies/default.yaml" --out eidolon-out \
  -- "$build/bin/collective-bench" "${args[@]}"
