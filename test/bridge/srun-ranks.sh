#!/usr/bin/env bash
# NCCL programs started by Slurm's srun on a one-host Slurm cluster (slurm-local-cluster.sh: munged,
# slurmctld and slurmd on loopback, started here when not running and stopped again at the end):
#  1. collective-bench as N tasks of srun attached to eidolon-sim (each rank's identity from
#     SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, GPU d = device d of the 16 it sees);
#  2. the MPI + NCCL program (cuda/mpi-ranks.cu) as N tasks of `srun --mpi=pmix`, attached (Open
#     MPI direct-launched through Slurm's PMIx plugin; skipped without pmix or the program);
#  3. collective-bench as the 8 tasks of an srun that `eidolon run --launch node` runs as its node
#     process (by name: it gets no RANK/WORLD_SIZE to pass on);
#  4. mpi-ranks as the 8 tasks of an srun inside a shell that `eidolon run --launch node` runs (the
#     shell gets RANK/WORLD_SIZE; its tasks do not, gpu-emu takes each rank from SLURM_*);
#  5. collective-bench (which reads RANK first) the same way: one world of 8.
# Checks what the programs print (collective-bench's device lines and table, each MPI rank's sum),
# clean exits of srun, eidolon-sim and eidolon run, and complete (not partial) summaries with one
# GPU per rank and the same NCCL traffic on every GPU. Prints wall times (start to first output,
# and in all) for information only: no test depends on this machine's speed.
# Usage: srun-ranks.sh <bin dir> <gpu-emu lib dir> <collective-bench> <mpi-ranks program or -> \
#                      <out dir> <ranks>
# Exit 77 (skipped): no srun/slurmd/munged, not root, or the local cluster does not start.
set -u
bin=$1
lib=$2
bench=$3
mpi_program=$4
out=$5
ranks=$6
here=$(cd "$(dirname "$0")" && pwd)
command -v srun >/dev/null 2>&1 || { echo "skipped: no srun (Debian slurm-wlm)"; exit 77; }

# A job this test runs in (CI under Slurm) must not leak into the local cluster's jobs.
for v in $(compgen -v SLURM_); do unset "$v"; done
"$here/slurm-local-cluster.sh" status >/dev/null 2>&1
was_running=$?
conf=$("$here/slurm-local-cluster.sh" start)
case $? in
0) ;;
77) exit 77 ;;
*) echo "skipped: the local Slurm cluster did not start"; exit 77 ;;
esac
export SLURM_CONF=$conf/slurm.conf
sim=
cleanup() {
  [ -n "$sim" ] && kill "$sim" 2>/dev/null
  # Daemons this test started are stopped; a cluster that was running is left running.
  [ $was_running -ne 0 ] && "$here/slurm-local-cluster.sh" stop
}
trap cleanup EXIT

rm -rf "$out"
mkdir -p "$out"
now() { date +%s.%N; }
seconds() { python3 -c "print(f'{$2 - $1:.2f}')"; }
# Runs "$@" with output to $log; sets status, and first/total (seconds from start to the first
# line of output, and to the end).
timed() {
  local start end first_at=""
  start=$(now)
  "$@" >"$log" 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null; do
    [ -s "$log" ] && { first_at=$(now); break; }
    sleep 0.02
  done
  wait $pid
  status=$?
  end=$(now)
  first=$(seconds "$start" "${first_at:-$end}")
  total=$(seconds "$start" "$end")
}
start_sim() { # <dir> <ranks>
  mkdir -p "$1/data"
  endpoint="ipc://$1/sim.sock"
  # What every task needs (srun passes the rest of the environment on too).
  exports="ALL,EIDOLON_SIM_ENDPOINT=$endpoint,LD_LIBRARY_PATH=$lib,EIDOLON_NUM_GPUS=16"
  exports+=",EIDOLON_DATA_DIR=$1/data"
  "$bin/eidolon-sim" --topology default --endpoint "$endpoint" --ranks "$2" --watchdog 120 \
    --progress off --out "$1/summary" >"$1/sim.log" 2>&1 &
  sim=$!
}
wait_sim() { # <dir>
  wait $sim
  local sim_status=$?
  sim=
  tail -4 "$1/sim.log"
  [ $sim_status -eq 0 ] || { echo "eidolon-sim failed ($sim_status)"; cat "$1/sim.log"; exit 1; }
}
# collective-bench's rank 0 printed one device line per rank (rank r on device r) and the table:
# every size from 8 B by 4x up to 1 MiB, all ranks' results agreeing (0 out of bounds).
check_bench() { # <log> <ranks> <line prefix>
  local log=$1 n=$2 prefix=$3 r size
  for ((r = 0; r < n; ++r)); do
    grep -Eq "^$prefix#  Rank +$r Group  0 Pid +[0-9]+ on +node[0-9]+ device +$r \[" "$log" ||
      { echo "collective-bench: no device line for rank $r on device $r"; exit 1; }
  done
  for size in 8 32 128 512 2048 8192 32768 131072 524288; do
    grep -Eq "^$prefix +$size +$((size / 4)) +float +sum +-1( +[0-9.]+){3} +N/A " "$log" ||
      { echo "collective-bench: no table row for $size B"; exit 1; }
  done
  if ! grep -qx "$prefix# Out of bounds values : 0 OK" "$log" ||
    ! grep -qx "$prefix# Collective test concluded: all_reduce_perf" "$log"; then
    echo "collective-bench did not conclude"
    exit 1
  fi
}
# A complete summary: the ranks (and node processes) all exited 0, GPU g is rank g's, and every
# GPU made the same NCCL calls with the same bytes.
check_summary() { # <summary.json> <ranks> <node processes> <GPUs per node>
  python3 - "$@" <<'PY' || exit 1
import json, sys
summary, ranks, nodes, per_node = json.load(open(sys.argv[1])), *map(int, sys.argv[2:])
assert not summary["partial"], summary["error"]
names = sorted(p["name"] for p in summary["processes"])
expected = [f"node{n}" for n in range(nodes)] + [f"rank{r}" for r in range(ranks)]
assert names == sorted(expected), names
assert all(p["exited"] and p["code"] == 0 for p in summary["processes"]), summary["processes"]
gpus = sorted(summary["gpus"], key=lambda g: g["gpu"])
assert [(g["name"], g["process"]) for g in gpus] == \
    [(f"node{r // per_node}/gpu{r % per_node}", f"rank{r}") for r in range(ranks)], gpus
traffic = {json.dumps(g.get("communication"), sort_keys=True) for g in gpus}
assert len(traffic) == 1 and gpus[0].get("communication"), traffic
PY
}
report=()
took() { report+=("$1: first output after $first s, $total s in all"); }

