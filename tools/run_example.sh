#!/usr/bin/env bash
# One command for a new user: install dependencies, build the command-line tool, and compile the
# example model (plan file, SVG picture and the memory report). The tests, the Python module and
# the benchmarks are left for tools/test.sh (or a plain tools/build.sh) to build.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/setup.sh"
MEMPLAN_BUILD_TARGET=memplan_cli "$here/tools/build.sh" "$here/build"
mkdir -p "$here/build/example"
"$here/build/tools/memplan" compile "$here/models/example/model.onnx" \
  -o "$here/build/example/example.mplan" --svg "$here/build/example/example.svg"
"$here/build/tools/memplan" verify "$here/build/example/example.mplan" "$here/models/example/model.onnx"
