#!/usr/bin/python3
"""Reads an ONNX test data set (input_N.pb / output_N.pb, serialized TensorProto) as numpy arrays
named after the model's tensors. Run as a script, it writes them as .npy files:
OUT/inputs/<name>.npy and OUT/expected/<name>.npy.
Usage: onnx_test_data.py MODEL_DIR/test_data_set_K OUT_DIR

test/conformance/cli_conformance.py imports it, so there is one reader of ONNX test data."""
import glob
import os
import sys

import numpy as np
from onnx import TensorProto, load, numpy_helper


def graph_io(model):
    """The model's graph inputs (initializers that are also listed as inputs left out: the data
    sets do not feed them) and its graph outputs, as ValueInfoProto lists."""
    initializers = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers], list(model.graph.output)


def read_protos(data_dir, kind, names):
    """[(name, TensorProto)] of data_dir/<kind>_N.pb in N order ("input" or "output"). A tensor
    saved without a name takes the model's N-th input or output name, as ONNX's runner does."""
    def index(path):
        return int(os.path.basename(path)[len(kind) + 1:-3])

    out = []
    for path in sorted(glob.glob(os.path.join(data_dir, f"{kind}_*.pb")), key=index):
        t = TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if not t.name and index(path) >= len(names):
            raise ValueError(f"{path}: no tensor name, and the model has only {len(names)} {kind}s")
        out.append((t.name or names[index(path)], t))
    return out


def main():
    data_dir, out = sys.argv[1], sys.argv[2]
    model = load(os.path.join(os.path.dirname(data_dir.rstrip("/")), "model.onnx"), load_external_data=False)
    inputs, outputs = graph_io(model)
    for kind, values in (("input", inputs), ("output", outputs)):
        folder = os.path.join(out, "inputs" if kind == "input" else "expected")
        os.makedirs(folder, exist_ok=True)
        for name, proto in read_protos(data_dir, kind, [v.name for v in values]):
            np.save(os.path.join(folder, name.replace("/", "_") + ".npy"), numpy_helper.to_array(proto))


if __name__ == "__main__":
    main()
