#!/usr/bin/env bash
# One command for the tests: install dependencies, build (normal and ASan+UBSan), run every test
# (ctest: the Catch2 tests, ONNX's conformance suite, the real models in models/real, the Python
# module), and build the consumer project (test/consumer) against an installed copy and run it.
# A build that fails stops at once; failing tests are reported and the remaining steps still run,
# and the exit status is non-zero if any step failed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
failed=()
"$here/tools/setup.sh"
export MEMPLAN_CONFORMANCE_DIR="$here/build/conformance"
"$here/tools/gen_conformance.sh" "$MEMPLAN_CONFORMANCE_DIR"
"$here/tools/build.sh" "$here/build"
(cd "$here/build" && ctest --output-on-failure -j "$(nproc)") || failed+=("ctest in build")

# The installed package: install into a prefix under the build dir, build the consumer against it
# (find_package(memplan CONFIG REQUIRED), memplan::memplan), and run it on a model.
rm -rf "$here/build/install" "$here/build/consumer"
cmake --install "$here/build" --prefix "$here/build/install" >/dev/null
cmake -S "$here/test/consumer" -B "$here/build/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$here/build/install" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$here/build/consumer"
"$here/build/consumer/memplan_consumer" "$here/models/tiny_mlp" || failed+=("the consumer project")

"$here/tools/build.sh" "$here/build-asan" -DMEMPLAN_SANITIZE=ON -DMEMPLAN_BUILD_BENCHMARKS=OFF
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$(nproc)") ||
  failed+=("ctest in build-asan")

if [ ${#failed[@]} -gt 0 ]; then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
