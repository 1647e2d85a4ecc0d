#!/usr/bin/env bash
# Generate ONNX's operator conformance suite (backend node tests) from Debian's python3-onnx.
#
#   tools/gen_conformance.sh OUT_DIR
#
# Writes OUT_DIR/node/<test_name>/{model.onnx,test_data_set_K/{input_N,output_N}.pb} (and the
# model-level cases under OUT_DIR/simple, OUT_DIR/real, ... as the generator lays them out).
# Uses only /usr/bin/python3 with Debian's python3-onnx and python3-numpy (apt-get install
# python3-onnx python3-numpy). Idempotent: a stamp file records the onnx version that made the
# data; when it matches and OUT_DIR/node holds tests, nothing is regenerated.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 2
fi
OUT_DIR=$1
PY=${PYTHON:-/usr/bin/python3}
STAMP="$OUT_DIR/.memplan-conformance-stamp"

if ! "$PY" -c 'import onnx, numpy' 2>/dev/null; then
    echo "error: $PY cannot import onnx and numpy (apt-get install python3-onnx python3-numpy)" >&2
    exit 1
fi
ONNX_VERSION=$("$PY" -c 'import onnx; print(onnx.__version__)')
WANT="onnx $ONNX_VERSION"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -d "$OUT_DIR/node" ]] &&
   [[ -n "$(ls -A "$OUT_DIR/node" 2>/dev/null)" ]]; then
    echo "conformance suite already in $OUT_DIR ($WANT): $(find "$OUT_DIR/node" -mindepth 1 -maxdepth 1 -type d | wc -l) node tests"
    exit 0
fi

mkdir -p "$OUT_DIR"
rm -f "$STAMP"
# numpy >= 1.24 removed the np.float/np.int/... aliases that onnx 1.12's test generators use.
"$PY" - "$OUT_DIR" <<'PYEOF'
import sys
import numpy as np
np.float = float
np.int = int
np.bool = bool
np.object = object
np.str = str
from onnx.backend.test import cmd_tools
out = sys.argv[1]
sys.argv = ["backend-test-tools", "generate-data", "-o", out]
cmd_tools.main()
PYEOF
echo "$WANT" > "$STAMP"
echo "generated conformance suite in $OUT_DIR ($WANT): $(find "$OUT_DIR/node" -mindepth 1 -maxdepth 1 -type d | wc -l) node tests"
