#!/usr/bin/env bash
# Checks gpu-emu's replacement libraries against what programs linked to NVIDIA's expect:
# the soname, the symbol version node, and (when NVIDIA's library is installed) that every entry
# point NVIDIA's library exports is exported by ours with the same version.
# Usage: check-exports.sh <gpu-emu lib dir> <CUDA lib dir>
set -u
ours=$1
nvidia=$2
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

exports() { # name@version of every defined function
  nm -D --defined-only "$1" | awk '$2 == "T" || $2 == "W" { print $3 }' | sort -u
}

check() { # <our file> <soname> <version node or "-"> [<NVIDIA file>]
  local file=$ours/$1 soname=$2 node=$3 reference=${4:-}
  [ -f "$file" ] || { fail "$file missing"; return; }
  local actual
  actual=$(readelf -d "$file" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [ "$actual" = "$soname" ] || fail "$1: soname '$actual', expected '$soname'"
  if [ "$node" != "-" ]; then
    readelf -V "$file" | grep -q "Name: $node\$" || fail "$1: no version node $node"
  fi
  if [ -n "$reference" ] && [ -f "$reference" ]; then
    local missing
    missing=$(comm -23 <(exports "$reference" | grep -v '@GLIBC') <(exports "$file"))
    if [ -n "$missing" ]; then
      fail "$1: missing $(echo "$missing" | wc -l) exports of $reference, e.g. $(echo "$missing" | head -3 | tr '\n' ' ')"
    else
      echo "ok: $1 exports all $(exports "$reference" | wc -l) entry points of $(basename "$reference")"
    fi
  fi
}

check libcudart.so.13 libcudart.so.13 libcudart.so.13 "$nvidia/libcudart.so.13"
check libcudart.so.12 libcudart.so.12 libcudart.so.12
check libcublas.so.13 libcublas.so.13 libcublas.so.13 "$nvidia/libcublas.so.13"
check libcublas.so.12 libcublas.so.12 libcublas.so.12
check libcublasLt.so.13 libcublasLt.so.13 libcublasLt.so.13 "$nvidia/libcublasLt.so.13"
check libcublasLt.so.12 libcublasLt.so.12 libcublasLt.so.12
check libcuda.so.1 libcuda.so.1 - "$nvidia/stubs/libcuda.so"
check libnvidia-ml.so.1 libnvidia-ml.so.1 -
check libnccl.so.2 libnccl.so.2 - "$nvidia/libnccl.so.2"

# NCCL exports every entry point twice: nccl<X> (weak) and its profiling alias pnccl<X>. Where ours
# implements one (pnccl<X> global, not a weak stub), both names must be the same function.
if [ -f "$ours/libnccl.so.2" ]; then
  aliases=$(nm -D --defined-only "$ours/libnccl.so.2" | awk '
    $2 == "T" && $3 ~ /^pnccl/ { p[substr($3, 2)] = $1 }
    $2 == "W" && $3 ~ /^nccl/ { n[$3] = $1 }
    END { bad = 0; for (name in p) { count++; if (n[name] != p[name]) { print "FAIL " name; bad++ } }
          print count " implemented"; exit bad }')
  [ $? -eq 0 ] || fail "libnccl.so.2: nccl*/pnccl* pairs differ: $aliases"
  echo "ok: libnccl.so.2 nccl*/pnccl* pairs are aliases ($(echo "$aliases" | tail -1))"
fi

# cuDNN 9 (built only where its headers were found) and the math libraries PyTorch links; the
# toolkit's own math libraries, where installed, are a reference for their exports.
[ -f "$ours/libcudnn.so.9" ] && check libcudnn.so.9 libcudnn.so.9 libcudnn.so.9
check libcusparse.so.12 libcusparse.so.12 libcusparse.so.12 "$nvidia/libcusparse.so.12"
check libcufft.so.12 libcufft.so.12 libcufft.so.12 "$nvidia/libcufft.so.12"
check libcusolver.so.12 libcusolver.so.12 libcusolver.so.12 "$nvidia/libcusolver.so.12"
check libnvrtc.so.13 libnvrtc.so.13 libnvrtc.so.13 "$nvidia/libnvrtc.so.13"
check libcusparseLt.so.0 libcusparseLt.so.0 -
check libcupti.so.13 libcupti.so.13 libcupti.so.13 "$nvidia/libcupti.so.13"

# The clock interposers must bind the versioned references programs have to glibc.
nm -D --defined-only "$ours/libcudart.so.13" | grep -q "clock_gettime@@GLIBC_2.17" ||
  fail "libcudart.so.13 does not define clock_gettime@@GLIBC_2.17"

# libeidolon-clocks.so (preloaded by eidolon run) carries the same interposers.
nm -D --defined-only "$ours/libeidolon-clocks.so" | grep -q "clock_gettime@@GLIBC_2.17" ||
  fail "libeidolon-clocks.so does not define clock_gettime@@GLIBC_2.17"
# The audit module eidolon run gives every rank (LD_AUDIT) answers the loader's two calls.
for hook in la_version la_objsearch; do
  nm -D --defined-only "$ours/libeidolon-redirect.so" | grep -qw "$hook" ||
    fail "libeidolon-redirect.so does not define $hook"
done
# No thread_local with a destructor anywhere in gpu-emu: registering one takes the dynamic loader's
# lock on a thread's first use, which deadlocks against dlopen (gpu-emu/core/per-thread.h).
for lib in "$ours"/*.so*; do
  if nm -D --undefined-only "$lib" | grep -q "__cxa_thread_atexit"; then
    fail "$(basename "$lib") has a thread_local with a destructor (__cxa_thread_atexit)"
  fi
done

echo "check-exports: $failures failures"
[ "$failures" -eq 0 ]
