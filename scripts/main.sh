#!/usr/bin/env bash
# Builds eidolon and runs the main job: a simulated run on the default topology.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EIDOLON_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
"$build/bin/eidolon" version
