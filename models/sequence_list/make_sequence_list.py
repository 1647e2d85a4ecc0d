#!/usr/bin/python3
"""models/sequence_list: a model whose input and one output are sequences of tensors.

    /usr/bin/python3 models/sequence_list/make_sequence_list.py

`parts` is a list of float32 [k, 3] tensors (k differs per tensor); the model counts them,
concatenates them along axis 0 and doubles the result, splits that into pieces of two rows (a
sequence output) and returns the last part. Expected outputs are numpy's. Writes model.onnx,
test_data_set_0/ (input_0.pb a SequenceProto, output_N.pb) and the same data as .npy files for
`memplan run` (inputs/parts/0.npy, ...; expected/halves/0.npy, ...).
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def sequence_info(name):
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [None, 3])))


def build():
    nodes = [
        helper.make_node("SequenceLength", ["parts"], ["count"], name="count"),
        helper.make_node("ConcatFromSequence", ["parts"], ["whole"], name="concat", axis=0),
        helper.make_node("Mul", ["whole", "two"], ["doubled"], name="double"),
        helper.make_node("SplitToSequence", ["doubled", "rows"], ["halves"], name="split", axis=0),
        helper.make_node("SequenceAt", ["parts", "minus_one"], ["last"], name="last"),
    ]
    graph = helper.make_graph(
        nodes, "sequence_list", [sequence_info("parts")],
        [helper.make_tensor_value_info("count", TensorProto.INT64, []),
         helper.make_tensor_value_info("doubled", TensorProto.FLOAT, ["rows", 3]),
         sequence_info("halves"),
         helper.make_tensor_value_info("last", TensorProto.FLOAT, ["k", 3])],
        [numpy_helper.from_array(np.array(2, np.float32), "two"),
         numpy_helper.from_array(np.array(2, np.int64), "rows"),
         numpy_helper.from_array(np.array(-1, np.int64), "minus_one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="memplan-models")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def sequence_proto(name, arrays):
    s = onnx.SequenceProto()
    s.name = name
    s.elem_type = onnx.SequenceProto.TENSOR
    for a in arrays:
        s.tensor_values.append(numpy_helper.from_array(a))
    return s


def main():
    rng = np.random.default_rng(7)
    parts = [rng.standard_normal((k, 3)).astype(np.float32) for k in (1, 3, 2)]
    doubled = np.concatenate(parts, axis=0) * np.float32(2)
    halves = [doubled[i:i + 2] for i in range(0, doubled.shape[0], 2)]
    outputs = {"count": np.array(len(parts), np.int64), "doubled": doubled, "halves": halves, "last": parts[-1]}

    with open(os.path.join(HERE, "model.onnx"), "wb") as f:
        f.write(build().SerializeToString())
    data = os.path.join(HERE, "test_data_set_0")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(sequence_proto("parts", parts).SerializeToString())
    for k, (name, value) in enumerate(outputs.items()):
        proto = sequence_proto(name, value) if isinstance(value, list) else numpy_helper.from_array(value, name)
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(proto.SerializeToString())
    for folder, name, arrays in (("inputs", "parts", parts), ("expected", "halves", halves)):
        os.makedirs(os.path.join(data, folder, name))
        for k, a in enumerate(arrays):
            np.save(os.path.join(data, folder, name, f"{k}.npy"), a)
    for name in ("count", "doubled", "last"):
        np.save(os.path.join(data, "expected", f"{name}.npy"), outputs[name])


if __name__ == "__main__":
    main()
