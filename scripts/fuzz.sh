#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-DEIDOLON_FUZZ=ON, into build-fuzz/ or
# $EIDOLON_FUZZ_BUILD_DIR) and runs each for $EIDOLON_FUZZ_SECONDS (default 20) from the seeds in
# fuzz/corpus/. New inputs go to a scratch corpus (build-fuzz/fuzz-corpus/, kept between runs),
# never into the repository; a crash, leak, timeout or sanitizer report leaves its input as
# build-fuzz/findings/<fuzzer>/crash-* (or leak-*, timeout-*, oom-*) and makes this script fail.
#   scripts/fuzz.sh                            # 20 s each
#   EIDOLON_FUZZ_SECONDS=3600 scripts/fuzz.sh  # a long run
# Replay one input: build-fuzz/bin/fuzz/fuzz-<name> FILE (UBSAN_OPTIONS=print_stacktrace=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${EIDOLON_FUZZ_SECONDS:-20}
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ not found (Debian: clang); fuzzers skipped"
  exit 0
fi
export PATH="$PATH:/usr/local/cuda/bin" # CUDA headers, as scripts/build.sh finds them
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEIDOLON_FUZZ=ON -DEIDOLON_BUILD_TESTS=OFF -DEIDOLON_BUILD_BENCH=OFF
fi
cmake --build "$build" --target fuzzers -j "${EIDOLON_JOBS:-$(nproc)}"
status=0
for target in topology-reader:topology simai-import:simai wire-decoder:wire; do
  name=${target%%:*}
  seeds=$root/fuzz/corpus/${target##*:}
  work=$build/fuzz-corpus/$name
  findings=$build/findings/$name
  mkdir -p "$work" "$findings"
  echo "fuzz-$name: ${seconds} s from $seeds"
  # 2 GB of RSS and 10 s per input are findings too (an input that exhausts memory or hangs).
  if ! "$build/bin/fuzz/fuzz-$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$findings/" "$work" "$seeds" \
       >"$findings/log" 2>&1; then
    status=1
    echo "fuzz-$name: FOUND a problem (input and report in $findings)"
  fi
  grep -E "^(Done|stat::number_of_executed_units)" "$findings/log" | tail -2 || true
done
exit $status
