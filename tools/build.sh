#!/usr/bin/env bash
# Configures and builds memplan. Usage: tools/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
shift || true
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMPLAN_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
