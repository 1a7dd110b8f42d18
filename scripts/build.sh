#!/usr/bin/env bash
# Configures (once) and builds eidolon into build/ (or $EIDOLON_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
if [ ! -f "$build/CMakeCache.txt" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${EIDOLON_BUILD_TYPE:-RelWithDebInfo}" "$@"
fi
cmake --build "$build" -j "${EIDOLON_JOBS:-$(nproc)}"
