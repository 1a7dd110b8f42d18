#!/usr/bin/env bash
# Configures (once) and builds eidolon into build/ (or $EIDOLON_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
# cuDNN's headers come from the PyTorch wheels (gpu-emu/cudnn): a tree configured before
# scripts/setup-pytorch.sh ran (./scripts/main.sh first, then ./scripts/test.sh) has no
# libcudnn.so.9, and PyTorch would load NVIDIA's; configure again once the headers are there.
venv=${EIDOLON_PYTORCH_VENV:-$root/.pytorch-venv}
cudnn_arrived=false
if [ -f "$build/CMakeCache.txt" ] && grep -q '^EIDOLON_CUDNN_HEADERS:INTERNAL=$' "$build/CMakeCache.txt" &&
  compgen -G "$venv/lib/python3*/site-packages/nvidia/cudnn/include/cudnn_backend_v9.h" > /dev/null; then
  cudnn_arrived=true
fi
if [ ! -f "$build/CMakeCache.txt" ] || [ $# -gt 0 ] || $cudnn_arrived; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${EIDOLON_BUILD_TYPE:-RelWithDebInfo}" "$@"
fi
cmake --build "$build" -j "${EIDOLON_JOBS:-$(nproc)}"
