#!/usr/bin/python3
"""Build the ai.onnx opset 18-23 test models under models/opsets/ (for memplan's opset adapter).

    /usr/bin/python3 models/opsets/make_opset_models.py            # (re)write model.onnx, input_N.pb, SOURCE.json
    /usr/bin/python3 models/opsets/make_opset_models.py --check    # exit 1 if any of those would change
    /usr/bin/python3 models/opsets/make_opset_models.py --table    # print README.md's table
    NODE_PATH=/work/main/build/bench/node_modules node models/expected_with_ort.js models/opsets
                                                                   # then: output_N.pb from ONNX Runtime 1.30

Each case is a small graph (tensors like [2,3,4,5] or [1,8,6,6]) that uses the ops whose
signature or meaning changed in ai.onnx opsets 18 to 23 (attributes that became inputs, new
modes, new ops, types-only version bumps), in the forms exporters write them. See README.md.

Needs only Debian's python3-onnx (1.12) and python3-numpy. ONNX 1.12 does not know opsets 18+, so
the models are built with onnx.helper only: no onnx.checker, no shape inference. The IR version is
set by hand to the one ONNX pairs with the opset (18: 8, 19-20: 9, 21-22: 10, 23: 11), which
ONNX Runtime checks. Deterministic (fixed seeds) and idempotent: a file is rewritten only when its
bytes change (SOURCE.json: when its content changes; the keys expected_with_ort.js adds are kept
while the model and its inputs stay the same).

Layout, as in ONNX's backend tests, models/real/ and models/patterns/:

    <case>/model.onnx
    <case>/test_data_set_K/input_N.pb     onnx.TensorProto, name = graph input N (written here)
    <case>/test_data_set_K/output_N.pb    onnx.TensorProto, name = graph output N (expected_with_ort.js)
    <case>/SOURCE.json                    what it holds and tests, opset, IR, seeds, declared outputs
"""

import hashlib
import json
import math
import os
import sys
import zlib
from collections import Counter

import numpy as np
from onnx import TensorProto, helper, numpy_helper, mapping

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import make_models  # noqa: E402  (models/make_models.py: its file writers)
IR_OF_OPSET = {18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11}
MAX_WEIGHT_BYTES = 50 * 1024

CHECK_ONLY = "--check" in sys.argv[1:]
changed = []      # paths (relative to HERE) whose content differs from what is on disk
summary = []      # (case, opset, ir, model bytes, ops with versions)

EXPECTED_FROM = ("onnxruntime-node 1.30.0 CPU EP, graphOptimizationLevel=disabled, intraOpNumThreads=1 "
                 "(NOT from a converter or model author: written by expected_with_ort.js)")
TOLERANCE = {"rtol": 0.001, "atol": 0.0001}
ORT_KEYS = ("expected_outputs_from", "tolerance_evidence", "tolerance_rationale")

# ai.onnx versions of the ops used here (docs/Operators.md of onnx/onnx at commit f754691, 2026):
# the version a node gets at opset V is the largest listed version <= V.
OP_VERSIONS = {
    "Add": [14, 13, 7, 6, 1], "AffineGrid": [20], "Attention": [25, 24, 23],
    "AveragePool": [22, 19, 11, 10, 7, 1], "BitwiseAnd": [18], "BitwiseNot": [18], "BitwiseOr": [18],
    "BitwiseXor": [18], "Cast": [25, 24, 23, 21, 19, 13, 9, 6, 1], "CastLike": [25, 24, 23, 21, 19, 15],
    "CenterCropPad": [18], "Col2Im": [18], "Concat": [13, 11, 4, 1],
    "Constant": [25, 24, 23, 21, 19, 13, 12, 11, 9, 1], "ConstantOfShape": [25, 24, 23, 21, 20, 9],
    "Conv": [22, 11, 1], "Cos": [22, 7], "DFT": [20, 17], "DeformConv": [22, 19],
    "DequantizeLinear": [25, 24, 23, 21, 19, 13, 10], "Div": [14, 13, 7, 6, 1], "Elu": [22, 6, 1],
    "Erf": [13, 9], "Flatten": [25, 24, 23, 21, 13, 11, 9, 1], "GRU": [22, 14, 7, 3, 1], "Gelu": [20],
    "Gemm": [13, 11, 9, 7, 6, 1], "GlobalAveragePool": [22, 1], "GridSample": [22, 20, 16],
    "GroupNormalization": [21, 18], "HardSigmoid": [22, 6, 1], "HardSwish": [22, 14],
    "Identity": [25, 24, 23, 21, 19, 16, 14, 13, 1], "If": [25, 24, 23, 21, 19, 16, 13, 11, 1],
    "InstanceNormalization": [22, 6, 1], "LSTM": [22, 14, 7, 1], "LayerNormalization": [17],
    "Loop": [25, 24, 23, 21, 19, 16, 13, 11, 1], "LpPool": [22, 18, 11, 2, 1], "MatMul": [13, 9, 1],
    "MaxPool": [22, 12, 11, 10, 8, 1], "Mish": [22, 18], "Mul": [14, 13, 7, 6, 1],
    "Pad": [25, 24, 23, 21, 19, 18, 13, 11, 2, 1], "Pow": [15, 13, 12, 7, 1],
    "QuantizeLinear": [25, 24, 23, 21, 19, 13, 10], "RMSNormalization": [23],
    "ReduceL1": [18, 13, 11, 1], "ReduceL2": [18, 13, 11, 1], "ReduceLogSum": [18, 13, 11, 1],
    "ReduceLogSumExp": [18, 13, 11, 1], "ReduceMax": [20, 18, 13, 12, 11, 1],
    "ReduceMean": [18, 13, 11, 1], "ReduceMin": [20, 18, 13, 12, 11, 1], "ReduceProd": [18, 13, 11, 1],
    "ReduceSum": [13, 11, 1], "ReduceSumSquare": [18, 13, 11, 1],
    "Reshape": [25, 24, 23, 21, 19, 14, 13, 5, 1], "Resize": [19, 18, 13, 11, 10],
    "RotaryEmbedding": [23], "Round": [22, 11], "ScatterElements": [18, 16, 13, 11],
    "ScatterND": [18, 16, 13, 11], "Selu": [22, 6, 1], "Shape": [25, 24, 23, 21, 19, 15, 13, 1],
    "Sin": [22, 7], "Size": [25, 24, 23, 21, 19, 13, 1], "Softmax": [13, 11, 1], "Softplus": [22, 1],
    "Softsign": [22, 1], "Split": [18, 13, 11, 2, 1], "Sqrt": [13, 6, 1],
    "Squeeze": [25, 24, 23, 21, 13, 11, 1], "Sub": [14, 13, 7, 6, 1], "ThresholdedRelu": [22, 10],
    "Transpose": [25, 24, 23, 21, 13, 1], "Unsqueeze": [25, 24, 23, 21, 13, 11, 1],
}


def op_version(op, opset):
    return max(v for v in OP_VERSIONS[op] if v <= opset)


def seed_of(text):
    """The models/real convention: crc32('<case>/<index>') & 0x7fffffff."""
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


# ----------------------------------------------------------------------------------------------
# file writing (idempotent)

write_bytes, write_folder_source_json = make_models.folder_writers(HERE, CHECK_ONLY, changed)


def write_source_json(rel, doc):
    write_folder_source_json(rel, doc, ORT_KEYS)


# ----------------------------------------------------------------------------------------------
# graph builder

F32, F16, I64, I32, U8, I8, BOOL = (np.float32, np.float16, np.int64, np.int32, np.uint8, np.int8, np.bool_)


def elem(dtype):
    return mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


def vinfo(name, dtype, shape):
    return helper.make_tensor_value_info(name, elem(dtype), shape)


def tensor(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name=name)


class Graph:
    """Nodes, initializers, inputs, outputs of one graph (the model's or a subgraph)."""

    def __init__(self, case, name):
        self.case = case
        self.name = name
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []

    def init(self, name, value, dtype=F32):
        self.inits.append(tensor(self.case.unique(name), value, dtype))
        return name

    def weight(self, name, shape, std, mean=0.0):
        return self.init(name, mean + std * self.case.wrng.standard_normal(shape), F32)

    def node(self, op, inputs, outputs, **attrs):
        """One node named after its first output; returns the output name (or the list of them)."""
        outs = [outputs] if isinstance(outputs, str) else list(outputs)
        for o in outs:
            if o:
                self.case.unique(o)
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=outs[0], **attrs))
        return outputs

    def constant(self, name, value, dtype):
        """A Constant node (value attribute), as exporters write small constants."""
        return self.node("Constant", [], name, value=tensor(name + "_value", value, dtype))

    def output(self, name, dtype, shape):
        self.outputs.append(vinfo(name, dtype, shape))
        return name

    def graph(self, doc=None):
        return helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits, doc_string=doc)


