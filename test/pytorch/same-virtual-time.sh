#!/usr/bin/env bash
# Runs examples/pytorch/train_gpt.py (FSDP2, 2 simulated GPUs) twice, the second time beside a
# process that burns a CPU, and checks that the virtual end times of every GPU are the same in
# both runs, to the nanosecond (host time in the default `calls` mode: nothing may depend on how
# fast or loaded this machine is, nor on how its threads happen to be scheduled).
# Usage: same-virtual-time.sh <eidolon> <out dir>
set -u
eidolon=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ends=()
burner=
trap '[ -n "$burner" ] && kill "$burner" 2>/dev/null' EXIT
for run in 1 2; do
  if [ $run -eq 2 ]; then
    yes >/dev/null &
    burner=$!
  fi
  rm -rf "$out/run$run.clock" && mkdir -p "$out/run$run.clock"
  EIDOLON_HOST_CLOCK_TRACE="$out/run$run.clock" EIDOLON_HOST_TIME=calls "$here/run-under-eidolon.sh" "$eidolon" "$out/run$run" --gpus 2 --watchdog 240 --grace 600 -- \
    "$here/../../examples/pytorch/train_gpt.py" --model tiny --parallel fsdp --steps 3 >"$out/run$run.log" 2>&1
  status=$?
  if [ -n "$burner" ]; then
    kill "$burner"
    burner=
  fi
  [ $status -eq 77 ] && { cat "$out/run$run.log"; exit 77; }
  [ $status -ne 0 ] && { echo "run $run failed ($status):"; tail -20 "$out/run$run.log"; exit 1; }
  ends+=("$(python3 -c "import json; s=json.load(open('$out/run$run/summary.json')); print(sorted((g['name'], g['end_ns']) for g in s['gpus']))")")
done
echo "run 1: ${ends[0]}"
echo "run 2: ${ends[1]}"
# Every move of every rank's host clock, in order, the same too (stronger than the end times: a
# difference that later waits absorb shows here; the diff names the first one).
if ! "$here/../../scripts/host-clock-diff.py" "$out/run1.clock" "$out/run2.clock"; then
  echo "host clocks differ"
  exit 1
fi
[ "${ends[0]}" = "${ends[1]}" ] && echo "same virtual times" || { echo "virtual times differ"; exit 1; }
