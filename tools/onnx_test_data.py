#!/usr/bin/python3
"""Converts an ONNX test data set (input_N.pb / output_N.pb, serialized TensorProto) into .npy files
named after the tensors: OUT/inputs/<name>.npy and OUT/expected/<name>.npy.
Usage: onnx_test_data.py MODEL_DIR/test_data_set_K OUT_DIR"""
import glob
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper, load


def main():
    data_dir, out = sys.argv[1], sys.argv[2]
    model = load(os.path.join(os.path.dirname(data_dir.rstrip("/")), "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    outputs = [o.name for o in model.graph.output]
    for kind, names in (("input", inputs), ("output", outputs)):
        folder = os.path.join(out, "inputs" if kind == "input" else "expected")
        os.makedirs(folder, exist_ok=True)
        for path in sorted(glob.glob(os.path.join(data_dir, f"{kind}_*.pb"))):
            index = int(os.path.basename(path)[len(kind) + 1:-3])
            t = TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            name = t.name or names[index]
            np.save(os.path.join(folder, name.replace("/", "_") + ".npy"), numpy_helper.to_array(t))


if __name__ == "__main__":
    main()