class Case(Graph):
    """One test folder: the main graph plus its data-set inputs, opset and description."""

    def __init__(self, name, opset, data_sets=1, seed_name=None):
        self.names = set()
        super().__init__(self, name)
        self.opset = opset
        self.ir = IR_OF_OPSET[opset]
        # Pairs of cases that hold the same graph at two opsets share seed_name, hence weights and inputs.
        self.seed_name = seed_name or name
        self.weight_seed = seed_of(self.seed_name + "/weights")
        self.wrng = np.random.default_rng(self.weight_seed)
        self.data_sets = data_sets
        self.input_specs = []         # (name, dtype, shape, recipe, gen(rng, ds_index))
        self.constant_outputs = []    # outputs that are constant by construction
        self.notes = []               # where ONNX Runtime's answer is not the only reading of the spec
        self.what = ""
        self.tests = ""

    def unique(self, name):
        assert name not in self.names, (self.name, name)
        self.names.add(name)
        return name

    def input(self, name, dtype, shape, recipe, gen):
        self.inputs.append(vinfo(self.unique(name), dtype, shape))
        self.input_specs.append((name, dtype, list(shape), recipe, gen))
        return name

    def model(self):
        m = helper.make_model(self.graph(self.what), producer_name="memplan models/opsets/make_opset_models.py",
                              opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = self.ir
        return m


def normal(scale=1.0, mean=0.0):
    return lambda rng, k, shape: mean + scale * rng.standard_normal(shape)


def uniform(lo, hi):
    return lambda rng, k, shape: rng.uniform(lo, hi, shape)


def spread(lo, hi):
    """Evenly spread over [lo, hi] (so every regime shows), shuffled, with a little noise."""
    def gen(rng, k, shape):
        n = int(np.prod(shape))
        v = np.linspace(lo, hi, n) + rng.uniform(-0.5, 0.5, n) * (hi - lo) / max(n - 1, 1)
        return rng.permutation(np.clip(v, lo, hi)).reshape(shape)
    return gen


def fixed(value):
    return lambda rng, k, shape: np.array(value).reshape(shape)


def ops_of(graph, opset, counter):
    for n in graph.node:
        counter[f"{n.op_type}-{op_version(n.op_type, opset)}"] += 1
        for a in n.attribute:
            if a.type == a.GRAPH:
                ops_of(a.g, opset, counter)
    return counter


# ----------------------------------------------------------------------------------------------
# cases: attributes that became inputs, changed meanings

def reduce_axes_18():
    c = Case("reduce_axes_18", 18)
    c.what = "Nine Reduce* ops at opset 18, each with axes as an int64 initializer input (keepdims 0/1/default, negative axes)"
    c.tests = ("Reduce*-18 take axes as input 1 (an attribute up to 17): the adapter reads the constant "
               "initializer (negative axes, several axes, keepdims default 1 and explicit 0/1)")
    x = c.input("x", F32, [2, 3, 4, 5], "standard normal", normal())
    p = c.input("p", F32, [2, 3, 4, 5], "uniform [0.5, 1.5] (positive, for ReduceProd and ReduceLogSum)", uniform(0.5, 1.5))
    cases = [  # op, data, axes, keepdims (None: default 1), output shape
        ("ReduceMean", x, [1], None, [2, 1, 4, 5]),
        ("ReduceMax", x, [-1], 0, [2, 3, 4]),
        ("ReduceMin", x, [0, 2], 1, [1, 3, 1, 5]),
        ("ReduceProd", p, [-2, -1], 0, [2, 3]),
        ("ReduceL1", x, [3], None, [2, 3, 4, 1]),
        ("ReduceL2", x, [1, -1], 0, [2, 4]),
        ("ReduceLogSum", p, [2], 1, [2, 3, 1, 5]),
        ("ReduceLogSumExp", x, [-3], 0, [2, 4, 5]),
        ("ReduceSumSquare", x, [0, 3], 0, [3, 4]),
    ]
    for op, data, axes, keep, shape in cases:
        name = op.lower()
        a = c.init(name + ".axes", axes, I64)
        attrs = {} if keep is None else {"keepdims": keep}
        c.node(op, [data, a], name, **attrs)
        c.output(name, F32, shape)
    return c


def reduce_axes_forms_18():
    c = Case("reduce_axes_forms_18", 18)
    c.what = ("Reduce forms at opset 18: no axes input (reduce all), noop_with_empty_axes=1 (identity), axes from a "
              "Constant node (ReduceSum-13 and ReduceL2-18), empty optional-input name, empty axes initializer")
    c.tests = ("missing axes input = reduce over all axes unless noop_with_empty_axes=1 (then identity); an empty "
               "input name '' is a missing input; an empty [0] axes tensor counts as no axes; axes coming from a "
               "Constant node rather than an initializer; ReduceSum keeps its opset-13 form (axes input) at 18")
    x = c.input("x", F32, [2, 3, 4, 5], "standard normal", normal())
    c.node("ReduceMean", [x], "mean_all")
    c.output("mean_all", F32, [1, 1, 1, 1])
    c.node("ReduceMax", [x], "max_noop", noop_with_empty_axes=1)
    c.output("max_noop", F32, [2, 3, 4, 5])
    c.constant("sum.axes", [1, 2], I64)
    c.node("ReduceSum", [x, "sum.axes"], "sum_const_axes", keepdims=0)
    c.output("sum_const_axes", F32, [2, 5])
    c.constant("l2.axes", [-1], I64)
    c.node("ReduceL2", [x, "l2.axes"], "l2_const_axes")
    c.output("l2_const_axes", F32, [2, 3, 4, 1])
    c.node("ReduceMin", [x, ""], "min_empty_name", keepdims=0)
    c.output("min_empty_name", F32, [])
    c.init("empty.axes", np.zeros([0]), I64)
    c.node("ReduceSumSquare", [x, "empty.axes"], "sumsquare_empty_axes", keepdims=1)
    c.output("sumsquare_empty_axes", F32, [1, 1, 1, 1])
    c.node("ReduceSum", [x, "empty.axes"], "sum_empty_axes_noop", noop_with_empty_axes=1)
    c.output("sum_empty_axes_noop", F32, [2, 3, 4, 5])
    return c


def reduce_20():
    c = Case("reduce_20", 20)
    c.what = "ReduceMax-20 and ReduceMin-20 (the version that added bool) on float with axes inputs"
    c.tests = "ReduceMax/ReduceMin-20 keep the opset-18 signature (axes input); only the type list grew"
    x = c.input("x", F32, [2, 3, 4, 5], "standard normal", normal())
    c.node("ReduceMax", [x, c.init("max.axes", [1, 3], I64)], "max_13", keepdims=0)
    c.output("max_13", F32, [2, 4])
    c.node("ReduceMin", [x, c.init("min.axes", [-2], I64)], "min_m2")
    c.output("min_m2", F32, [2, 3, 1, 5])
    c.node("ReduceMax", [x], "max_all", keepdims=0)
    c.output("max_all", F32, [])
    return c


def split_num_outputs_18():
    c = Case("split_num_outputs_18", 18)
    c.what = "Split-18 with num_outputs (uneven 10 -> 4,4,2; even 9 -> 3,3,3 on a negative axis) and with a split input [2,5,3]"
    c.tests = ("Split-18's num_outputs attribute: chunk = ceil(len / n), the last chunk smaller; the split input "
               "(an input since 13) still works at 18")
    x = c.input("x", F32, [2, 10, 3], "standard normal", normal())
    y = c.input("y", F32, [9, 4], "standard normal", normal())
    c.node("Split", [x], ["x_a", "x_b", "x_c"], axis=1, num_outputs=3)
    c.node("Split", [y], ["y_a", "y_b", "y_c"], axis=-2, num_outputs=3)
    c.node("Split", [x, c.init("split.sizes", [2, 5, 3], I64)], ["s_a", "s_b", "s_c"], axis=1)
    for n, s in [("x_a", [2, 4, 3]), ("x_b", [2, 4, 3]), ("x_c", [2, 2, 3]), ("y_a", [3, 4]), ("y_b", [3, 4]),
                 ("y_c", [3, 4]), ("s_a", [2, 2, 3]), ("s_b", [2, 5, 3]), ("s_c", [2, 3, 3])]:
        c.output(n, F32, s)
    return c


def pad_axes_18():
    c = Case("pad_axes_18", 18)
    c.what = "Pad-18 with the axes input: constant (with constant_value), reflect, edge on axes [2,3]; axes [-1]; axes [3,1] (unsorted)"
    c.tests = ("Pad-18's 4th input axes: pads has 2*len(axes) values [begins..., ends...] in the order of axes, "
               "other axes unpadded; negative and unsorted axes; the optional constant_value skipped with ''")
    x = c.input("x", F32, [1, 2, 4, 5], "standard normal", normal())
    ax23 = c.init("axes_2_3", [2, 3], I64)
    c.node("Pad", [x, c.init("pads.constant", [1, 2, 0, 1], I64), c.init("constant_value", 1.5, F32), ax23],
           "pad_constant", mode="constant")
    c.output("pad_constant", F32, [1, 2, 5, 8])
    c.node("Pad", [x, c.init("pads.reflect", [2, 1, 1, 3], I64), "", ax23], "pad_reflect", mode="reflect")
    c.output("pad_reflect", F32, [1, 2, 7, 9])
    c.node("Pad", [x, c.init("pads.edge", [0, 3, 2, 1], I64), "", ax23], "pad_edge", mode="edge")
    c.output("pad_edge", F32, [1, 2, 6, 9])
    c.node("Pad", [x, c.init("pads.neg", [2, 1], I64), "", c.init("axes_m1", [-1], I64)], "pad_neg_axis")
    c.output("pad_neg_axis", F32, [1, 2, 4, 8])
    c.node("Pad", [x, c.init("pads.unsorted", [1, 0, 2, 1], I64), c.init("constant_value2", -2.0, F32),
                   c.init("axes_3_1", [3, 1], I64)], "pad_unsorted_axes", mode="constant")
    c.output("pad_unsorted_axes", F32, [1, 3, 4, 8])
    return c


def pad_wrap_19():
    c = Case("pad_wrap_19", 19)
    c.what = "Pad-19 mode 'wrap' without axes (full pads, channel axis too) and with axes [3] and [-2,-1]"
    c.tests = "Pad-19 adds mode 'wrap' (circular padding), alone and combined with the axes input"
    x = c.input("x", F32, [1, 2, 3, 4], "standard normal", normal())
    c.node("Pad", [x, c.init("pads.full", [0, 1, 1, 2, 0, 0, 2, 1], I64)], "wrap_full", mode="wrap")
    c.output("wrap_full", F32, [1, 3, 6, 7])
    c.node("Pad", [x, c.init("pads.w", [3, 2], I64), "", c.init("axes_3", [3], I64)], "wrap_axis3", mode="wrap")
    c.output("wrap_axis3", F32, [1, 2, 3, 9])
    c.node("Pad", [x, c.init("pads.hw", [1, 2, 2, 1], I64), "", c.init("axes_m2_m1", [-2, -1], I64)], "wrap_hw",
           mode="wrap")
    c.output("wrap_hw", F32, [1, 2, 6, 7])
    return c


def resize_18():
    c = Case("resize_18", 18)
    c.what = ("Resize-18: linear scales [1,1,2,2]; nearest with axes=[2,3] and 2 scales; cubic with sizes; linear "
              "with axes [2,3] and keep_aspect_ratio_policy not_larger / not_smaller on sizes")
    c.tests = ("Resize-18's axes attribute (scales/sizes cover only those axes), keep_aspect_ratio_policy "
               "(one scale for all listed axes, output = round(in*scale)), empty optional inputs ''")
    x = c.input("x", F32, [1, 2, 4, 5], "standard normal", normal())
    c.node("Resize", [x, "", c.init("scales.linear", [1, 1, 2, 2], F32)], "linear_x2", mode="linear")
    c.output("linear_x2", F32, [1, 2, 8, 10])
    c.node("Resize", [x, "", c.init("scales.nearest", [1.5, 2.0], F32)], "nearest_axes", mode="nearest", axes=[2, 3])
    c.output("nearest_axes", F32, [1, 2, 6, 10])
    c.node("Resize", [x, "", "", c.init("sizes.cubic", [1, 2, 7, 9], I64)], "cubic_sizes", mode="cubic")
    c.output("cubic_sizes", F32, [1, 2, 7, 9])
    sz = c.init("sizes.keep", [7, 12], I64)
    c.node("Resize", [x, "", "", sz], "linear_not_larger", mode="linear", axes=[2, 3],
           keep_aspect_ratio_policy="not_larger")
    c.output("linear_not_larger", F32, [1, 2, 7, 9])
    c.node("Resize", [x, "", "", sz], "linear_not_smaller", mode="linear", axes=[2, 3],
           keep_aspect_ratio_policy="not_smaller")
    c.output("linear_not_smaller", F32, [1, 2, 10, 12])
    return c


def resize_antialias_18():
    c = Case("resize_antialias_18", 18)
    c.what = "Resize-18 downscaling with antialias=1: linear by 0.5, cubic by 0.5, linear with axes [2,3] by (0.6, 0.75)"
    c.tests = "Resize-18's antialias attribute (filter stretched by 1/scale when downscaling), new at 18"
    x = c.input("x", F32, [1, 2, 8, 8], "standard normal", normal())
    half = c.init("scales.half", [1, 1, 0.5, 0.5], F32)
    c.node("Resize", [x, "", half], "linear_aa", mode="linear", antialias=1)
    c.output("linear_aa", F32, [1, 2, 4, 4])
    c.node("Resize", [x, "", half], "cubic_aa", mode="cubic", antialias=1)
    c.output("cubic_aa", F32, [1, 2, 4, 4])
    c.node("Resize", [x, "", c.init("scales.hw", [0.6, 0.75], F32)], "linear_aa_axes", mode="linear", antialias=1,
           axes=[2, 3])
    c.output("linear_aa_axes", F32, [1, 2, 4, 6])
    return c


def resize_19():
    c = Case("resize_19", 19)
    c.what = "Resize-19 coordinate_transformation_mode half_pixel_symmetric with non-integer output sizes (scale 1.7, 1.3)"
    c.tests = ("Resize-19's half_pixel_symmetric: offset = in/2 * (1 - floor(in*s)/(in*s)) when in*s is not "
               "an integer (5*1.7 = 8.5 -> 8, 6*1.7 = 10.2 -> 10, 6*1.3 = 7.8 -> 7)")
    x = c.input("x", F32, [1, 2, 5, 6], "standard normal", normal())
    c.node("Resize", [x, "", c.init("scales.17", [1, 1, 1.7, 1.7], F32)], "linear_hps", mode="linear",
           coordinate_transformation_mode="half_pixel_symmetric")
    c.output("linear_hps", F32, [1, 2, 8, 10])
    c.node("Resize", [x, "", c.init("scales.17_13", [1, 1, 1.7, 1.3], F32)], "nearest_hps", mode="nearest",
           coordinate_transformation_mode="half_pixel_symmetric")
    c.output("nearest_hps", F32, [1, 2, 8, 7])
    return c


def averagepool_19():
    c = Case("averagepool_19", 19)
    c.what = ("AveragePool-19 3x3 with dilations [1,1] pads 1; dilations [2,2] pads 2; dilations [2,2] pads 2 "
              "strides 2 ceil_mode 1 count_include_pad 1")
    c.tests = "AveragePool-19's dilations attribute (new at 19), with count_include_pad and ceil_mode"
    x = c.input("x", F32, [1, 3, 8, 8], "standard normal", normal())
    c.node("AveragePool", [x], "avg_d1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], dilations=[1, 1])
    c.output("avg_d1", F32, [1, 3, 8, 8])
    c.node("AveragePool", [x], "avg_d2", kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2])
    c.output("avg_d2", F32, [1, 3, 8, 8])
    c.node("AveragePool", [x], "avg_d2_s2_ceil", kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2],
           strides=[2, 2], ceil_mode=1, count_include_pad=1)
    c.output("avg_d2_s2_ceil", F32, [1, 3, 5, 5])
    return c


