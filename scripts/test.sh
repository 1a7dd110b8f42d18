#!/usr/bin/env bash
# Builds everything and runs every test through ctest (what CI runs). The PyTorch tests need the
# pinned torch (scripts/setup-pytorch.sh, run here; EIDOLON_PYTORCH_VENV names another environment):
# when it cannot be installed they are skipped, with the reason, and the rest still run. Before
# ctest, the fuzzers run briefly (scripts/fuzz.sh, a clang build in build-fuzz/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
# PyTorch first: the build takes cuDNN's headers from the wheels for libcudnn.so.9.
if ! "$root/scripts/setup-pytorch.sh"; then
  echo "test.sh: no PyTorch environment: the torch-* tests will be skipped" >&2
fi
"$root/scripts/build.sh" "$@"
# A short bounded run of each libFuzzer target (topology reader, SimAI importer, wire decoder):
# EIDOLON_FUZZ_SECONDS each (10 here; scripts/fuzz.sh alone runs 20, longer runs are documented in
# the README). A finding fails the test command. EIDOLON_FUZZ_SECONDS=0 leaves it out.
fuzz_seconds=${EIDOLON_FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" != 0 ]; then
  EIDOLON_FUZZ_SECONDS=$fuzz_seconds "$root/scripts/fuzz.sh"
fi
cd "$build"
if grep -q '^EIDOLON_SANITIZE:BOOL=ON' CMakeCache.txt; then
  # Our libraries bring ASan into programs built without it (nvcc's test programs, mpirun's
  # ranks, Python): its runtime must be loaded before anything else there (else they crash at
  # start), so every test process preloads it; the leaks of programs that are not ours are not
  # ours to report.
  compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' CMakeCache.txt)
  export LD_PRELOAD=$("${compiler:-c++}" -print-file-name=libasan.so)${LD_PRELOAD:+ $LD_PRELOAD}
  export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0:detect_leaks=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
ctest --output-on-failure -j "${EIDOLON_JOBS:-$(nproc)}"
