#!/usr/bin/env bash
# The ground-truth measurements not yet taken on a real GPU, in one go for a session lent one
# (the device tool: `bash validation/gpu-truth/run-pending.sh`, about two minutes). Each program
# is built with nvcc and run alone; its JSON Lines, the build log and the device's description go
# to $OUT (or ./gpu-truth-out). Keep what comes back in validation/measurements/<gpu>-<date>/
# with a README saying GPU, driver and date, as the earlier directories there do.
#
# Pending: ll128-step.cu (issue 16's LL128 ring floor: the GPU and proxy share of one LL128 ring
# step where the ring leaves a node; ns3-module/doc/collective-model.md, "Rings across nodes").
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-truth-out}
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1
  nvidia-smi topo -m 2>&1
  nvcc --version 2>&1 | tail -2
  lscpu 2>&1 | grep -E "Model name|^CPU\(s\)|NUMA node\(s\)"
} > "$out/device-info.txt"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
arch=${arch:-90}
status=0
for prog in ll128-step; do
  if ! nvcc -O2 -arch=sm_"$arch" -o "$out/$prog" "$here/$prog.cu" -lpthread > "$out/$prog.build.log" 2>&1; then
    echo "$prog: build failed (see $prog.build.log)"; status=1; continue
  fi
  if timeout 240 "$out/$prog" > "$out/$prog.jsonl" 2> "$out/$prog.stderr"; then
    echo "$prog: $(wc -l < "$out/$prog.jsonl") lines"
  else
    echo "$prog: failed or timed out ($?; see $prog.stderr)"; status=1
  fi
  rm -f "$out/$prog"
done
exit $status
