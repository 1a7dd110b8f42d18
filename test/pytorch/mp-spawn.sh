#!/usr/bin/env bash
# torch.multiprocessing.spawn under `eidolon run --launch node` (mp_spawn.py): the workers are the
# ranks, each on the GPU it selected, named after it (worker0, worker1: a process no launcher
# named takes the name of its first GPU), with its own peak memory.
# Usage: mp-spawn.sh <eidolon> <out dir>
set -u
eidolon=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$(dirname "$out")"
"$here/run-under-eidolon.sh" "$eidolon" "$out" --launch node --nodes 1 --gpus-per-node 2 \
  --watchdog 240 --grace 600 --progress off -- "$here/mp_spawn.py" 2 >"$out.log" 2>&1
status=$?
cat "$out.log"
[ $status -eq 77 ] && exit 77
[ $status -ne 0 ] && { echo "eidolon run failed ($status)"; exit 1; }
grep -q "mp.spawn ok" "$out.log" || { echo "the parent did not see its workers end"; exit 1; }
python3 - "$out/summary.json" <<'PY' || exit 1
import json, sys
summary = json.load(open(sys.argv[1]))
rows = {g["name"]: g for g in summary["gpus"]}
assert sorted(rows) == ["node0/gpu0", "node0/gpu1"], sorted(rows)
assert rows["node0/gpu0"]["process"] == "worker0", rows["node0/gpu0"]["process"]
assert rows["node0/gpu1"]["process"] == "worker1", rows["node0/gpu1"]["process"]
peaks = [rows[name]["peak_bytes"] for name in ("node0/gpu0", "node0/gpu1")]
# Each worker's own 4 KiB tensor and NCCL's: the same on both, never another's (or 0).
assert peaks[0] == peaks[1] and peaks[0] > 0, peaks
PY
echo "mp.spawn workers ok"
