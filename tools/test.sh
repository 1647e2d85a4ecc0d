#!/usr/bin/env bash
# One command for the tests: install dependencies, build (normal and ASan+UBSan), run every test
# (ctest: the Catch2 tests, ONNX's conformance suite, the real models in models/real, the Python
# module), build the consumer project (test/consumer) against an installed copy and run it, and
# run each fuzz target (test/fuzz) for a short time in the sanitizer build.
# A build that fails stops at once; failing tests are reported and the remaining steps still run,
# and the exit status is non-zero if any step failed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
failed=()
"$here/tools/setup.sh"
export MEMPLAN_CONFORMANCE_DIR="$here/build/conformance"
"$here/tools/gen_conformance.sh" "$MEMPLAN_CONFORMANCE_DIR"
# Line tables only (-g1): backtraces and sanitizer reports keep their files and lines, and each
# build takes about a fifth less time than with full debug information.
line_tables=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
"$here/tools/build.sh" "$here/build" "${line_tables[@]}"
(cd "$here/build" && ctest --output-on-failure -j "$(nproc)") || failed+=("ctest in build")

# The installed package: install into a prefix under the build dir, build the consumer against it
# (find_package(memplan CONFIG REQUIRED), memplan::memplan), and run it on a model.
rm -rf "$here/build/install" "$here/build/consumer"
cmake --install "$here/build" --prefix "$here/build/install" >/dev/null
cmake -S "$here/test/consumer" -B "$here/build/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$here/build/install" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$here/build/consumer"
"$here/build/consumer/memplan_consumer" "$here/models/tiny_mlp" || failed+=("the consumer project")

# The sanitizer build (ASan+UBSan). With clang (tools/setup.sh installs it) the same tree also
# builds the libFuzzer targets (MEMPLAN_FUZZ): the library is compiled once, with coverage for
# libFuzzer, and the tests and the fuzz targets link it. Without clang: gcc, and no fuzzing.
asan_args=(-DMEMPLAN_SANITIZE=ON -DMEMPLAN_BUILD_BENCHMARKS=OFF "${line_tables[@]}")
asan_cxx=$(command -v clang++ || command -v c++)
if command -v clang++ >/dev/null; then
  asan_args+=(-DMEMPLAN_FUZZ=ON)
fi
# A tree configured with another compiler is configured afresh (CMake cannot switch compilers).
if [ -f "$here/build-asan/CMakeCache.txt" ] &&
   ! grep -qxF -e "CMAKE_CXX_COMPILER:FILEPATH=$asan_cxx" -e "CMAKE_CXX_COMPILER:STRING=$asan_cxx" \
     "$here/build-asan/CMakeCache.txt"; then
  rm -rf "$here/build-asan/CMakeCache.txt" "$here/build-asan/CMakeFiles"
fi
CXX=$asan_cxx CC=$(command -v clang || command -v cc) "$here/tools/build.sh" "$here/build-asan" "${asan_args[@]}"
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$(nproc)") ||
  failed+=("ctest in build-asan")

# Each fuzz target for a short time (MEMPLAN_FUZZ_SECONDS, 30 by default), all at once, on a copy
# of its seed corpus (the repository is not written) with its dictionary. A crash, a sanitizer
# report, an exception other than memplan::Error, a hang (-timeout) or running out of memory is a
# finding: its input is kept under build-asan/fuzz/<target>/ and the run fails.
if [ -x "$here/build-asan/test/fuzz/fuzz_onnx" ]; then
  fuzz_seconds=${MEMPLAN_FUZZ_SECONDS:-30}
  # The targets write each input to a scratch file: in memory (/dev/shm) where there is one.
  fuzz_tmp=$(mktemp -d -p /dev/shm memplan-fuzz.XXXXXX 2>/dev/null || mktemp -d)
  fuzz_pids=()
  for target in fuzz_onnx fuzz_npy fuzz_plan; do
    work="$here/build-asan/fuzz/$target"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/findings"
    cp "$here/test/fuzz/corpus/$target/"* "$work/corpus/"
    dict=()
    [ -f "$here/test/fuzz/$target.dict" ] && dict=(-dict="$here/test/fuzz/$target.dict")
    (cd "$work" && ASAN_OPTIONS=allocator_may_return_null=1 MEMPLAN_FUZZ_TMP="$fuzz_tmp" \
      "$here/build-asan/test/fuzz/$target" -max_total_time="$fuzz_seconds" -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/findings/" "${dict[@]}" corpus >"$work/log" 2>&1) &
    fuzz_pids+=("$!")
  done
  i=0
  for target in fuzz_onnx fuzz_npy fuzz_plan; do
    work="$here/build-asan/fuzz/$target"
    if wait "${fuzz_pids[$i]}"; then
      echo "$target: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/log" | grep -o '[0-9]*$') inputs in ${fuzz_seconds} s, nothing found"
    else
      tail -n 40 "$work/log" >&2
      echo "$target: FINDING, input kept in $work/findings/ (log: $work/log)" >&2
      failed+=("$target")
    fi
    i=$((i + 1))
  done
  rm -rf "$fuzz_tmp"
else
  echo "test.sh: no clang: the fuzz targets are not built (tools/setup.sh installs clang)"
fi

if [ ${#failed[@]} -gt 0 ]; then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
