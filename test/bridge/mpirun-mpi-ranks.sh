#!/usr/bin/env bash
# An MPI + NCCL program (cuda/mpi-ranks.cu) as N ranks of Open MPI's mpirun, attached to
# eidolon-sim, then as the 8 ranks of an mpirun that `eidolon run --launch node` starts on one
# node (the ranks take their identity from OMPI_COMM_WORLD_*, not from the RANK/WORLD_SIZE the
# node process got and mpirun passes on). Every rank selects its GPU, then MPI_Init (which loads Open MPI's transports, PSM's
# timebase calibration among them, on a thread whose clocks are virtual), then NCCL all-reduces
# host data. Checks each rank's sum and MPI's agreement, clean exits of mpirun and the simulator,
# and a complete (not partial) summary with one GPU per rank. Prints the wall time of mpirun for
# information only (it is not checked: no test depends on this machine's speed).
# Usage: mpirun-mpi-ranks.sh <bin dir> <gpu-emu lib dir> <mpi-ranks program> <out dir> <ranks>
set -u
bin=$1
lib=$2
program=$3
out=$4
ranks=$5
command -v mpirun >/dev/null 2>&1 || { echo "skipped: no mpirun (Debian openmpi-bin)"; exit 77; }
rm -rf "$out"
mkdir -p "$out/data"
endpoint="ipc://$out/sim.sock"
"$bin/eidolon-sim" --topology default --endpoint "$endpoint" --ranks "$ranks" --watchdog 120 \
  --progress off --out "$out/summary" >"$out/sim.log" 2>&1 &
sim=$!
# Root may run mpirun only when it says so; --oversubscribe: more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's shared-memory transport backs its segments with files in /dev/shm, which a killed
# run leaves behind: keep them in this test's own directory instead.
export OMPI_MCA_btl_vader_backing_directory="$out"
start=$(date +%s.%N)
mpirun --oversubscribe -np "$ranks" -x EIDOLON_SIM_ENDPOINT="$endpoint" -x LD_LIBRARY_PATH="$lib" \
  -x EIDOLON_NUM_GPUS=16 -x EIDOLON_DATA_DIR="$out/data" "$program" >"$out/mpirun.log" 2>&1
status=$?
end=$(date +%s.%N)
wait $sim
sim_status=$?
cat "$out/mpirun.log"
tail -4 "$out/sim.log"
echo "mpirun of $ranks ranks: $(python3 -c "print(f'{$end - $start:.2f}')") s of wall time (not checked)"
[ $status -eq 0 ] || { echo "mpirun failed ($status)"; exit 1; }
[ $sim_status -eq 0 ] || { echo "eidolon-sim failed ($sim_status)"; cat "$out/sim.log"; exit 1; }
sum=$((ranks * (ranks + 1) / 2))
for ((r = 0; r < ranks; ++r)); do
  grep -qx "rank $r of $ranks: nccl sum $sum, mpi ok" "$out/mpirun.log" ||
    { echo "rank $r did not print its sum $sum"; exit 1; }
done
python3 - "$out/summary/summary.json" "$ranks" <<'PY' || exit 1
import json, sys
summary, ranks = json.load(open(sys.argv[1])), int(sys.argv[2])
assert not summary["partial"], summary["error"]
assert sorted(p["name"] for p in summary["processes"]) == sorted(f"rank{r}" for r in range(ranks))
assert len(summary["gpus"]) == ranks, len(summary["gpus"])
PY

# mpirun as the node process of `eidolon run --launch node` (one node of 8 GPUs): by name (the
# node process gets no RANK/WORLD_SIZE), and inside a shell, which gets them and whose mpirun
# passes them on (gpu-emu then takes each rank's identity from OMPI_COMM_WORLD_*).
mpi="mpirun --oversubscribe -np 8 $program"
for how in direct shell; do
  if [ $how = direct ]; then node_command=($mpi); else node_command=(sh -c "$mpi"); fi
  "$bin/eidolon" run --topology default --launch node --nodes 1 --watchdog 120 --progress off \
    --out "$out/node-$how" -- "${node_command[@]}" >"$out/node-$how.log" 2>&1
  status=$?
  cat "$out/node-$how.log"
  [ $status -eq 0 ] || { echo "eidolon run --launch node ($how) failed ($status)"; exit 1; }
  for ((r = 0; r < 8; ++r)); do
    grep -qx "\[node0\]:rank $r of 8: nccl sum 36, mpi ok" "$out/node-$how.log" ||
      { echo "node run ($how): rank $r did not print its sum 36"; exit 1; }
  done
  python3 - "$out/node-$how/summary.json" <<'PY' || exit 1
import json, sys
summary = json.load(open(sys.argv[1]))
assert not summary["partial"], summary["error"]
names = sorted(p["name"] for p in summary["processes"])
assert names == sorted(["node0"] + [f"rank{r}" for r in range(8)]), names
assert sorted(g["name"] for g in summary["gpus"]) == [f"node0/gpu{g}" for g in range(8)]
PY
done
echo "mpirun ok: $ranks MPI ranks attached, 8 under eidolon run --launch node"