def scatter_18():
    c = Case("scatter_18", 18)
    c.what = "ScatterElements-18 and ScatterND-18 with reduction 'max' and 'min', duplicate indices included"
    c.tests = "reduction 'max'/'min' (new at 18; 16 had none/add/mul): duplicates combine with the data and each other"
    d = c.input("data", F32, [4, 5], "standard normal", normal())
    ue = c.input("updates_e", F32, [4, 3], "standard normal", normal())
    ur = c.input("updates_rows", F32, [3, 5], "standard normal", normal())
    up = c.input("updates_points", F32, [3], "standard normal", normal())
    ie = c.init("indices_e", [[0, 2, 2], [1, 4, 1], [3, 0, 0], [4, 4, 2]], I64)   # row-wise duplicates
    c.node("ScatterElements", [d, ie, ue], "se_max", axis=1, reduction="max")
    c.node("ScatterElements", [d, ie, ue], "se_min", axis=1, reduction="min")
    ir = c.init("indices_rows", [[1], [3], [1]], I64)                             # row 1 twice
    c.node("ScatterND", [d, ir, ur], "snd_max_rows", reduction="max")
    c.node("ScatterND", [d, ir, ur], "snd_min_rows", reduction="min")
    ip = c.init("indices_points", [[0, 1], [2, 3], [0, 1]], I64)                  # (0,1) twice
    c.node("ScatterND", [d, ip, up], "snd_max_points", reduction="max")
    c.node("ScatterND", [d, ip, up], "snd_min_points", reduction="min")
    for n in ["se_max", "se_min", "snd_max_rows", "snd_min_rows", "snd_max_points", "snd_min_points"]:
        c.output(n, F32, [4, 5])
    return c