# 1. collective-bench, N tasks attached.
dir=$out/attach-bench
mkdir -p "$dir"
start_sim "$dir" "$ranks"
log=$dir/srun.log
timed srun -K1 -n "$ranks" --export="$exports" "$bench" all_reduce -b 8 -e 1M -f 4 -g 1
cat "$log"
[ $status -eq 0 ] || { echo "srun of collective-bench failed ($status)"; exit 1; }
wait_sim "$dir"
check_bench "$log" "$ranks" ""
check_summary "$dir/summary/summary.json" "$ranks" 0 8
took "srun -n $ranks collective-bench attached"

# 2. mpi-ranks, N tasks of srun --mpi=pmix attached.
if [ "$mpi_program" = - ]; then
  report+=("srun --mpi=pmix mpi-ranks: skipped (no MPI program built)")
elif ! srun --mpi=list 2>&1 | grep -qw pmix; then
  report+=("srun --mpi=pmix mpi-ranks: skipped (this srun has no pmix plugin)")
else
  dir=$out/attach-mpi
  mkdir -p "$dir"
  start_sim "$dir" "$ranks"
  log=$dir/srun.log
  timed srun -K1 --mpi=pmix -n "$ranks" --export="$exports" "$mpi_program"
  cat "$log"
  [ $status -eq 0 ] || { echo "srun --mpi=pmix of mpi-ranks failed ($status)"; exit 1; }
  wait_sim "$dir"
  sum=$((ranks * (ranks + 1) / 2))
  for ((r = 0; r < ranks; ++r)); do
    grep -qx "rank $r of $ranks: nccl sum $sum, mpi ok" "$log" ||
      { echo "rank $r did not print its sum $sum"; exit 1; }
  done
  check_summary "$dir/summary/summary.json" "$ranks" 0 8
  took "srun --mpi=pmix -n $ranks mpi-ranks attached"
fi

# `eidolon run --launch node` on one node of 8 GPUs with "$@" as the node process, output in
# <dir>.log (dir and log are set for the checks); a failed run ends the test.
node_run() { # <dir> <command...>
  dir=$1
  log=$dir.log
  shift
  timed "$bin/eidolon" run --topology default --launch node --nodes 1 --watchdog 120 \
    --progress off --out "$dir" -- "$@"
  cat "$log"
  [ $status -eq 0 ] || { echo "eidolon run -- $* failed ($status)"; exit 1; }
}

# 3. srun as the node process of `eidolon run --launch node` (one node of 8 GPUs), by name.
node_run "$out/node-bench" srun -K1 -n 8 "$bench" all_reduce -b 8 -e 1M -f 4 -g 1
check_bench "$log" 8 "\[node0\]:"
check_summary "$dir/summary.json" 8 1 8
took "eidolon run --launch node -- srun -n 8 collective-bench"

# 4. srun inside a shell as the node process: the shell's RANK/WORLD_SIZE do not reach the tasks
#    (libeidolon-clocks.so removes them), gpu-emu takes each rank from SLURM_*.
if [ "$mpi_program" != - ] && srun --mpi=list 2>&1 | grep -qw pmix; then
  node_run "$out/node-shell-mpi" sh -c "srun -K1 --mpi=pmix -n 8 $mpi_program"
  for ((r = 0; r < 8; ++r)); do
    grep -qx "\[node0\]:rank $r of 8: nccl sum 36, mpi ok" "$log" ||
      { echo "node run (shell): rank $r did not print its sum 36"; exit 1; }
  done
  check_summary "$dir/summary.json" 8 1 8
  took "eidolon run --launch node -- sh -c 'srun --mpi=pmix -n 8 mpi-ranks'"
fi

# 5. collective-bench as the 8 tasks of an srun inside a shell (a job script): collective-bench
#    reads RANK first, and without the shell's it is one world of 8, not 8 worlds of one.
node_run "$out/node-shell-bench" sh -c "srun -K1 -n 8 $bench all_reduce -b 8 -e 1M -f 4 -g 1"
check_bench "$log" 8 "\[node0\]:"
check_summary "$dir/summary.json" 8 1 8
took "eidolon run --launch node -- sh -c 'srun -n 8 collective-bench'"

printf '%s (wall time, not checked)\n' "${report[@]}"
echo "srun ok: $ranks ranks attached, 8 under eidolon run --launch node"
