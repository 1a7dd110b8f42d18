#!/usr/bin/env bash
# Builds everything and runs every test through ctest (what CI runs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" "$@"
cd "$build"
ctest --output-on-failure -j "${EIDOLON_JOBS:-$(nproc)}"