def cast_case(opset):
    c = Case(f"cast_{opset}", opset, seed_name="cast")
    c.what = (f"Cast-{op_version('Cast', opset)} float->int32, float->float16->float, int64->float; CastLike; Shape (with "
              f"start), Size, Reshape (with 0 and -1), Identity, ConstantOfShape(0.5) at opset {opset}")
    c.tests = (f"version bumps that only widen type lists (Cast/CastLike/Shape/Size/Reshape/Identity at 19"
               f"{' and 21' if opset >= 21 else ''}{', ConstantOfShape at 20 and 21' if opset >= 21 else ''}): the adapter "
               "must accept them with unchanged semantics (Cast-19's new saturate attribute applies to float8 only and is "
               "not set)")
    x = c.input("x", F32, [2, 3, 4], "uniform [-1000, 1000] (fractions, negatives, beyond float16's 11-bit mantissa)",
                uniform(-1000, 1000))
    i = c.input("i", I64, [2, 3], "integers uniform in [-2^40, 2^40] (not exact in float32)",
                lambda rng, k, shape: rng.integers(-(1 << 40), 1 << 40, shape))
    c.node("Cast", [x], "x_int32", to=TensorProto.INT32)
    c.output("x_int32", I32, [2, 3, 4])
    c.node("Cast", [x], "x_f16", to=TensorProto.FLOAT16)
    c.node("Cast", ["x_f16"], "x_f16_f32", to=TensorProto.FLOAT)
    c.output("x_f16_f32", F32, [2, 3, 4])
    c.node("Cast", [i], "i_f32", to=TensorProto.FLOAT)
    c.output("i_f32", F32, [2, 3])
    c.node("CastLike", [i, x], "i_like_x")
    c.output("i_like_x", F32, [2, 3])
    c.node("CastLike", [x, c.init("like_int64", [0], I64)], "x_like_i64")
    c.output("x_like_i64", I64, [2, 3, 4])
    c.node("Shape", [x], "shape")
    c.output("shape", I64, [3])
    c.node("Shape", [x], "shape_from1", start=1)
    c.output("shape_from1", I64, [2])
    c.node("Size", [x], "size")
    c.output("size", I64, [])
    c.node("Reshape", [x, c.init("shape.4_m1", [4, -1], I64)], "reshape_4_m1")
    c.output("reshape_4_m1", F32, [4, 6])
    c.node("Reshape", [x, c.init("shape.0_12", [0, 12], I64)], "reshape_0_12")
    c.output("reshape_0_12", F32, [2, 12])
    c.node("Identity", [x], "identity")
    c.output("identity", F32, [2, 3, 4])
    c.node("ConstantOfShape", ["shape"], "half", value=tensor("value", [0.5], F32))
    c.output("half", F32, [2, 3, 4])
    c.constant_outputs.append("half")
    return c


def cast_19():
    return cast_case(19)


def cast_21():
    return cast_case(21)


def dft_20():
    c = Case("dft_20", 20)
    c.what = ("DFT-20 with axis as an int64 scalar input: real [1,16,1] on axis 1 and -2, onesided=1, dft_length 12, "
              "inverse on complex [1,16,2]; [2,6,4,1] with axis 1 and with axis omitted (default -2 = axis 2)")
    c.tests = ("DFT-20 moved axis from attribute (default 1 at 17) to an optional scalar input whose default is -2 "
               "(the last signal axis): an omitted axis means axis 1 at 17 but axis rank-2 at 20")
    s = c.input("signal", F32, [1, 16, 1], "standard normal", normal())
    z = c.input("spectrum", F32, [1, 16, 2], "standard normal (real, imaginary)", normal())
    s2 = c.input("signal_2d", F32, [2, 6, 4, 1], "standard normal", normal())
    ax1 = c.init("axis_1", 1, I64)          # shape [] scalar
    c.node("DFT", [s, "", ax1], "dft")
    c.output("dft", F32, [1, 16, 2])
    c.node("DFT", [s, "", c.init("axis_m2", -2, I64)], "dft_neg_axis")
    c.output("dft_neg_axis", F32, [1, 16, 2])
    c.node("DFT", [s, "", ax1], "rfft", onesided=1)
    c.output("rfft", F32, [1, 9, 2])
    c.node("DFT", [s, c.init("dft_length", 12, I64), ax1], "dft_len12")
    c.output("dft_len12", F32, [1, 12, 2])
    c.node("DFT", [z, "", ax1], "idft", inverse=1)
    c.output("idft", F32, [1, 16, 2])
    c.node("DFT", [s2, "", ax1], "dft2d_axis1")
    c.output("dft2d_axis1", F32, [2, 6, 4, 2])
    c.node("DFT", [s2], "dft2d_default_axis")
    c.output("dft2d_default_axis", F32, [2, 6, 4, 2])
    return c


def gridsample_20():
    c = Case("gridsample_20", 20)
    c.what = "GridSample-20 modes linear / nearest / cubic x align_corners 0/1 x padding zeros/border/reflection, 4-D"
    c.tests = ("GridSample-20 renamed modes bilinear -> linear and bicubic -> cubic (16 used the old names) and "
               "allows N-D; grid values outside [-1, 1] exercise the padding modes")
    c.notes.append(
        "cubic_ac0_border: ONNX Runtime 1.30 clamps each of the 4x4 cubic taps into the image (PyTorch's "
        "bicubic/border behaviour); ONNX's reference implementation (onnx/reference/ops/op_grid_sample.py) first clamps "
        "a sampling point that lies outside [-0.5, size-0.5] to [0, size-1] and then takes the taps. The two differ "
        "(up to 0.074 here) at the 3 grid points outside [-1, 1] in this data set; all other outputs agree with the "
        "reference to 1e-6. output_N.pb holds ONNX Runtime's answer.")
    x = c.input("x", F32, [1, 2, 5, 6], "standard normal", normal())
    g = c.input("grid", F32, [1, 4, 3, 2], "uniform [-1.2, 1.2]", uniform(-1.2, 1.2))
    for mode, ac, pad in [("linear", 0, "zeros"), ("linear", 1, "border"), ("nearest", 0, "reflection"),
                          ("nearest", 1, "zeros"), ("cubic", 0, "border"), ("cubic", 1, "reflection")]:
        n = f"{mode}_ac{ac}_{pad}"
        c.node("GridSample", [x, g], n, mode=mode, align_corners=ac, padding_mode=pad)
        c.output(n, F32, [1, 2, 4, 3])
    return c


def qdq_case(opset):
    c = Case(f"qdq_{opset}", opset, seed_name="qdq")
    c.what = (f"QuantizeLinear -> DequantizeLinear at opset {opset}: per-tensor uint8, per-axis int8 (axis 1)"
              + ("; blocked int8 (axis 1, block_size 2); QuantizeLinear output_dtype=uint8 without zero point"
                 if opset >= 21 else ""))
    c.tests = (f"Q/DQ-{op_version('QuantizeLinear', opset)}: per-tensor and per-axis forms unchanged"
               + ("; block_size (scale shaped like x with axis 1 divided by 2) and output_dtype (new at 21)"
                  if opset >= 21 else "; 19 only added float8 types and saturate"))
    x = c.input("x", F32, [2, 4, 3, 3], "standard normal times 2 (some values saturate)", normal(2.0))
    s = c.init("scale", 0.05, F32)
    zp = c.init("zero_point_u8", 128, U8)
    c.node("QuantizeLinear", [x, s, zp], "q_u8")
    c.node("DequantizeLinear", ["q_u8", s, zp], "dq_u8")
    sa = c.init("scale_axis1", [0.01, 0.02, 0.05, 0.1], F32)
    za = c.init("zero_point_axis1", [0, -3, 5, 10], I8)
    c.node("QuantizeLinear", [x, sa, za], "q_i8_axis1", axis=1)
    c.node("DequantizeLinear", ["q_i8_axis1", sa, za], "dq_i8_axis1", axis=1)
    outs = [("q_u8", U8), ("dq_u8", F32), ("q_i8_axis1", I8), ("dq_i8_axis1", F32)]
    if opset >= 21:
        sb = c.init("scale_blocked", np.round(c.wrng.uniform(0.01, 0.06, [2, 2, 3, 3]), 4), F32)
        zb = c.init("zero_point_blocked", c.wrng.integers(-10, 11, [2, 2, 3, 3]), I8)
        c.node("QuantizeLinear", [x, sb, zb], "q_i8_blocked", axis=1, block_size=2)
        c.node("DequantizeLinear", ["q_i8_blocked", sb, zb], "dq_i8_blocked", axis=1, block_size=2)
        c.node("QuantizeLinear", [x, c.init("scale_od", 0.02, F32)], "q_output_dtype", output_dtype=TensorProto.UINT8)
        c.node("DequantizeLinear", ["q_output_dtype", "scale_od"], "dq_output_dtype")
        outs += [("q_i8_blocked", I8), ("dq_i8_blocked", F32), ("q_output_dtype", U8), ("dq_output_dtype", F32)]
    for n, t in outs:
        c.output(n, t, [2, 4, 3, 3])
    return c


def qdq_19():
    return qdq_case(19)


def qdq_21():
    return qdq_case(21)


# ----------------------------------------------------------------------------------------------
# new ops

def gelu_20():
    c = Case("gelu_20", 20)
    c.what = "Gelu-20 approximate 'none' and 'tanh' on values spread over [-6, 6]"
    c.tests = "Gelu is an op from 20 (before: Div/Erf/Add/Mul/Mul); approximate='tanh' selects the tanh formula"
    x = c.input("x", F32, [4, 32], "spread over [-6, 6] (linspace + jitter, shuffled)", spread(-6, 6))
    c.node("Gelu", [x], "gelu")
    c.node("Gelu", [x], "gelu_tanh", approximate="tanh")
    c.output("gelu", F32, [4, 32])
    c.output("gelu_tanh", F32, [4, 32])
    return c


