#!/usr/bin/env bash
# Wall cost of simulating training at scale: train-gpt under `eidolon run`, one process per
# simulated GPU, on this machine. For each configuration: the wall seconds per simulated step
# (the wall time of a STEPS-step run less that of a 1-step run, over STEPS - 1: start-up and the
# first step left out; rank output reaches us block-buffered, so its timing cannot be read from
# the step lines), the virtual step time train-gpt reports (median after warm-up), the
# simulator's CPU seconds per step (same difference) and peak resident memory, the largest peak
# of one rank process, and the peak of the summed resident memory of all ranks (sampled from
# /proc every 0.2 s: VmHWM for the peaks, VmRSS for the sum).
#
#   bench/run-training-scale.sh [OUT_DIR] [CONFIG...]
#   configs: llama8b-16 llama8b-64 gpt175b-N gpt175b-fsdp-N (N a multiple of 32, up to 1024)
#   (default: llama8b-16 llama8b-64 gpt175b-128 gpt175b-fsdp-128)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
out=${1:-/tmp/eidolon-training-scale}
shift || true
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(llama8b-16 llama8b-64 gpt175b-128 gpt175b-fsdp-128)
steps=${STEPS:-4}
mkdir -p "$out"

# name -> eidolon placement and train-gpt arguments. gpt3-175b: TP4 PP8 interleaved (vp 2) with
# sequence parallelism, DP = GPUS / 32, 8 micro-batches of one sequence per DP rank, and
# Megatron's distributed optimizer (gpt175b-N) or FSDP (gpt175b-fsdp-N).
gpt175b() { # GPUS SHARDING
  echo "--topology dgx-h100-128node --nodes $(($1 / 8)) --gpus-per-node 8" \
    "|--model gpt3-175b --tp 4 --pp 8 --vp 2 --sequence-parallel $2" \
    "--global-batch $(($1 / 32 * 8))"
}
config_args() {
  case $1 in
  llama8b-16) echo "--topology default|--model llama3-8b --fsdp" ;;
  llama8b-64) echo "--topology dgx-h100-128node --nodes 8 --gpus-per-node 8|--model llama3-8b --fsdp" ;;
  gpt175b-fsdp-*) gpt175b "${1#gpt175b-fsdp-}" --fsdp ;;
  gpt175b-*) gpt175b "${1#gpt175b-}" --distributed-optimizer ;;
  *)
    echo "unknown configuration $1" >&2
    exit 2
    ;;
  esac
}

# Runs one configuration for STEPS steps under /usr/bin/time, sampling /proc every 0.2 s; prints
# "wall_seconds sim_peak_kib rank_peak_kib ranks_sum_peak_kib ranks sim_cpu_seconds" and leaves
# the logs in $2.
measure() {
  local name=$1 dir=$2 steps=$3 args placement program
  args=$(config_args "$name")
  placement=${args%%|*}
  program=${args#*|}
  mkdir -p "$dir"
  local start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  /usr/bin/time -v "$build/bin/eidolon" run $placement --out "$dir/run" --progress off -- \
    "$build/bin/train-gpt" $program --steps "$steps" --warmup-steps 1 \
    >"$dir/stdout.txt" 2>"$dir/stderr.txt" &
  local timer=$! sim="" simHwm=0 rankHwm=0 sumPeak=0 simTicks=0 pid h r sum
  declare -A hwm=()
  while kill -0 "$timer" 2>/dev/null; do
    [ -n "$sim" ] || sim=$(pgrep -P "$timer" -x eidolon | head -1 || true)
    if [ -n "$sim" ]; then
      h=$(awk '/^VmHWM:/ {print $2}' "/proc/$sim/status" 2>/dev/null || true)
      [ "${h:-0}" -gt "$simHwm" ] && simHwm=$h
      h=$(awk '{print $14 + $15}' "/proc/$sim/stat" 2>/dev/null || true)
      [ "${h:-0}" -gt "$simTicks" ] && simTicks=$h
      sum=0
      for pid in $(pgrep -P "$sim" -x train-gpt || true); do
        read -r h r < <(awk '/^VmHWM:/ {h=$2} /^VmRSS:/ {r=$2} END {print h+0, r+0}' \
          "/proc/$pid/status" 2>/dev/null || echo "0 0")
        [ "$h" -gt "${hwm[$pid]:-0}" ] && hwm[$pid]=$h
        sum=$((sum + r))
      done
      [ "$sum" -gt "$sumPeak" ] && sumPeak=$sum
    fi
    sleep 0.2
  done
  wait "$timer" || true
  end=$(date +%s.%N)
  for pid in "${!hwm[@]}"; do [ "${hwm[$pid]}" -gt "$rankHwm" ] && rankHwm=${hwm[$pid]}; done
  # time -v's maximum is the larger of the simulator and its biggest rank: a floor for the
  # simulator's peak when the run ended between two samples.
  h=$(awk '/Maximum resident set size/ {print $6}' "$dir/stderr.txt")
  [ "${h:-0}" -gt "$simHwm" ] && simHwm=$h
  echo "$(echo "$end - $start" | bc) $simHwm $rankHwm $sumPeak ${#hwm[@]}" \
    "$(echo "$simTicks / $(getconf CLK_TCK)" | bc -l)"
}

# One table row: wall seconds per step from a 1-step and a STEPS-step run (the difference leaves
# start-up and the first step out); memory from the longer run.
run_one() {
  local name=$1 dir=$out/$1 one oneCpu long virtual status
  read -r one _ _ _ _ oneCpu < <(measure "$name" "$dir/steps-1" 1)
  read -r long sim rank sum ranks cpu < <(measure "$name" "$dir/steps-$steps" "$steps")
  virtual=$(sed -n 's/.*median step time \([0-9.]*\)s.*/\1/p' "$dir/steps-$steps/stdout.txt" | head -1)
  status=$(grep -q "median step time" "$dir/steps-$steps/stdout.txt" && echo ok || echo FAILED)
  printf "| %s | %s | %.2f | %.2f | %s | %.0f | %.0f | %.0f | %.0f | %s |\n" "$name" "$ranks" \
    "$(echo "($long - $one) / ($steps - 1)" | bc -l)" \
    "$(echo "($cpu - $oneCpu) / ($steps - 1)" | bc -l)" "${virtual:--}" "$long" \
    "$(echo "$sim / 1024" | bc -l)" "$(echo "$rank / 1024" | bc -l)" \
    "$(echo "$sum / 1024" | bc -l)" "$status" >"$dir/result"
}

header="| config | ranks | wall s/step | sim CPU s/step | virtual s/step | wall s ($steps steps) | sim peak MiB | rank peak MiB | ranks' sum MiB | status |"
for name in "${configs[@]}"; do
  run_one "$name"
  cat "$out/$name/result"
done
echo
echo "$header"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for name in "${configs[@]}"; do cat "$out/$name/result"; done
echo "(logs under $out/<config>/steps-N/: stdout.txt, stderr.txt with /usr/bin/time -v, run/)"
