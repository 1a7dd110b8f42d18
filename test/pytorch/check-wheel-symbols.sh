#!/usr/bin/env bash
# Every CUDA runtime, cuBLAS, cuBLASLt and NCCL symbol the torch wheel and NVIDIA's other wheel
# libraries (cuSPARSE, cuFFT, cuDNN, ... still loaded) import is exported by ours, with the version
# node they ask for. Exits 77 (ctest: skipped) without the PyTorch environment.
# Usage: check-wheel-symbols.sh <gpu-emu lib dir>
set -u
ours=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${EIDOLON_PYTORCH_VENV:-$root/.pytorch-venv}
site=$(ls -d "$venv"/lib/python3*/site-packages 2>/dev/null | head -1)
if [ -z "$site" ] || [ ! -d "$site/torch/lib" ]; then
  echo "skipped: no PyTorch in $venv (run scripts/setup-pytorch.sh, or set EIDOLON_PYTORCH_VENV)"
  exit 77
fi
failures=0
imports() { # name@version of every undefined symbol of the wheel's libraries
  for f in "$site"/torch/lib/*.so "$site"/nvidia/*/lib/*.so*; do
    nm -D --undefined-only "$f" 2>/dev/null
  done | awk '{ print $2 }' | sort -u
}
all=$(imports)
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  need=$(echo "$all" | grep -E "@$lib\$")
  have=$(nm -D --defined-only "$ours/$lib" | awk '{ print $3 }' | sed 's/@@/@/' | sort -u)
  missing=$(comm -23 <(echo "$need") <(echo "$have"))
  if [ -n "$missing" ]; then
    echo "FAIL: $lib lacks $(echo "$missing" | wc -l) imports of the wheel, e.g. $(echo "$missing" | head -3 | tr '\n' ' ')"
    failures=$((failures + 1))
  else
    echo "ok: $lib exports all $(echo "$need" | grep -c .) symbols the wheel imports from it"
  fi
done
# NVIDIA's libnccl is unversioned: libtorch_cuda's nccl* imports.
need=$(nm -D --undefined-only "$site/torch/lib/libtorch_cuda.so" | awk '{ print $2 }' | grep -E '^p?nccl' | sort -u)
have=$(nm -D --defined-only "$ours/libnccl.so.2" | awk '{ print $3 }' | sort -u)
missing=$(comm -23 <(echo "$need") <(echo "$have"))
if [ -n "$missing" ]; then
  echo "FAIL: libnccl.so.2 lacks $(echo "$missing" | tr '\n' ' ')"
  failures=$((failures + 1))
else
  echo "ok: libnccl.so.2 exports all $(echo "$need" | grep -c .) nccl symbols libtorch_cuda imports"
fi
echo "check-wheel-symbols: $failures failures"
[ "$failures" -eq 0 ]
