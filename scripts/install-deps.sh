#!/usr/bin/env bash
# Installs what eidolon builds against, from Debian's packages. Idempotent: packages already
# present are left alone; it says what it installs and what failed, and exits non-zero on failure.
set -uo pipefail

PACKAGES=(
  cmake g++ make pkg-config
  libns3-dev ns3 libgsl-dev          # ns-3 3.37 (the network simulator we extend)
  libzmq3-dev cppzmq-dev             # ZeroMQ: ranks <-> simulator
  libyaml-cpp-dev                    # topology and GPU spec files
  libboost-test-dev                  # unit tests
  protobuf-compiler libprotobuf-dev  # wire-format schema
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libbenchmark-dev                   # benchmarks
  openmpi-bin                        # mpirun: ranks started by an external engine (attach test)
  clang libclang-rt-14-dev           # libFuzzer + sanitizers for the fuzzers (scripts/fuzz.sh)
  libopenmpi-dev                     # mpi.h: the MPI program of the mpirun start-up test
  python3 python3-yaml python3-matplotlib  # validation tables and plots
)

# Wanted but not needed: without them the build still works (CMake says what it leaves out), so a
# failure to install them is a warning.
OPTIONAL_PACKAGES=(
  libjemalloc-dev                    # the simulator's allocator (a third less wall time at scale)
)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
install_optional() {
  $SUDO apt-get install -y -q --no-install-recommends "$1" >>/tmp/eidolon-apt-optional.log 2>&1
}
for p in "${OPTIONAL_PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    echo "install-deps: installing optional $p"
    # A fresh machine may have no package lists yet: update once and try again.
    if ! install_optional "$p" && ! { $SUDO apt-get update -q >>/tmp/eidolon-apt-optional.log 2>&1 &&
                                      install_optional "$p"; }; then
      echo "install-deps: warning: could not install optional $p (see" \
           "/tmp/eidolon-apt-optional.log); building without it" >&2
    fi
  fi
done

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: note: nvcc (CUDA toolkit) not found; this machine kind normally carries it." >&2
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if ! $SUDO apt-get update -q >/tmp/eidolon-apt-update.log 2>&1; then
  echo "install-deps: apt-get update failed (see /tmp/eidolon-apt-update.log)" >&2
fi
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/eidolon-apt-install.log 2>&1; then
  echo "install-deps: apt-get install failed (see /tmp/eidolon-apt-install.log)" >&2
  failed=()
  for p in "${missing[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || failed+=("$p")
  done
  echo "install-deps: still missing: ${failed[*]}" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}"
