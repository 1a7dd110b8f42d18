#!/usr/bin/env bash
# torchrun under `eidolon run --launch node`: one agent per node spawns the workers, which are the
# run's ranks; the agents are not. Checks the workers' all-reduce (torchrun_allreduce.py) and that
# the simulator counted exactly the workers.
# Usage: torchrun.sh <eidolon> <out dir> <nodes> <workers per node> [torchrun options...]
set -u
eidolon=$1
out=$2
nodes=$3
per_node=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
world=$((nodes * per_node))
mkdir -p "$(dirname "$out")"
"$here/run-under-eidolon.sh" "$eidolon" "$out" --launch node --nodes "$nodes" \
  --gpus-per-node "$per_node" --watchdog 240 --grace 600 --progress off -- \
  torchrun "$@" "$here/torchrun_allreduce.py" "$world" >"$out.log" 2>&1
status=$?
cat "$out.log"
[ $status -eq 77 ] && exit 77
[ $status -ne 0 ] && { echo "eidolon run failed ($status)"; exit 1; }
workers=$(grep -c "all_reduce sum $((world * (world + 1) / 2))\$" "$out.log")
[ "$workers" -eq "$world" ] || { echo "$workers of $world workers printed the sum"; exit 1; }
python3 - "$out/summary.json" "$nodes" "$world" <<'PY' || exit 1
import json, sys
summary = json.load(open(sys.argv[1]))
nodes, world = int(sys.argv[2]), int(sys.argv[3])
gpus = sorted(g["name"] for g in summary["gpus"])
ranks = sorted(p["name"] for p in summary["processes"] if p["name"].startswith("rank"))
agents = sorted(p["name"] for p in summary["processes"] if p["name"].startswith("node"))
per_node = world // nodes
assert gpus == sorted(f"node{n}/gpu{g}" for n in range(nodes) for g in range(per_node)), gpus
assert ranks == sorted(f"rank{r}" for r in range(world)), ranks
assert agents == [f"node{n}" for n in range(nodes)], agents
assert not summary["partial"], summary["error"]
print(f"torchrun ok: {world} workers on {nodes} node(s), {nodes} agent(s) not counted as ranks")
PY
