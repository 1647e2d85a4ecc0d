"""Model folders for the benchmark: what a model is (nodes, weights), its test inputs as .npy files
for both runtimes, its expected outputs, and how far two sets of outputs are apart."""
import glob
import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper


@dataclass
class ModelCase:
    name: str
    folder: str
    model: str
    nodes: int = 0             # every node, subgraphs included
    weights_bytes: int = 0     # initializers and Constant nodes, as stored in the file
    inputs: list = field(default_factory=list)     # (name, .npy path, shape)
    expected: dict = field(default_factory=dict)   # output name -> array


def safe_name(name):
    """The file name memplan and ort_bench.js give an output."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def _walk(graph):
    """Yields every node of a graph and of its subgraphs."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk(a.g)
            for g in a.graphs:
                yield from _walk(g)


def _tensor_bytes(t):
    n = int(np.prod(t.dims)) if t.dims else 1
    np_type = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE.get(t.data_type)  # onnx 1.12 (Debian 12)
    return n * np.dtype(np_type).itemsize if np_type is not None and t.data_type != TensorProto.STRING else 0


def describe(model_path):
    """Node count and stored weight bytes (subgraphs included), without loading external data."""
    m = onnx.load(model_path, load_external_data=False)
    nodes = list(_walk(m.graph))
    weights = sum(_tensor_bytes(t) for t in m.graph.initializer)
    for n in nodes:
        for a in n.attribute:
            if n.op_type == "Constant" and a.type == onnx.AttributeProto.TENSOR:
                weights += _tensor_bytes(a.t)
    inputs = [i for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    for i in inputs:
        if i.type.WhichOneof("value") != "tensor_type":
            raise NotTensors(f"input '{i.name}' is a {i.type.WhichOneof('value').replace('_type', '')}: "
                             "the benchmark passes tensors only")
    return len(nodes), weights, [i.name for i in inputs]


class NotTensors(ValueError):
    """A model with an input that is not a tensor (a sequence, an optional)."""


def find_models(dirs):
    """Every folder under `dirs` (or given directly) with a model.onnx and a test_data_set_0."""
    found = []
    for d in dirs:
        candidates = [d] if os.path.exists(os.path.join(d, "model.onnx")) else sorted(glob.glob(os.path.join(d, "*/")))
        for c in candidates:
            c = c.rstrip("/")
            if os.path.exists(os.path.join(c, "model.onnx")) and os.path.isdir(os.path.join(c, "test_data_set_0")):
                found.append(c)
    return found


def prepare(folder, work_dir):
    """Reads a model folder; writes its test_data_set_0 inputs as .npy files into work_dir."""
    case = ModelCase(os.path.basename(folder), folder, os.path.join(folder, "model.onnx"))
    case.nodes, case.weights_bytes, declared = describe(case.model)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(work_dir, exist_ok=True)
    for k, path in enumerate(sorted(glob.glob(os.path.join(data, "input_*.pb")), key=_index)):
        name, array = load_pb(path)
        name = name or (declared[k] if k < len(declared) else f"input_{k}")
        npy = os.path.join(work_dir, f"input_{k}.npy")
        np.save(npy, array)
        case.inputs.append((name, npy, array.shape))
    for path in sorted(glob.glob(os.path.join(data, "output_*.pb")), key=_index):
        name, array = load_pb(path)
        case.expected[name] = array
    return case


def _index(path):
    return int(os.path.basename(path).split("_")[1].split(".")[0])


def max_abs_diff(outputs_dir, reference):
    """Largest |got - want| over every output in `reference` (name -> array), read from
    outputs_dir/<name>.npy. Raises ValueError when an output is missing or has another shape."""
    worst = 0.0
    for name, want in reference.items():
        path = os.path.join(outputs_dir, safe_name(name) + ".npy")
        if not os.path.exists(path):
            raise ValueError(f"no output '{name}'")
        got = np.load(path)
        if got.shape != want.shape:
            raise ValueError(f"output '{name}' has shape {got.shape}, expected {want.shape}")
        if want.size:
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))))
    return worst


def load_outputs(outputs_dir):
    """name (from the file) -> array, for every .npy in outputs_dir."""
    return {os.path.basename(p)[:-4]: np.load(p) for p in glob.glob(os.path.join(outputs_dir, "*.npy"))}
