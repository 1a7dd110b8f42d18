#!/usr/bin/env bash
# Builds eidolon (installing what is missing on the first run) and runs the main job: train-gpt
# (examples/train-gpt, an unmodified CUDA/cuBLAS/NCCL training program) training llama3-8b with
# FSDP as 16 ranks under `eidolon run` on topologies/default.yaml (2 nodes x 8 H100, rail-optimized
# 400 Gb/s InfiniBand), in the layout of NVIDIA's published 16-GPU Llama 3.1 8B run (dgxc-benchmarking:
# sequence 8192, context parallel 2, micro-batch 1, global batch 256 = 32 accumulation steps, bf16;
# measured 13.0 s per step). Prints the program's step lines and the run summary; the summary and a
# Perfetto trace land in eidolon-out/.
#
#   ./scripts/main.sh                       the training run (extra arguments replace train-gpt's)
#   ./scripts/main.sh collective [ARGS]     collective-bench (nccl-tests' all_reduce_perf) instead,
#                                           default ARGS: all_reduce -b 8 -e 1G -f 4 -g 1
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
topology="$root/topologies/default.yaml"
out=eidolon-out
"$root/scripts/build.sh"

if [ "${1:-}" = collective ]; then
  shift
  program=("$build/bin/collective-bench")
  args=("$@")
  [ ${#args[@]} -gt 0 ] || args=(all_reduce -b 8 -e 1G -f 4 -g 1)
else
  program=("$build/bin/train-gpt")
  args=("$@")
  [ ${#args[@]} -gt 0 ] || args=(--model llama3-8b --fsdp --seq-len 8192 --cp 2 --local-batch 1
                                 --global-batch 256 --steps 4 --warmup-steps 1)
fi
"$build/bin/eidolon" topo check "$topology"
echo
status=0
"$build/bin/eidolon" run --topology "$topology" --out "$out" -- "${program[@]}" "${args[@]}" ||
  status=$?
echo
echo "run summary: $out/summary.json; trace: $out/trace.json (open it in https://ui.perfetto.dev)"
exit $status
