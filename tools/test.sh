#!/usr/bin/env bash
# One command for the tests: install dependencies, build (normal and ASan+UBSan), run every test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/setup.sh"
export MEMPLAN_CONFORMANCE_DIR="$here/build/conformance"
"$here/tools/gen_conformance.sh" "$MEMPLAN_CONFORMANCE_DIR"
"$here/tools/build.sh" "$here/build"
(cd "$here/build" && ctest --output-on-failure -j "$(nproc)")
"$here/tools/build.sh" "$here/build-asan" -DMEMPLAN_SANITIZE=ON -DMEMPLAN_BUILD_BENCHMARKS=OFF
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$(nproc)")
