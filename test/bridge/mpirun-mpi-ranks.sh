#!/usr/bin/env bash
# An MPI + NCCL program (cuda/mpi-ranks.cu) as N ranks of Open MPI's mpirun, attached to
# eidolon-sim, then as the 8 ranks of an mpirun that `eidolon run --launch node` starts on one
# node (the ranks take their identity from OMPI_COMM_WORLD_*, not from the RANK/WORLD_SIZE the
# node process got and mpirun passes on). Every rank selects its GPU, then MPI_Init (which loads Open MPI's transports, PSM's
# timebase calibration among them, on a thread whose clocks are virtual), then NCCL all-reduces
# host data. Checks each rank's sum and MPI's agreement, clean exits of mpirun and the simulator,
# and a complete (not partial) summary with one GPU per rank. Then two launcher cases with
# collective-bench, which reads RANK first: mpirun inside a shell (a job script), whose tasks must
# not inherit the node's RANK/WORLD_SIZE, and eidolon run started as a launcher's task itself,
# whose ranks must not take its SLURM_PROCID/OMPI_COMM_WORLD_RANK. Prints the wall time of mpirun
# for information only (it is not checked: no test depends on this machine's speed).
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
# node process gets no RANK/WORLD_SIZE), and inside a shell, which gets them; its mpirun's tasks
# do not (libeidolon-clocks.so removes them) and take their identity from OMPI_COMM_WORLD_*.
mpi="mpirun --oversubscribe -np 8 $program"
# `eidolon run --launch node` of <nodes> nodes with <command> as the node process, into
# $out/<name> and $out/<name>.log; a failed run ends the test.
node_run() { # <name> <nodes> <command...>
  local name=$1 nodes=$2 status
  shift 2
  "$bin/eidolon" run --topology default --launch node --nodes "$nodes" --watchdog 120 \
    --progress off --out "$out/$name" -- "$@" >"$out/$name.log" 2>&1
  status=$?
  cat "$out/$name.log"
  [ $status -eq 0 ] || { echo "eidolon run --launch node ($name) failed ($status)"; exit 1; }
}
for how in direct shell; do
  if [ $how = direct ]; then node_command=($mpi); else node_command=(sh -c "$mpi"); fi
  node_run "node-$how" 1 "${node_command[@]}"
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

# A program that reads RANK first (collective-bench; PyTorch's env:// does too) as the 8 tasks of
# an mpirun inside a shell, the job-script way: on a cluster the tasks would get no RANK or
# WORLD_SIZE, so the node identity the shell got from eidolon run must not reach them
# (libeidolon-clocks.so removes it): one world of 8 ranks, rank r on device r, not 8 worlds of one.
bench="$bin/collective-bench"
node_run node-script 1 sh -c "mpirun --oversubscribe -np 8 $bench all_reduce -b 8 -e 64 -f 8 -g 1"
for ((r = 0; r < 8; ++r)); do
  grep -Eq "^\[node0\]:#  Rank +$r Group  0 Pid +[0-9]+ on +node0 device +$r \[" "$out/node-script.log" ||
    { echo "job-script run: no device line for rank $r on device $r"; exit 1; }
done

# eidolon run as a task of a launcher itself (srun or mpirun starting it on a CPU node): the
# launcher's task variables are its own, not its ranks'. Two nodes of collective-bench -g 8 are
# ranks 0-15 whatever SLURM_PROCID and OMPI_COMM_WORLD_RANK eidolon run was started with.
(
  export SLURM_PROCID=5 SLURM_NTASKS=9 OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4
  node_run host-task 2 "$bench" all_reduce -b 8 -e 64 -f 8 -g 8
) || exit 1
grep -Eq "^\[node0\]:#  Rank 15 Group  0 Pid +[0-9]+ on +node1 device  7 \[" "$out/host-task.log" ||
  { echo "eidolon run as a launcher's task: rank 15 is not node1's device 7"; exit 1; }

echo "mpirun ok: $ranks MPI ranks attached, 8 under eidolon run --launch node"