def mish_18():
    c = Case("mish_18", 18)
    c.what = "Mish-18 on values spread over [-20, 20]"
    c.tests = "Mish is an op from 18: x * tanh(softplus(x)), both tails (softplus saturation)"
    x = c.input("x", F32, [4, 50], "spread over [-20, 20] (linspace + jitter, shuffled)", spread(-20, 20))
    c.node("Mish", [x], "mish")
    c.output("mish", F32, [4, 50])
    return c


def bitwise_18():
    c = Case("bitwise_18", 18)
    c.what = "BitwiseAnd/Or/Xor/Not-18 on int32 (negatives) and uint8, second operand [3,1] broadcast"
    c.tests = "the bitwise ops are new at 18; two's-complement int32 and uint8, multidirectional broadcasting"
    a = c.input("a", I32, [3, 4], "integers uniform in [-2^31, 2^31)",
                lambda rng, k, shape: rng.integers(-(1 << 31), 1 << 31, shape))
    b = c.input("b", I32, [3, 1], "integers uniform in [-2^31, 2^31)",
                lambda rng, k, shape: rng.integers(-(1 << 31), 1 << 31, shape))
    u = c.input("u", U8, [3, 4], "integers uniform in [0, 255]", lambda rng, k, shape: rng.integers(0, 256, shape))
    v = c.input("v", U8, [3, 1], "integers uniform in [0, 255]", lambda rng, k, shape: rng.integers(0, 256, shape))
    for t, p, q, dt in [("i32", a, b, I32), ("u8", u, v, U8)]:
        for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
            n = f"{op[7:].lower()}_{t}"
            c.node(op, [p, q], n)
            c.output(n, dt, [3, 4])
        c.node("BitwiseNot", [p], f"not_{t}")
        c.output(f"not_{t}", dt, [3, 4])
    return c


def groupnorm_18():
    c = Case("groupnorm_18", 18)
    c.what = "GroupNormalization-18: num_groups 2 on [2,4,3,3], scale and bias of shape [num_groups], epsilon 1e-5"
    c.tests = ("GroupNormalization-18 (a function op) takes scale/bias per GROUP; 21 changed them to per CHANNEL: "
               "the adapter must not treat 18 as 21")
    x = c.input("x", F32, [2, 4, 3, 3], "standard normal times 2 plus per-channel offsets (-1, 0.5, 2, -3)",
                lambda rng, k, shape: 2 * rng.standard_normal(shape) + np.array([-1, 0.5, 2, -3]).reshape(1, 4, 1, 1))
    c.node("GroupNormalization", [x, c.init("scale", [1.5, -0.5], F32), c.init("bias", [0.25, 1.0], F32)], "y",
           num_groups=2, epsilon=1e-5)
    c.output("y", F32, [2, 4, 3, 3])
    return c


def groupnorm_21():
    c = Case("groupnorm_21", 21)
    c.what = "GroupNormalization-21: num_groups 2 on [2,4,3,3], scale and bias of shape [C] = [4], stash_type 1"
    c.tests = "GroupNormalization-21: scale/bias per channel (shape [C]) and the stash_type attribute"
    x = c.input("x", F32, [2, 4, 3, 3], "standard normal times 2 plus per-channel offsets (-1, 0.5, 2, -3)",
                lambda rng, k, shape: 2 * rng.standard_normal(shape) + np.array([-1, 0.5, 2, -3]).reshape(1, 4, 1, 1))
    c.node("GroupNormalization", [x, c.init("scale", [1.5, -0.5, 0.75, 2.0], F32),
                                  c.init("bias", [0.25, 1.0, -0.5, 0.0], F32)], "y",
           num_groups=2, epsilon=1e-5, stash_type=1)
    c.output("y", F32, [2, 4, 3, 3])
    return c


def col2im_18():
    c = Case("col2im_18", 18)
    c.what = "Col2Im-18: image 5x5, block 2x2: plain; pads 1 strides 2; dilations 2"
    c.tests = "Col2Im is new at 18: image_shape and block_shape are int64 initializer inputs; overlapping blocks sum"
    img = c.init("image_shape", [5, 5], I64)
    blk = c.init("block_shape", [2, 2], I64)
    a = c.input("cols", F32, [1, 8, 16], "standard normal", normal())
    b = c.input("cols_strided", F32, [1, 8, 9], "standard normal", normal())
    d = c.input("cols_dilated", F32, [1, 8, 9], "standard normal", normal())
    c.node("Col2Im", [a, img, blk], "image")
    c.node("Col2Im", [b, img, blk], "image_pads_strides", pads=[1, 1, 1, 1], strides=[2, 2])
    c.node("Col2Im", [d, img, blk], "image_dilated", dilations=[2, 2])
    for n in ["image", "image_pads_strides", "image_dilated"]:
        c.output(n, F32, [1, 2, 5, 5])
    return c


def centercroppad_18():
    c = Case("centercroppad_18", 18)
    c.what = ("CenterCropPad-18 on [1,2,6,5]: axes [2,3] crop H 6->4 and pad W 5->8; no axes crop H 6->3 (odd) "
              "and pad C 2->3, W 5->7; axes [-1,-3] crop W 5->2 and pad C 2->3")
    c.tests = ("CenterCropPad is new at 18 (a function op): per axis crop or pad around the centre, odd "
               "differences, the axes attribute with negative values")
    x = c.input("x", F32, [1, 2, 6, 5], "standard normal", normal())
    c.node("CenterCropPad", [x, c.init("shape.hw", [4, 8], I64)], "crop_h_pad_w", axes=[2, 3])
    c.output("crop_h_pad_w", F32, [1, 2, 4, 8])
    c.node("CenterCropPad", [x, c.init("shape.all", [1, 3, 3, 7], I64)], "all_axes")
    c.output("all_axes", F32, [1, 3, 3, 7])
    c.node("CenterCropPad", [x, c.init("shape.neg", [2, 3], I64)], "neg_axes", axes=[-1, -3])
    c.output("neg_axes", F32, [1, 3, 6, 2])
    return c


def lppool_18():
    c = Case("lppool_18", 18)
    c.what = "LpPool-18 p=2 kernel 3x3 stride 2 with ceil_mode 0 and 1; p=3 kernel 2x2 dilations 2 pads 1"
    c.tests = "LpPool-18 adds ceil_mode and dilations"
    c.notes.append(
        "lp2_ceil: with ceil_mode 1 the last window in each axis overhangs the 6x6 input (rows/columns 4..6). "
        "ONNX Runtime 1.30 sums |x|^2 over the in-range elements only; ONNX's reference implementation "
        "(onnx/reference/ops/op_lp_pool.py) and PyTorch's lp_pool2d (avg_pool * kernel size) scale that sum by "
        "kernel elements / in-range elements, i.e. a factor sqrt(9/6) or sqrt(9/4) on the overhanging windows. "
        "output_N.pb holds ONNX Runtime's answer; lp2_floor and lp3_dilated agree with the reference.")
    x = c.input("x", F32, [1, 2, 6, 6], "standard normal", normal())
    c.node("LpPool", [x], "lp2_floor", p=2, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=0)
    c.output("lp2_floor", F32, [1, 2, 2, 2])
    c.node("LpPool", [x], "lp2_ceil", p=2, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    c.output("lp2_ceil", F32, [1, 2, 3, 3])
    c.node("LpPool", [x], "lp3_dilated", p=3, kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1])
    c.output("lp3_dilated", F32, [1, 2, 6, 6])
    return c


def affinegrid_20():
    c = Case("affinegrid_20", 20)
    c.what = "AffineGrid-20, 2-D: theta [2,2,3], size [2,3,4,5] (int64 initializer), align_corners 0 and 1"
    c.tests = "AffineGrid is new at 20: grid [N,H,W,2] from theta; align_corners changes the base coordinates"
    t = c.input("theta", F32, [2, 2, 3], "identity affine plus standard normal times 0.3",
                lambda rng, k, shape: np.array([[1, 0, 0], [0, 1, 0]]) + 0.3 * rng.standard_normal(shape))
    size = c.init("size", [2, 3, 4, 5], I64)
    c.node("AffineGrid", [t, size], "grid_ac0", align_corners=0)
    c.node("AffineGrid", [t, size], "grid_ac1", align_corners=1)
    c.output("grid_ac0", F32, [2, 4, 5, 2])
    c.output("grid_ac1", F32, [2, 4, 5, 2])
    return c


