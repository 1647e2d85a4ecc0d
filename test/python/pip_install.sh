#!/usr/bin/env bash
# The README's pip line in a new virtual environment, with Debian's python and no index: the package
# builds (reusing the build tree MEMPLAN_BUILD_DIR, so only what changed is rebuilt), installs, and
# imports from outside the source tree with ONNX Runtime's InferenceSession API.
# Usage: pip_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/v"
(cd "$src" && MEMPLAN_BUILD_DIR="$build" "$work/v/bin/pip" install --no-build-isolation --no-index --quiet .)
cd "$work"
got=$("$work/v/bin/python" -c "import memplan; print(memplan.InferenceSession('$src/models/real/ultraface_RFB_320/model.onnx').get_inputs()[0])")
echo "$got"
want="NodeArg(name='input', type='tensor(float)', shape=[1, 3, 240, 320])"
[ "$got" = "$want" ] || { echo "expected: $want" >&2; exit 1; }
case $("$work/v/bin/python" -c "import memplan; print(memplan.__file__)") in
  "$work"/v/*) ;;
  *) echo "memplan was not imported from the virtual environment" >&2; exit 1 ;;
esac
