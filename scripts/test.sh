#!/usr/bin/env bash
# Builds everything and runs every test through ctest (what CI runs). The PyTorch tests need the
# pinned torch (scripts/setup-pytorch.sh, run here; EIDOLON_PYTORCH_VENV names another environment):
# when it cannot be installed they are skipped, with the reason, and the rest still run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" "$@"
if ! "$root/scripts/setup-pytorch.sh"; then
  echo "test.sh: no PyTorch environment: the torch-* tests will be skipped" >&2
fi
cd "$build"
ctest --output-on-failure -j "${EIDOLON_JOBS:-$(nproc)}"
