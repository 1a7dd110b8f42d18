#!/usr/bin/env bash
# Installs the pinned stock PyTorch (CUDA 13 wheels from PyPI, unmodified) into a virtual
# environment of the project, for `eidolon run -- python train.py` and the torch tests.
# Idempotent: does nothing when the environment already has the pinned version.
#   EIDOLON_PYTORCH_VENV   where the environment is (default: <repo>/.pytorch-venv); an existing
#                          environment with the pinned torch (e.g. a shared one) is used as is
#   EIDOLON_WHEEL_DIR      install offline from this directory of wheels (pip --no-index
#                          --find-links) instead of PyPI
#   EIDOLON_PYTHON         the interpreter that creates the environment (default: python3; the
#                          wheels need CPython 3.10-3.13)
# Exit status 0 when the environment is ready, else 1 with the reason on stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
torch_version=2.15.0
venv=${EIDOLON_PYTORCH_VENV:-$root/.pytorch-venv}
python=${EIDOLON_PYTHON:-python3}

has_pinned_torch() {
  [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('torch') != '$torch_version')" \
      2>/dev/null
}

if has_pinned_torch; then
  echo "setup-pytorch: torch $torch_version ready in $venv"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || { echo "setup-pytorch: cannot create a virtual environment at $venv with $python" >&2; exit 1; }
fi
source_args=()
if [ -n "${EIDOLON_WHEEL_DIR:-}" ]; then
  source_args=(--no-index --find-links "$EIDOLON_WHEEL_DIR")
fi
echo "setup-pytorch: installing torch==$torch_version into $venv ${EIDOLON_WHEEL_DIR:+from $EIDOLON_WHEEL_DIR}"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "${source_args[@]}" \
    "torch==$torch_version" numpy; then
  echo "setup-pytorch: pip could not install torch==$torch_version (offline? set EIDOLON_WHEEL_DIR to a directory of wheels)" >&2
  exit 1
fi
has_pinned_torch || { echo "setup-pytorch: torch $torch_version still not importable from $venv" >&2; exit 1; }
echo "setup-pytorch: torch $torch_version ready in $venv"
