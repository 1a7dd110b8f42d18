#!/usr/bin/env bash
# Runs a PyTorch script under `eidolon run` with the project's torch environment (scripts/setup-pytorch.sh).
# Exits 77 (ctest: skipped) with a message when there is no such environment.
# Usage: run-under-eidolon.sh <eidolon> <out dir> <eidolon run options...> -- [torchrun [options...]] <script> [args...]
# (with `torchrun` first, the environment's torchrun runs the script instead of its python).
set -u
eidolon=$1
out=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${EIDOLON_PYTORCH_VENV:-$root/.pytorch-venv}
if ! "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "skipped: no PyTorch in $venv (run scripts/setup-pytorch.sh, or set EIDOLON_PYTORCH_VENV)"
  exit 77
fi
options=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  options+=("$1")
  shift
done
shift # --
program=$venv/bin/python
if [ "${1:-}" = torchrun ]; then
  program=$venv/bin/torchrun
  shift
fi
rm -rf "$out"
exec "$eidolon" run --topology "$root/topologies/default.yaml" --out "$out" "${options[@]}" -- \
  "$program" "$@"
