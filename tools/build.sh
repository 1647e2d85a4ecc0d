#!/usr/bin/env bash
# Configures and builds memplan. Usage: tools/build.sh [BUILD_DIR] [extra cmake args...]
# MEMPLAN_BUILD_TARGET=NAME builds that target (and what it needs) instead of everything.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
shift || true
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMPLAN_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)" ${MEMPLAN_BUILD_TARGET:+--target "$MEMPLAN_BUILD_TARGET"}
