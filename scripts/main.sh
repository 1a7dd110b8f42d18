#!/usr/bin/env bash
# Builds eidolon and runs the main job: a simulated run on the default topology
# (topologies/default.yaml: 2 nodes x 8 H100, rail-optimized 400 Gb/s). For now the job is the
# ns-3 scenario of the module: ring all-reduces of 1 MiB to 4 GiB through the flow model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
"$build/bin/eidolon" topo check "$root/topologies/default.yaml"
echo
"$build/bin/eidolon-ring-allreduce" --topology="$root/topologies/default.yaml" "$@"
