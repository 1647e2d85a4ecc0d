#!/usr/bin/python3
"""Reads an ONNX test data set (input_N.pb / output_N.pb: serialized TensorProto, or SequenceProto
and OptionalProto where the model declares a sequence or an optional) as numpy arrays named after
the model's tensors. Run as a script, it writes them as memplan run reads them:
OUT/inputs/<name>.npy and OUT/expected/<name>.npy (a sequence: the folder <name>/ of 0.npy, ...).
Usage: onnx_test_data.py MODEL_DIR/test_data_set_K OUT_DIR

test/conformance/cli_conformance.py imports it, so there is one reader of ONNX test data."""
import glob
import os
import sys

import numpy as np
from onnx import OptionalProto, SequenceProto, TensorProto, load, numpy_helper


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


def container_kind(value_info):
    """"tensor", "sequence" or "optional" (an optional tensor or sequence), as the model declares it."""
    kind = value_info.type.WhichOneof("value")
    return {"sequence_type": "sequence", "optional_type": "optional"}.get(kind, "tensor")


def element_type(value_info):
    """The element type of a tensor, or of the tensors a sequence or optional holds."""
    t = value_info.type
    while t.WhichOneof("value") in ("sequence_type", "optional_type"):
        t = t.sequence_type.elem_type if t.HasField("sequence_type") else t.optional_type.elem_type
    return t.tensor_type.elem_type if t.HasField("tensor_type") else None


def read_values(data_dir, kind, values):
    """[(name, value, elem_type)] of data_dir/<kind>_N.pb in N order, read as the N-th of `values`
    (ValueInfoProtos) declares it: a tensor is a numpy array, a sequence a list of them, an
    optional holding nothing None (holding a value: that value)."""
    tensors = [v for v in values if container_kind(v) == "tensor"]
    if len(tensors) == len(values):
        return [(name, numpy_helper.to_array(t), t.data_type)
                for name, t in read_protos(data_dir, kind, [v.name for v in values])]
    out = []
    for k, v in enumerate(values):
        path = os.path.join(data_dir, f"{kind}_{k}.pb")
        if not os.path.exists(path):
            break
        with open(path, "rb") as f:
            data = f.read()
        declared = container_kind(v)
        if declared == "tensor":
            proto = TensorProto()
            proto.ParseFromString(data)
            out.append((proto.name or v.name, numpy_helper.to_array(proto), proto.data_type))
            continue
        proto = SequenceProto() if declared == "sequence" else OptionalProto()
        proto.ParseFromString(data)
        value = numpy_helper.to_list(proto) if declared == "sequence" else numpy_helper.to_optional(proto)
        out.append((proto.name or v.name, value, element_type(v)))
    return out


def save_value(path, value):
    """Writes a value as memplan run reads it: an array as PATH.npy, a sequence as the folder PATH
    of 0.npy, 1.npy, ...; returns what --input takes (None for an optional holding nothing)."""
    if value is None:
        return None
    if isinstance(value, list):
        os.makedirs(path, exist_ok=True)
        for k, a in enumerate(value):
            np.save(os.path.join(path, f"{k}.npy"), a)
        return path
    np.save(path + ".npy", value)
    return path + ".npy"


def main():
    data_dir, out = sys.argv[1], sys.argv[2]
    model = load(os.path.join(os.path.dirname(data_dir.rstrip("/")), "model.onnx"), load_external_data=False)
    inputs, outputs = graph_io(model)
    for kind, values in (("input", inputs), ("output", outputs)):
        folder = os.path.join(out, "inputs" if kind == "input" else "expected")
        os.makedirs(folder, exist_ok=True)
        for name, value, _ in read_values(data_dir, kind, values):
            save_value(os.path.join(folder, name.replace("/", "_")), value)


if __name__ == "__main__":
    main()