def deformconv_19():
    c = Case("deformconv_19", 19)
    c.what = "DeformConv-19 [1,2,5,5] 3x3 pads 1 -> 3 channels: with bias and mask, and with offsets only"
    c.tests = "DeformConv is new at 19: bilinear sampling at fractional offsets, zeros outside, optional B and mask"
    x = c.input("x", F32, [1, 2, 5, 5], "standard normal", normal())
    off = c.input("offset", F32, [1, 18, 5, 5], "uniform [-1.5, 1.5] (fractional, some samples land outside)",
                  uniform(-1.5, 1.5))
    mask = c.input("mask", F32, [1, 9, 5, 5], "uniform [0, 1]", uniform(0, 1))
    w = c.weight("W", [3, 2, 3, 3], math.sqrt(2 / 18))
    b = c.weight("B", [3], 0.1)
    c.node("DeformConv", [x, w, off, b, mask], "y_bias_mask", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    c.node("DeformConv", [x, w, off], "y_offsets_only", pads=[1, 1, 1, 1])
    c.output("y_bias_mask", F32, [1, 3, 5, 5])
    c.output("y_offsets_only", F32, [1, 3, 5, 5])
    return c


def rmsnorm_23():
    c = Case("rmsnorm_23", 23)
    c.what = "RMSNormalization-23 on [2,5,16]: axis -1 with scale [16]; axis 1 with scale [5,16]"
    c.tests = "RMSNormalization is new at 23: x / sqrt(mean(x^2 over axes >= axis) + eps) * scale"
    x = c.input("x", F32, [2, 5, 16], "standard normal times 2 plus 0.5", normal(2.0, 0.5))
    c.node("RMSNormalization", [x, c.weight("scale_last", [16], 0.5, 1.0)], "rms_last", epsilon=1e-5)
    c.node("RMSNormalization", [x, c.weight("scale_axis1", [5, 16], 0.5, 1.0)], "rms_axis1", axis=1)
    c.output("rms_last", F32, [2, 5, 16])
    c.output("rms_axis1", F32, [2, 5, 16])
    return c


def rope_cache(positions, dim_half, base=10000.0):
    inv = base ** (-np.arange(dim_half) * 2.0 / (2 * dim_half))
    ang = np.asarray(positions, dtype=np.float64)[..., None] * inv
    return np.cos(ang), np.sin(ang)


def rotary_23():
    c = Case("rotary_23", 23)
    c.what = ("RotaryEmbedding-23 on 4-D X [1,2,5,8] with cos/sin cache inputs [16,4] and position_ids [1,5]: "
              "halves and interleaved; partial rotary_embedding_dim 4 (cache [16,2]); 3-D caches without position_ids")
    c.tests = "RotaryEmbedding is new at 23: cache gathered by position_ids, halves vs interleaved pairs, partial rotation"
    x = c.input("X", F32, [1, 2, 5, 8], "standard normal", normal())
    cos16, sin16 = rope_cache(np.arange(16), 4)
    cos_h, sin_h = rope_cache(np.arange(16), 2)
    cos_b, sin_b = rope_cache(np.arange(2, 7)[None, :], 4)
    cc = c.input("cos_cache", F32, [16, 4], "cos(pos * 10000^(-2i/8)), pos 0..15", fixed(cos16))
    sc = c.input("sin_cache", F32, [16, 4], "sin(pos * 10000^(-2i/8)), pos 0..15", fixed(sin16))
    pos = c.input("position_ids", I64, [1, 5], "positions 3..7", fixed([[3, 4, 5, 6, 7]]))
    ch = c.input("cos_cache_partial", F32, [16, 2], "cos(pos * 10000^(-2i/4)), pos 0..15", fixed(cos_h))
    sh = c.input("sin_cache_partial", F32, [16, 2], "sin(pos * 10000^(-2i/4)), pos 0..15", fixed(sin_h))
    cb = c.input("cos_batch", F32, [1, 5, 4], "cos for positions 2..6 (no position_ids)", fixed(cos_b))
    sb = c.input("sin_batch", F32, [1, 5, 4], "sin for positions 2..6 (no position_ids)", fixed(sin_b))
    c.node("RotaryEmbedding", [x, cc, sc, pos], "rope")
    c.node("RotaryEmbedding", [x, cc, sc, pos], "rope_interleaved", interleaved=1)
    c.node("RotaryEmbedding", [x, ch, sh, pos], "rope_partial", rotary_embedding_dim=4)
    c.node("RotaryEmbedding", [x, cb, sb], "rope_no_position_ids")
    for n in ["rope", "rope_interleaved", "rope_partial", "rope_no_position_ids"]:
        c.output(n, F32, [1, 2, 5, 8])
    return c


def attention_23():
    c = Case("attention_23", 23)
    c.what = ("Attention-23 with 4-D Q, K, V [1,2,4,8]: no mask; float additive attn_mask [4,4] with scale 0.5; "
              "bool attn_mask [1,1,4,4]; is_causal 1")
    c.tests = ("Attention is new at 23: default scale 1/sqrt(head_size), float mask added, bool mask True = attend, "
               "is_causal lower-triangular")
    q = c.input("Q", F32, [1, 2, 4, 8], "standard normal", normal())
    k = c.input("K", F32, [1, 2, 4, 8], "standard normal", normal())
    v = c.input("V", F32, [1, 2, 4, 8], "standard normal", normal())
    fm = c.input("float_mask", F32, [4, 4], "standard normal, with -10000 at (0,3), (1,0), (2,2)",
                 lambda rng, k_, shape: np.where(np.isin(np.arange(16).reshape(4, 4), [3, 4, 10]), -10000.0,
                                                rng.standard_normal(shape)))
    bm = c.input("bool_mask", BOOL, [1, 1, 4, 4], "fixed: every row attends to at least one key",
                 fixed([[[[True, False, True, True], [False, True, False, False],
                          [True, True, True, False], [False, False, True, True]]]]))
    c.node("Attention", [q, k, v], "y")
    c.node("Attention", [q, k, v, fm], "y_float_mask", scale=0.5)
    c.node("Attention", [q, k, v, bm], "y_bool_mask")
    c.node("Attention", [q, k, v], "y_causal", is_causal=1)
    for n in ["y", "y_float_mask", "y_bool_mask", "y_causal"]:
        c.output(n, F32, [1, 2, 4, 8])
    return c


def attention_kv_23():
    c = Case("attention_kv_23", 23)
    c.what = ("Attention-23 decoding step with a key/value cache: 3-D Q [1,2,16] (4 query heads), K, V [1,2,8] "
              "(2 kv heads, grouped), past_key/past_value [1,2,3,4]; with present outputs; causal; float mask "
              "[1,1,2,5] over past and current keys; softcap 2")
    c.tests = ("Attention-23's key/value cache: the keys are past_key then K, present_key/present_value return them, "
               "a causal query sees the cache and the current keys up to its own position; softcap before the mask")
    q = c.input("Q", F32, [1, 2, 16], "standard normal", normal())
    k = c.input("K", F32, [1, 2, 8], "standard normal", normal())
    v = c.input("V", F32, [1, 2, 8], "standard normal", normal())
    pk = c.input("past_key", F32, [1, 2, 3, 4], "standard normal", normal())
    pv = c.input("past_value", F32, [1, 2, 3, 4], "standard normal", normal())
    fm = c.input("float_mask", F32, [1, 1, 2, 5], "standard normal, with -10000 at key 1 of query 0",
                 lambda rng, k_, shape: np.where(np.arange(10).reshape(1, 1, 2, 5) == 1, -10000.0,
                                                rng.standard_normal(shape)))
    heads = dict(q_num_heads=4, kv_num_heads=2)
    c.node("Attention", [q, k, v, "", pk, pv], ["y_cache", "present_key", "present_value"], **heads)
    # ONNX Runtime asks for the present outputs wherever a cache is given.
    c.node("Attention", [q, k, v, "", pk, pv], ["y_cache_causal", "present_key_causal", "present_value_causal"],
           is_causal=1, **heads)
    c.node("Attention", [q, k, v, fm, pk, pv], ["y_cache_mask_softcap", "present_key_softcap", "present_value_softcap"],
           softcap=2.0, **heads)
    for n in ["y_cache", "y_cache_causal", "y_cache_mask_softcap"]:
        c.output(n, F32, [1, 2, 16])
    c.output("present_key", F32, [1, 2, 5, 4])
    c.output("present_value", F32, [1, 2, 5, 4])
    return c


# ----------------------------------------------------------------------------------------------
# types-only versions, and blocks as exporters write them

def cnn_block_22():
    c = Case("cnn_block_22", 22)
    c.what = ("opset 22 CNN: Conv(bias) -> InstanceNormalization -> Elu -> MaxPool -> Conv -> HardSwish -> AveragePool -> "
              "Selu -> GlobalAveragePool -> Flatten -> Gemm; side outputs HardSigmoid, Softplus, Softsign, Round, "
              "ThresholdedRelu, Sin, Cos; LSTM and GRU (seq 3, batch 1, input 4, hidden 5)")
    c.tests = ("the opset-22 bumps only add bfloat16 to the type lists (Conv, InstanceNormalization, Elu, MaxPool, "
               "HardSwish, AveragePool, Selu, GlobalAveragePool, HardSigmoid, Softplus, Softsign, Round, "
               "ThresholdedRelu, Sin, Cos, LSTM, GRU): same semantics as before")
    x = c.input("x", F32, [1, 3, 12, 12], "standard normal", normal())
    h = c.node("Conv", [x, c.weight("conv1.weight", [8, 3, 3, 3], math.sqrt(2 / 27)), c.weight("conv1.bias", [8], 0.1)],
               "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = c.node("InstanceNormalization", [h, c.weight("in.scale", [8], 0.2, 1.0), c.weight("in.bias", [8], 0.2)],
               "instnorm", epsilon=1e-5)
    h = c.node("Elu", [h], "elu", alpha=1.0)
    h = c.node("MaxPool", [h], "maxpool", kernel_shape=[2, 2], strides=[2, 2])               # [1,8,6,6]
    h = c.node("Conv", [h, c.weight("conv2.weight", [8, 8, 3, 3], 1.5 * math.sqrt(2 / 72))], "conv2",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = c.node("HardSwish", [h], "hardswish")
    h = c.node("AveragePool", [h], "avgpool", kernel_shape=[2, 2], strides=[2, 2])           # [1,8,3,3]
    h = c.node("Selu", [h], "selu")
    h = c.node("GlobalAveragePool", [h], "gap")                                              # [1,8,1,1]
    h = c.node("Flatten", [h], "flatten", axis=1)                                           # [1,8]
    c.node("Gemm", [h, c.weight("fc.weight", [4, 8], math.sqrt(1 / 8)), c.weight("fc.bias", [4], 0.1)], "logits",
           transB=1)
    c.output("logits", F32, [1, 4])
    s = c.input("s", F32, [2, 12], "spread over [-5, 5], with exact halves -2.5, -0.5, 0.5, 1.5, 2.5 for Round",
                lambda rng, k, shape: np.concatenate([spread(-5, 5)(rng, k, [19]),
                                                      [-2.5, -0.5, 0.5, 1.5, 2.5]]).reshape(shape))
    for op, attrs in [("HardSigmoid", {}), ("Softplus", {}), ("Softsign", {}), ("Round", {}),
                      ("ThresholdedRelu", {"alpha": 1.0}), ("Sin", {}), ("Cos", {})]:
        n = op.lower()
        c.node(op, [s], n, **attrs)
        c.output(n, F32, [2, 12])
    seq = c.input("seq", F32, [3, 1, 4], "standard normal", normal())
    hid = 5
    c.node("LSTM", [seq, c.weight("lstm.W", [1, 4 * hid, 4], 0.5), c.weight("lstm.R", [1, 4 * hid, hid], 0.5),
                    c.weight("lstm.B", [1, 8 * hid], 0.1)], ["lstm_y", "lstm_h", "lstm_c"], hidden_size=hid)
    c.output("lstm_y", F32, [3, 1, 1, hid])
    c.output("lstm_h", F32, [1, 1, hid])
    c.output("lstm_c", F32, [1, 1, hid])
    c.node("GRU", [seq, c.weight("gru.W", [1, 3 * hid, 4], 0.5), c.weight("gru.R", [1, 3 * hid, hid], 0.5),
                   c.weight("gru.B", [1, 6 * hid], 0.1)], ["gru_y", "gru_h"], hidden_size=hid, linear_before_reset=1)
    c.output("gru_y", F32, [3, 1, 1, hid])
    c.output("gru_h", F32, [1, 1, hid])
    return c


def shape_ops_23():
    c = Case("shape_ops_23", 23)
    c.what = ("opset 23 (IR 11) shape ops: Reshape, Transpose, Unsqueeze, Squeeze (axes input and none), Flatten, "
              "Shape, Size, ConstantOfShape, Cast, Identity, Pad (constant)")
    c.tests = ("the opset-23 bumps only add 4-bit and float types (Reshape, Squeeze, Unsqueeze, Flatten, Transpose, "
               "Shape, Size, ConstantOfShape, Cast, Identity, Pad): same semantics; IR version 11 accepted")
    x = c.input("x", F32, [2, 3, 4], "standard normal times 3", normal(3.0))
    h = c.node("Reshape", [x, c.init("shape.6_4", [6, 4], I64)], "reshape")                  # [6,4]
    h = c.node("Transpose", [h], "transpose", perm=[1, 0])                                    # [4,6]
    h = c.node("Unsqueeze", [h, c.init("unsqueeze.axes", [0, -1], I64)], "unsqueeze")         # [1,4,6,1]
    sq = c.node("Squeeze", [h, c.init("squeeze.axes", [0], I64)], "squeeze")                  # [4,6,1]
    c.node("Flatten", [sq], "flatten", axis=2)                                               # [24,1]
    c.output("flatten", F32, [24, 1])
    c.node("Squeeze", [h], "squeeze_all")                                                    # [4,6]
    c.output("squeeze_all", F32, [4, 6])
    c.node("Shape", [x], "shape")
    c.output("shape", I64, [3])
    c.node("Size", [x], "size")
    c.output("size", I64, [])
    c.node("ConstantOfShape", ["shape"], "half", value=tensor("value", [0.5], F32))
    c.node("Add", [x, "half"], "x_plus_half")
    c.output("x_plus_half", F32, [2, 3, 4])
    c.node("Cast", [x], "cast_int32", to=TensorProto.INT32)
    c.output("cast_int32", I32, [2, 3, 4])
    c.node("Identity", [x], "identity")
    c.output("identity", F32, [2, 3, 4])
    c.node("Pad", [x, c.init("pads", [0, 1, 0, 0, 0, 2], I64), c.init("pad_value", 0.25, F32)], "pad",
           mode="constant")
    c.output("pad", F32, [2, 4, 6])
    return c


def transformer_block(opset):
    c = Case(f"transformer_block_{opset}", opset, seed_name="transformer_block")
    gelu = "decomposed GELU (Div by sqrt 2 -> Erf -> Add 1 -> Mul x -> Mul 0.5)" if opset < 20 else "the Gelu op"
    c.what = (f"one pre-norm encoder block as torch's dynamo exporter lays it out, opset {opset}: d_model 16, 2 heads, "
              f"seq 5, batch 1; LayerNormalization; fused QKV MatMul+Add -> Split num_outputs=3; Reshape/Transpose "
              f"heads; MatMul, Div by sqrt(8), Softmax, MatMul; Transpose/Reshape back; output projection; Add "
              f"residual; RMS-style norm (Pow, ReduceMean with axes input [-1], Add eps, Sqrt, Div, Mul); MLP 16->64->16 "
              f"with {gelu}; Add residual")
    c.tests = (f"a whole block mixing ops from before 18 (LayerNormalization-17, MatMul-13, Softmax-13) with Split-18 "
               f"(num_outputs), ReduceMean-18 (axes input)" + (" and Gelu-20" if opset >= 20 else
                                                               " and the Erf-based GELU"))
    d, heads, hd, seq, ff = 16, 2, 8, 5, 64
    x = c.input("x", F32, [1, seq, d], "standard normal", normal())
    ln = c.node("LayerNormalization", [x, c.weight("ln1.weight", [d], 0.1, 1.0), c.weight("ln1.bias", [d], 0.1)],
                "layer_norm", axis=-1, epsilon=1e-5)
    qkv = c.node("MatMul", [ln, c.weight("attn.qkv.weight_t", [d, 3 * d], math.sqrt(1 / d))], "matmul_qkv")
    qkv = c.node("Add", [qkv, c.weight("attn.qkv.bias", [3 * d], 0.1)], "add_qkv")
    q, k, v = c.node("Split", [qkv], ["q", "k", "v"], axis=-1, num_outputs=3)
    heads_shape = c.init("val_heads_shape", [1, seq, heads, hd], I64)
    qh = c.node("Transpose", [c.node("Reshape", [q, heads_shape], "view_q")], "transpose_q", perm=[0, 2, 1, 3])
    kh = c.node("Transpose", [c.node("Reshape", [k, heads_shape], "view_k")], "transpose_k", perm=[0, 2, 3, 1])
    vh = c.node("Transpose", [c.node("Reshape", [v, heads_shape], "view_v")], "transpose_v", perm=[0, 2, 1, 3])
    s = c.node("MatMul", [qh, kh], "matmul_scores")                                           # [1,2,5,5]
    s = c.node("Div", [s, c.init("val_sqrt_head_dim", math.sqrt(hd), F32)], "div_scores")     # scalar []
    p = c.node("Softmax", [s], "softmax", axis=-1)
    o = c.node("MatMul", [p, vh], "matmul_context")                                           # [1,2,5,8]
    o = c.node("Transpose", [o], "transpose_context", perm=[0, 2, 1, 3])
    o = c.node("Reshape", [o, c.init("val_model_shape", [1, seq, d], I64)], "view_context")
    o = c.node("MatMul", [o, c.weight("attn.out.weight_t", [d, d], math.sqrt(1 / d))], "matmul_out")
    o = c.node("Add", [o, c.weight("attn.out.bias", [d], 0.1)], "add_out")
    h = c.node("Add", [x, o], "add_residual1")
    # RMS-style norm: x / sqrt(mean(x^2) + eps) * weight
    sq = c.node("Pow", [h, c.constant("val_two", 2.0, F32)], "pow")
    ms = c.node("ReduceMean", [sq, c.constant("val_axes_last", [-1], I64)], "reduce_mean", keepdims=1)
    ms = c.node("Add", [ms, c.init("val_eps", 1e-6, F32)], "add_eps")
    rt = c.node("Sqrt", [ms], "sqrt")
    n = c.node("Div", [h, rt], "div_rms")
    n = c.node("Mul", [n, c.weight("rms.weight", [d], 0.1, 1.0)], "mul_rms_weight")
    m = c.node("MatMul", [n, c.weight("mlp.fc1.weight_t", [d, ff], math.sqrt(2 / d))], "matmul_fc1")
    m = c.node("Add", [m, c.weight("mlp.fc1.bias", [ff], 0.1)], "add_fc1")
    if opset >= 20:
        g = c.node("Gelu", [m], "gelu")
    else:
        t = c.node("Div", [m, c.init("val_sqrt2", math.sqrt(2.0), F32)], "div_sqrt2")
        t = c.node("Erf", [t], "erf")
        t = c.node("Add", [t, c.init("val_one", 1.0, F32)], "add_one")
        t = c.node("Mul", [m, t], "mul_x")
        g = c.node("Mul", [t, c.init("val_half", 0.5, F32)], "mul_half")
    m = c.node("MatMul", [g, c.weight("mlp.fc2.weight_t", [ff, d], math.sqrt(1 / ff))], "matmul_fc2")
    m = c.node("Add", [m, c.weight("mlp.fc2.bias", [d], 0.1)], "add_fc2")
    c.node("Add", [h, m], "output")
    c.output("output", F32, [1, seq, d])
    return c


def transformer_block_18():
    return transformer_block(18)


def transformer_block_20():
    return transformer_block(20)


def control_flow_21():
    c = Case("control_flow_21", 21, data_sets=2)
    c.what = ("opset 21 If (cond a graph input: data set 0 true, 1 false): then-branch ReduceMean (axes from an outer-scope "
              "initializer) + Split num_outputs=3 + Concat; else-branch Gelu + Pad with axes (branch initializers); "
              "Loop (trip count 3, initializer) whose body does ReduceMax with axes input (body initializer) and Mish "
              "on the carried value, plus a scan output")
    c.tests = ("the adapter must rewrite nodes inside subgraphs too (If branches, Loop body) at the model's opset, "
               "with axes inputs that come from the outer scope or from the subgraph's own initializers")
    cond = c.input("cond", BOOL, [], "data set 0: true, data set 1: false", lambda rng, k, shape: np.array(k == 0))
    x = c.input("x", F32, [2, 4, 6], "standard normal times 2", normal(2.0))
    c.init("axes_last", [-1], I64)

    th = Graph(c, "then_branch")
    r = th.node("ReduceMean", [x, "axes_last"], "then_mean", keepdims=1)                     # [2,4,1]
    d = th.node("Sub", [x, r], "then_centered")
    s0, s1, s2 = th.node("Split", [d], ["then_s0", "then_s1", "then_s2"], axis=2, num_outputs=3)
    th.node("Concat", [s2, s1, s0, s2], "then_out", axis=2)                                  # [2,4,8]
    th.output("then_out", F32, [2, 4, 8])

    el = Graph(c, "else_branch")
    g = el.node("Gelu", [x], "else_gelu")
    el.node("Pad", [g, el.init("else_pads", [1, 1], I64), "", el.init("else_axes", [2], I64)], "else_out",
            mode="edge")                                                                     # [2,4,8]
    el.output("else_out", F32, [2, 4, 8])

    c.node("If", [cond], "if_out", then_branch=th.graph(), else_branch=el.graph())
    c.output("if_out", F32, [2, 4, 8])

    body = Graph(c, "loop_body")
    body.inputs = [vinfo("iter", I64, []), vinfo("cond_in", BOOL, []), vinfo("v_in", F32, [2, 4, 6])]
    for n in ["iter", "cond_in", "v_in"]:
        c.unique(n)
    mx = body.node("ReduceMax", ["v_in", body.init("body_axes", [-1], I64)], "body_max", keepdims=1)   # [2,4,1]
    t = body.node("Mish", [body.node("Sub", ["v_in", mx], "body_sub")], "body_mish")
    t = body.node("Add", [t, body.node("Mul", ["v_in", body.init("body_half", 0.5, F32)], "body_half_v")], "v_out")
    body.node("Identity", ["cond_in"], "cond_out")
    body.node("Identity", [mx], "scan_max")
    body.output("cond_out", BOOL, [])
    body.output("v_out", F32, [2, 4, 6])
    body.output("scan_max", F32, [2, 4, 1])
    c.node("Loop", [c.init("trip_count", 3, I64), c.init("loop_cond", True, BOOL), x], ["loop_v", "loop_max"],
           body=body.graph())
    c.output("loop_v", F32, [2, 4, 6])
    c.output("loop_max", F32, [3, 2, 4, 1])
    return c


CASES = [reduce_axes_18, reduce_axes_forms_18, reduce_20, split_num_outputs_18, pad_axes_18, pad_wrap_19,
         resize_18, resize_antialias_18, resize_19, averagepool_19, scatter_18, cast_19, cast_21, dft_20,
         gridsample_20, qdq_19, qdq_21, gelu_20, mish_18, bitwise_18, groupnorm_18, groupnorm_21, col2im_18,
         centercroppad_18, lppool_18, affinegrid_20, deformconv_19, rmsnorm_23, rotary_23, attention_23, attention_kv_23,
         cnn_block_22, shape_ops_23, transformer_block_18, transformer_block_20, control_flow_21]

# Cases ONNX Runtime 1.30 refuses (see README.md, "ONNX Runtime 1.30 does not run"): not written.
DROPPED = {}


# ----------------------------------------------------------------------------------------------

def dtype_name(dtype):
    return np.dtype(dtype).name


def weight_bytes(graph):
    total = sum(len(t.SerializeToString()) for t in graph.initializer)
    for n in graph.node:
        for a in n.attribute:
            if a.type == a.GRAPH:
                total += weight_bytes(a.g)
    return total


def build(make):
    c = make()
    m = c.model()
    data = m.SerializeToString()
    wbytes = weight_bytes(m.graph)
    assert wbytes < MAX_WEIGHT_BYTES, (c.name, wbytes)
    write_bytes(f"{c.name}/model.onnx", data)
    ops = ops_of(m.graph, c.opset, Counter())
    summary.append((c.name, c.opset, c.ir, len(data), ops, c))

    data_sets = []
    for k in range(c.data_sets):
        seed = seed_of(f"{c.seed_name}/{k}")
        rng = np.random.default_rng(seed)
        ds = {"index": k, "seed": seed, "inputs": {}, "recipe": {}}
        digest = hashlib.sha256()
        for n, (name, dtype, shape, recipe, gen) in enumerate(c.input_specs):
            arr = np.asarray(gen(rng, k, shape)).astype(dtype).reshape(shape)
            pb = numpy_helper.from_array(np.ascontiguousarray(arr), name=name).SerializeToString()
            digest.update(pb)
            write_bytes(f"{c.name}/test_data_set_{k}/input_{n}.pb", pb)
            ds["inputs"][name] = [dtype_name(dtype), shape]
            ds["recipe"][name] = recipe
        ds["inputs_sha256"] = digest.hexdigest()
        data_sets.append(ds)

    outputs = {}
    for o in m.graph.output:
        t = o.type.tensor_type
        outputs[o.name] = [dtype_name(mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]), [d.dim_value for d in t.shape.dim]]
    doc = {
        "source": f"synthetic: models/opsets/make_opset_models.py, case '{c.name}' (written for memplan; no third-party weights or code)",
        "what": c.what,
        "tests": c.tests,
        "opset": c.opset,
        "ir_version": c.ir,
        "ops": dict(sorted(ops.items())),
        "outputs_declared": outputs,
        "model_bytes": len(data),
        "weight_bytes": wbytes,
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "weights_generated_by": f"numpy.random.default_rng({c.weight_seed}) (seed = crc32('{c.seed_name}/weights') & 0x7fffffff) "
                                "for random weights; other initializers are literal values in make_opset_models.py",
        "expected_outputs_from": EXPECTED_FROM,
        "suggested_tolerance": dict(TOLERANCE),
        "inputs_generated_by": f"numpy.random.default_rng(seed) per data set (seed = crc32('{c.seed_name}/<index>') & 0x7fffffff), recipe per input below",
        "data_sets": data_sets,
    }
    if c.constant_outputs:
        doc["constant_outputs"] = c.constant_outputs
    if c.notes:
        doc["notes"] = c.notes
    write_source_json(f"{c.name}/SOURCE.json", doc)


def main():
    for make in CASES:
        if make.__name__ in DROPPED:
            continue
        build(make)
    if "--table" in sys.argv[1:]:
        print("| folder | opset / IR | ops and versions exercised | what rule of the adapter it tests |")
        print("|---|---|---|---|")
        for name, opset, ir, size, ops, c in summary:
            print(f"| `{name}` | {opset} / {ir} | " + ", ".join(f"{op} x{n}" if n > 1 else op
                                                             for op, n in sorted(ops.items())) + f" | {c.tests} |")
        return
    for name, opset, ir, size, ops, c in summary:
        print(f"{name:22s} opset {opset} IR {ir:2d} {size:7d} bytes  " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
    make_models.report_folder(changed, CHECK_ONLY, "opsets")


if __name__ == "__main__":
    main()
