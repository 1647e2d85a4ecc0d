#!/usr/bin/python3
"""Build the converter-pattern test models under models/patterns/.

    /usr/bin/python3 models/patterns/make_patterns.py            # (re)write model.onnx, input_N.pb, SOURCE.json
    /usr/bin/python3 models/patterns/make_patterns.py --check    # exit 1 if any of those would change
    NODE_PATH=/work/main/build/bench/node_modules node models/expected_with_ort.js models/patterns
                                                                 # then: output_N.pb from ONNX Runtime

Each pattern is a few layers in the exact node layout one ONNX converter writes (Paddle2ONNX,
tf2onnx, a BlazeFace export, PyTorch's ShuffleNet export), with random weights: see README.md.
Needs only Debian's python3-onnx (1.12) and python3-numpy (1.24). ai.onnx opset 13, IR version 7.
Deterministic (fixed seeds) and idempotent: a file is rewritten only when its bytes change
(SOURCE.json: when its content changes; the keys expected_with_ort.js adds are kept while the
model and its inputs stay the same).

Layout, as in ONNX's backend tests and models/real/:

    <name>/model.onnx
    <name>/test_data_set_0/input_N.pb     onnx.TensorProto, name = graph input N (written here)
    <name>/test_data_set_0/output_N.pb    onnx.TensorProto, name = graph output N (expected_with_ort.js)
    <name>/SOURCE.json                    where it comes from, seeds, tolerance, output statistics
"""

import hashlib
import json
import os
import sys
import zlib
from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import make_models  # noqa: E402  (models/make_models.py: its file writer)
OPSET = 13
IR_VERSION = 7
MAX_MODEL_BYTES = 1 << 20

CHECK_ONLY = "--check" in sys.argv[1:]
changed = []      # paths (relative to HERE) whose content differs from what is on disk
summary = []      # (name, model bytes, op counts)

EXPECTED_FROM = ("onnxruntime-node 1.30.0 CPU EP, graphOptimizationLevel=disabled, intraOpNumThreads=1 "
                 "(NOT from a converter or model author: written by expected_with_ort.js)")
TOLERANCE = {"rtol": 0.001, "atol": 0.0001}
# Keys of SOURCE.json that expected_with_ort.js fills in; kept while the model and inputs are unchanged.
ORT_KEYS = ("expected_outputs_from", "tolerance_evidence", "tolerance_rationale")


def seed_of(text):
    """The models/real convention: crc32('<case>/<index>') & 0x7fffffff."""
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


# ----------------------------------------------------------------------------------------------
# file writing (idempotent)

write_bytes, write_folder_source_json = make_models.folder_writers(HERE, CHECK_ONLY, changed)


def write_source_json(rel, doc):
    write_folder_source_json(rel, doc, ORT_KEYS)


def tensor_pb(name, array):
    t = numpy_helper.from_array(np.ascontiguousarray(array), name=name)
    return t.SerializeToString()


# ----------------------------------------------------------------------------------------------
# graph builder

class Graph:
    """Collects nodes and initializers; every weight comes from one seeded generator per model."""

    def __init__(self, case):
        self.case = case
        self.weight_seed = seed_of(case + "/weights")
        self.rng = np.random.default_rng(self.weight_seed)
        self.nodes = []
        self.inits = []
        self.names = set()
        self.inputs = []
        self.outputs = []

    def _unique(self, name):
        assert name not in self.names, name
        self.names.add(name)
        return name

    def const(self, name, value, dtype=np.float32):
        arr = np.array(value, dtype=dtype)
        self.inits.append(numpy_helper.from_array(arr, name=self._unique(name)))
        return name

    def node(self, op, inputs, output, **attrs):
        """One node named after its (single) output."""
        self.nodes.append(helper.make_node(op, inputs, [self._unique(output)], name=output, **attrs))
        return output

    def conv(self, x, name, cin, cout, k, stride=1, pads=None, group=1, gain=1.0):
        """Conv with bias. Weights He-normal (std sqrt(2 / fan_in)) times gain; bias N(0, 0.1)."""
        fan_in = (cin // group) * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * (gain * np.sqrt(2.0 / fan_in))
        b = self.rng.standard_normal(cout) * 0.1
        if pads is None:
            pads = [k // 2] * 4
        self.const(name + ".weight", w)
        self.const(name + ".bias", b)
        return self.node("Conv", [x, name + ".weight", name + ".bias"], name,
                         kernel_shape=[k, k], strides=[stride, stride], pads=list(pads),
                         dilations=[1, 1], group=group)

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(self._unique(name), TensorProto.FLOAT, shape))
        return name

    def output(self, value, shape):
        self.outputs.append(helper.make_tensor_value_info(value, TensorProto.FLOAT, shape))

    def model(self, doc):
        g = helper.make_graph(self.nodes, self.case, self.inputs, self.outputs, self.inits, doc_string=doc)
        m = helper.make_model(g, producer_name="memplan models/patterns/make_patterns.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = IR_VERSION
        onnx.checker.check_model(m, full_check=True)
        return m


# ----------------------------------------------------------------------------------------------
# 1. paddle_hardswish

def paddle_hardswish_form(g, x, tag, offset, lo, hi, scale):
    """Paddle2ONNX's hard_swish below opset 14 (HardSwishMapper::Opset7):
    Add(x, offset) -> Clip(., 0, threshold) -> Mul(x, .) -> Div(., scale)."""
    a = g.node("Add", [x, offset], tag + ".add")
    c = g.node("Clip", [a, lo, hi], tag + ".clip")
    m = g.node("Mul", [x, c], tag + ".mul")
    return g.node("Div", [m, scale], tag + ".div")


def paddle_hardswish():
    g = Graph("paddle_hardswish")
    x = g.input("x", [1, 3, 64, 96])
    # Constants as Paddle2ONNX writes them (helper_->Constant({}, ...): shape []), plus the [1] and
    # [1,1,1,1] forms other exporters and constant folders leave behind.
    three0 = g.const("const.three", 3.0)                          # []
    zero0 = g.const("const.clip_min", 0.0)                        # [] (Clip's min/max must be scalars)
    six0 = g.const("const.clip_max", 6.0)                         # []
    six_div0 = g.const("const.six", 6.0)                          # []
    three1 = g.const("const.three_1", [3.0])                      # [1]
    six4 = g.const("const.six_1111", np.full((1, 1, 1, 1), 6.0))  # [1,1,1,1]

    c1 = g.conv(x, "conv1", 3, 16, 3, stride=2, gain=2.0)                   # [1,16,32,48]
    h1 = paddle_hardswish_form(g, c1, "hswish1", three0, zero0, six0, six_div0)
    d1 = g.conv(h1, "dwconv2", 16, 16, 3, group=16, gain=1.5)               # depthwise
    h2 = paddle_hardswish_form(g, d1, "hswish2", three1, zero0, six0, six4)
    c3 = g.conv(h2, "conv3", 16, 24, 1, gain=2.0)                           # [1,24,32,48]
    # x * HardSigmoid(x) with Paddle's hard_sigmoid defaults (slope 0.1666667, offset 0.5)
    hs = g.node("HardSigmoid", [c3], "hsigmoid3", alpha=0.1666667, beta=0.5)
    h3 = g.node("Mul", [c3, hs], "hsigmoid3.mul")
    # Paddle's scale op (scale * x + bias): Mul by a [1] constant, Add a [] constant
    s = g.node("Mul", [h3, g.const("scale4.scale", [0.75])], "scale4.mul")
    s = g.node("Add", [s, g.const("scale4.bias", 0.1)], "scale4.add")
    y = g.conv(s, "conv5", 24, 32, 1)                                       # [1,32,32,48]
    g.output(y, [1, 32, 32, 48])
    return g, {
        "what": "Paddle2ONNX hard-swish layouts around convolutions (PP-LCNet / MobileNetV3 style), opset 13",
        "layers": [
            "x [1,3,64,96] -> Conv 3x3 s2 3->16",
            "hard_swish as Paddle2ONNX writes it below opset 14: Add(x, 3.0 []) -> Clip(0 [], 6 []) -> Mul(x, .) -> Div(., 6.0 [])",
            "depthwise Conv 3x3 (group 16) -> the same hard_swish with Add(x, 3.0 [1]) and Div(., 6.0 [1,1,1,1])",
            "Conv 1x1 16->24 -> x * HardSigmoid(x) (alpha 0.1666667, beta 0.5: Paddle's hard_sigmoid defaults; torch.onnx below opset 14 writes hardswish the same way with alpha 1/6)",
            "Paddle scale op: Mul(., 0.75 [1]) -> Add(., 0.1 [])",
            "Conv 1x1 24->32 -> y [1,32,32,48]",
        ],
        "converter": "Paddle2ONNX (paddle2onnx/mapper/activation/hard_swish.cc, HardSwishMapper::Opset7; hard_sigmoid.cc)",
    }, [("x", "standard normal (rng.standard_normal), roughly a normalized image")]


# ----------------------------------------------------------------------------------------------
# 2. tf_max_leakyrelu

def tf_max_leakyrelu():
    g = Graph("tf_max_leakyrelu")
    x = g.input("input", [1, 16, 48, 64])
    a = g.conv(x, "conv_a", 16, 24, 3, gain=1.5)                            # [1,24,48,64]
    a = g.node("LeakyRelu", [a], "conv_a.leakyrelu", alpha=0.2)
    a = g.node("Max", [a, g.const("conv_a.floor", np.full((1, 1, 1, 1), -0.5))], "conv_a.max")
    # TF 'SAME' with stride 2 on an even size: tf2onnx writes the asymmetric pads (0,0,1,1)
    b = g.conv(a, "conv_b", 24, 32, 3, stride=2, pads=[0, 0, 1, 1], gain=1.5)  # [1,32,24,32]
    b = g.node("Clip", [b, g.const("relu6.min", 0.0), g.const("relu6.max", 6.0)], "conv_b.relu6")
    c = g.node("Add", [b, g.const("affine.bias", 0.25)], "affine.add")
    c = g.node("Mul", [c, g.const("affine.scale", g.rng.uniform(0.5, 1.5, (1, 32, 1, 1)))], "affine.mul")
    d = g.conv(c, "conv_c", 32, 48, 1)                                      # [1,48,24,32]
    d = g.node("Sub", [d, g.const("norm.mean", [0.3])], "norm.sub")
    d = g.node("Div", [d, g.const("norm.std", g.rng.uniform(0.5, 2.0, (1, 48, 1, 1)))], "norm.div")
    y = g.node("Max", [d, g.const("relu.zero", 0.0)], "output")
    g.output(y, [1, 48, 24, 32])
    return g, {
        "what": "tf2onnx-style elementwise tails: LeakyRelu clamped by Max, Relu6 as Clip, scalar and per-channel Add/Mul/Sub/Div, Relu as Max(x, 0), opset 13",
        "layers": [
            "input [1,16,48,64] -> Conv 3x3 16->24 -> LeakyRelu(alpha 0.2) -> Max(., -0.5 [1,1,1,1])",
            "Conv 3x3 s2 24->32, pads (0,0,1,1) (TF SAME, stride 2) -> Relu6 as Clip(0 [], 6 [])",
            "Add(., 0.25 []) -> Mul(., per-channel [1,32,1,1])",
            "Conv 1x1 32->48 -> Sub(., 0.3 [1]) -> Div(., per-channel [1,48,1,1] in [0.5, 2]) -> Max(., 0.0 []) -> output [1,48,24,32]",
        ],
        "converter": "tf2onnx (TensorFlow/Keras: tf.maximum -> Max, tf.nn.relu6 -> Clip, tf.nn.leaky_relu -> LeakyRelu, broadcast arithmetic kept as Add/Mul/Sub/Div with TF's constant shapes)",
    }, [("input", "standard normal (rng.standard_normal)")]


# ----------------------------------------------------------------------------------------------
# 3. mediapipe_block

def blaze_block(g, x, tag, cin, cout, stride, order="pool_pad", pad_value=True):
    """BlazeFace's BlazeBlock: depthwise 5x5 (stride 1 or 2) -> Conv 1x1 cin->cout, plus a shortcut
    (MaxPool 2x2 s2 when strided; channel zero-padding when cout > cin), Add, Relu."""
    if stride == 1:
        m = g.conv(x, tag + ".dw", cin, cin, 5, group=cin)
    else:  # TF SAME, stride 2, kernel 5 on an even size: pads begin 1, end 2
        m = g.conv(x, tag + ".dw", cin, cin, 5, stride=2, pads=[1, 1, 2, 2], group=cin)
    m = g.conv(m, tag + ".pw", cin, cout, 1, gain=0.7)
    s = x

    def pad(v):
        pads = g.const(tag + ".pads", [0, 0, 0, 0, 0, cout - cin, 0, 0], dtype=np.int64)
        ins = [v, pads] + ([g.const(tag + ".pad_value", 0.0)] if pad_value else [])
        return g.node("Pad", ins, tag + ".pad", mode="constant")

    def pool(v):
        return g.node("MaxPool", [v], tag + ".maxpool", kernel_shape=[2, 2], strides=[2, 2])

    steps = []
    if stride == 2:
        steps.append(pool)
    if cout > cin:
        steps.append(pad)
    if order == "pad_pool":
        steps.reverse()
    for f in steps:
        s = f(s)
    a = g.node("Add", [s, m], tag + ".add")
    return g.node("Relu", [a], tag + ".relu")


def head(g, x, tag, cin, anchors, hw):
    """A BlazeFace classifier head: Conv 1x1 -> NCHW to NHWC -> Reshape [1, H*W*anchors, 1]."""
    c = g.conv(x, tag + ".conv", cin, anchors, 1)
    t = g.node("Transpose", [c], tag + ".nhwc", perm=[0, 2, 3, 1])
    return g.node("Reshape", [t, g.const(tag + ".shape", [1, -1, 1], dtype=np.int64)], tag)


def mediapipe_block():
    g = Graph("mediapipe_block")
    x = g.input("input", [1, 128, 128, 3])                                   # NHWC, as TF
    t = g.node("Transpose", [x], "input.nchw", perm=[0, 3, 1, 2])            # tf2onnx's leading Transpose
    s = g.conv(t, "stem", 3, 24, 5, stride=2, pads=[1, 1, 2, 2])             # [1,24,64,64]
    s = g.node("Relu", [s], "stem.relu")
    b = blaze_block(g, s, "block1", 24, 24, 1)                               # identity shortcut
    b = blaze_block(g, b, "block2", 24, 28, 1)                               # Pad 24->28
    b = blaze_block(g, b, "block3", 28, 32, 2, pad_value=False)              # MaxPool, Pad 28->32: [1,32,32,32]
    b = blaze_block(g, b, "block4", 32, 48, 2, order="pad_pool")             # Pad 32->48, MaxPool: [1,48,16,16]
    c16 = head(g, b, "classificators_16", 48, 2, 16)                         # [1,512,1]
    b = blaze_block(g, b, "block5", 48, 96, 2)                               # MaxPool, Pad 48->96: [1,96,8,8]
    c8 = head(g, b, "classificators_8", 96, 6, 8)                            # [1,384,1]
    g.output(c16, [1, 512, 1])
    g.output(c8, [1, 384, 1])
    return g, {
        "what": "BlazeFace (MediaPipe, exported from TensorFlow by tf2onnx) BlazeBlocks with channel-padding shortcuts, opset 13",
        "layers": [
            "input NHWC [1,128,128,3] -> Transpose perm (0,3,1,2) -> Conv 5x5 s2 3->24 pads (1,1,2,2) -> Relu: [1,24,64,64]",
            "BlazeBlock 24->24 s1: depthwise 5x5 pads 2 -> Conv 1x1; shortcut identity; Add -> Relu",
            "BlazeBlock 24->28 s1: shortcut Pad (constant, pads [0,0,0,0,0,4,0,0] from an int64 initializer, constant_value 0.0 initializer)",
            "BlazeBlock 28->32 s2: depthwise 5x5 s2 pads (1,1,2,2); shortcut MaxPool 2x2 s2 -> Pad +4 channels (no constant_value input): [1,32,32,32]",
            "BlazeBlock 32->48 s2: shortcut Pad +16 channels -> MaxPool 2x2 s2 (the other order): [1,48,16,16]",
            "head: Conv 1x1 48->2 -> Transpose (0,2,3,1) -> Reshape [1,-1,1] -> classificators_16 [1,512,1]",
            "BlazeBlock 48->96 s2: shortcut MaxPool -> Pad +48 channels: [1,96,8,8]",
            "head: Conv 1x1 96->6 -> Transpose (0,2,3,1) -> Reshape [1,-1,1] -> classificators_8 [1,384,1]",
        ],
        "converter": "tf2onnx on MediaPipe BlazeFace (TF: tf.pad on the channel axis, MaxPool2D, SAME padding; compare models/real/blazeface_back_256)",
    }, [("input", "pixels: integers uniform in [0,255] (rng.integers(0,256)); x = pixel / 127.5 - 1, i.e. [-1,1] (MediaPipe's convention)")]


# ----------------------------------------------------------------------------------------------
# 4. channel_shuffle

def shuffle(g, x, tag, groups, c, h, w, minus_one=False):
    """view(1, g, C/g, H, W) -> transpose(1, 2) -> view(1, C, H, W), as torch.onnx writes it."""
    r = g.node("Reshape", [x, g.const(tag + ".shape5", [1, groups, c // groups, h, w], dtype=np.int64)],
               tag + ".reshape5")
    t = g.node("Transpose", [r], tag + ".transpose", perm=[0, 2, 1, 3, 4])
    back = [1, -1, h, w] if minus_one else [1, c, h, w]
    return g.node("Reshape", [t, g.const(tag + ".shape4", back, dtype=np.int64)], tag + ".reshape4")


def v2_basic_unit(g, x, tag, c, h, w, split_input=True):
    """ShuffleNet v2 stride-1 unit: Split channels in two, convs on the second half, Concat, shuffle."""
    half = c // 2
    if split_input:
        parts = [g.const(tag + ".split", [half, half], dtype=np.int64)]
    else:
        parts = []  # equal split, no 'split' input
    outs = [tag + ".split0", tag + ".split1"]
    for o in outs:
        g._unique(o)
    g.nodes.append(helper.make_node("Split", [x] + parts, outs, name=tag + ".split", axis=1))
    b = g.conv(outs[1], tag + ".pw1", half, half, 1)
    b = g.node("Relu", [b], tag + ".pw1.relu")
    b = g.conv(b, tag + ".dw", half, half, 3, group=half)
    b = g.conv(b, tag + ".pw2", half, half, 1)
    b = g.node("Relu", [b], tag + ".pw2.relu")
    cat = g.node("Concat", [outs[0], b], tag + ".concat", axis=1)
    return shuffle(g, cat, tag + ".shuffle", 2, c, h, w, minus_one=True)


def channel_shuffle():
    g = Graph("channel_shuffle")
    x = g.input("x", [1, 24, 48, 64])
    # ShuffleNet v1 unit (g=2): grouped 1x1 -> Relu -> shuffle -> depthwise 3x3 -> grouped 1x1 -> +x -> Relu
    u = g.conv(x, "unit1.gconv1", 24, 48, 1, group=2)
    u = g.node("Relu", [u], "unit1.gconv1.relu")
    u = shuffle(g, u, "unit1.shuffle", 2, 48, 48, 64)
    u = g.conv(u, "unit1.dw", 48, 48, 3, group=48)
    u = g.conv(u, "unit1.gconv2", 48, 24, 1, group=2, gain=0.7)
    u = g.node("Add", [u, x], "unit1.add")
    u = g.node("Relu", [u], "unit1.relu")                                    # [1,24,48,64]
    # ShuffleNet v2 downsampling unit: two stride-2 branches 24->58 each, Concat to 116, shuffle
    b1 = g.conv(u, "unit2.b1.dw", 24, 24, 3, stride=2, group=24)
    b1 = g.conv(b1, "unit2.b1.pw", 24, 58, 1)
    b1 = g.node("Relu", [b1], "unit2.b1.relu")
    b2 = g.conv(u, "unit2.b2.pw1", 24, 58, 1)
    b2 = g.node("Relu", [b2], "unit2.b2.pw1.relu")
    b2 = g.conv(b2, "unit2.b2.dw", 58, 58, 3, stride=2, group=58)
    b2 = g.conv(b2, "unit2.b2.pw2", 58, 58, 1)
    b2 = g.node("Relu", [b2], "unit2.b2.pw2.relu")
    cat = g.node("Concat", [b1, b2], "unit2.concat", axis=1)               # [1,116,24,32]
    v = shuffle(g, cat, "unit2.shuffle", 2, 116, 24, 32)
    v = v2_basic_unit(g, v, "unit3", 116, 24, 32, split_input=True)
    v = v2_basic_unit(g, v, "unit4", 116, 24, 32, split_input=False)
    y = g.conv(v, "conv5", 116, 96, 1)                                       # [1,96,24,32]
    g.output(y, [1, 96, 24, 32])
    return g, {
        "what": "ShuffleNet channel shuffle (Reshape 5-D -> Transpose (0,2,1,3,4) -> Reshape 4-D) in a v1 unit and v2 units with Split/Concat, 116 = 2 x 58 channels, opset 13",
        "layers": [
            "x [1,24,48,64] -> ShuffleNet v1 unit: Conv 1x1 group 2 24->48 -> Relu -> Reshape [1,2,24,48,64] -> Transpose (0,2,1,3,4) -> Reshape [1,48,48,64] -> depthwise 3x3 -> Conv 1x1 group 2 48->24 -> Add x -> Relu",
            "ShuffleNet v2 downsampling unit: branch 1 depthwise 3x3 s2 -> Conv 1x1 24->58 -> Relu; branch 2 Conv 1x1 24->58 -> Relu -> depthwise 3x3 s2 -> Conv 1x1 -> Relu; Concat -> [1,116,24,32] -> shuffle (Reshape [1,2,58,24,32], Transpose, Reshape [1,-1,24,32])",
            "ShuffleNet v2 basic unit: Split axis 1 with split [58,58] (int64 initializer input) -> Conv 1x1 -> Relu -> depthwise 3x3 -> Conv 1x1 -> Relu on the second half -> Concat -> shuffle",
            "the same unit with an equal Split (no split input)",
            "Conv 1x1 116->96 -> y [1,96,24,32]",
        ],
        "converter": "torch.onnx (torchvision shufflenet_v2: x.chunk(2, dim=1) -> Split; channel_shuffle's view/transpose/view -> Reshape/Transpose/Reshape)",
    }, [("x", "standard normal (rng.standard_normal)")]


# ----------------------------------------------------------------------------------------------
# 5. convnext_block

def layer_norm_written_out(g, x, tag, c):
    """LayerNorm over the last axis as torch.onnx writes it below opset 17: ReduceMean, Sub, Pow,
    ReduceMean, Add(eps), Sqrt, Div, Mul(weight), Add(bias)."""
    mean = g.node("ReduceMean", [x], tag + ".mean", axes=[-1], keepdims=1)
    d = g.node("Sub", [x, mean], tag + ".sub")
    sq = g.node("Pow", [d, g.const(tag + ".two", 2.0)], tag + ".pow")
    var = g.node("ReduceMean", [sq], tag + ".var", axes=[-1], keepdims=1)
    var = g.node("Add", [var, g.const(tag + ".eps", 1e-6)], tag + ".add_eps")
    std = g.node("Sqrt", [var], tag + ".sqrt")
    n = g.node("Div", [d, std], tag + ".div")
    n = g.node("Mul", [n, g.const(tag + ".weight", 1.0 + 0.1 * g.rng.standard_normal(c))], tag + ".mul")
    return g.node("Add", [n, g.const(tag + ".bias", 0.1 * g.rng.standard_normal(c))], tag)


def linear(g, x, tag, cin, cout, gain=1.0):
    """torch.onnx's nn.Linear on a tensor of rank 4: MatMul by the transposed weight, then Add bias."""
    w = g.rng.standard_normal((cin, cout)) * (gain * np.sqrt(2.0 / cin))
    y = g.node("MatMul", [x, g.const(tag + ".weight", w)], tag + ".matmul")
    return g.node("Add", [y, g.const(tag + ".bias", 0.1 * g.rng.standard_normal(cout))], tag)


def gelu_erf(g, x, tag):
    """GELU as torch.onnx writes it below opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    e = g.node("Div", [x, g.const(tag + ".sqrt2", np.sqrt(2.0))], tag + ".div")
    e = g.node("Erf", [e], tag + ".erf")
    e = g.node("Add", [e, g.const(tag + ".one", 1.0)], tag + ".add")
    e = g.node("Mul", [x, e], tag + ".mul")
    return g.node("Mul", [e, g.const(tag + ".half", 0.5)], tag)


def convnext_stage_block(g, x, tag, c, h, w):
    """torchvision's CNBlock: depthwise 7x7 -> Permute to NHWC -> LayerNorm -> Linear c->4c -> GELU
    -> Linear 4c->c -> Permute back -> layer scale -> + x."""
    d = g.conv(x, tag + ".dw", c, c, 7, group=c)
    t = g.node("Transpose", [d], tag + ".to_nhwc", perm=[0, 2, 3, 1])
    t = layer_norm_written_out(g, t, tag + ".norm", c)
    t = linear(g, t, tag + ".fc1", c, 4 * c)
    t = gelu_erf(g, t, tag + ".gelu")
    t = linear(g, t, tag + ".fc2", 4 * c, c, gain=0.5)
    t = g.node("Transpose", [t], tag + ".to_nchw", perm=[0, 3, 1, 2])
    t = g.node("Mul", [t, g.const(tag + ".layer_scale", g.rng.uniform(0.5, 1.0, (c, 1, 1)))], tag + ".scale")
    return g.node("Add", [t, x], tag)


def convnext_block():
    g = Graph("convnext_block")
    x = g.input("x", [1, 3, 64, 64])
    s = g.conv(x, "stem", 3, 32, 4, stride=4, pads=[0, 0, 0, 0])            # [1,32,16,16]
    s = g.node("Transpose", [s], "stem.to_nhwc", perm=[0, 2, 3, 1])
    s = layer_norm_written_out(g, s, "stem.norm", 32)
    s = g.node("Transpose", [s], "stem.to_nchw", perm=[0, 3, 1, 2])
    b = convnext_stage_block(g, s, "block1", 32, 16, 16)
    b = convnext_stage_block(g, b, "block2", 32, 16, 16)
    # downsampling: LayerNorm2d (Permute, LayerNorm, Permute) -> Conv 2x2 s2 32->64
    t = g.node("Transpose", [b], "down.to_nhwc", perm=[0, 2, 3, 1])
    t = layer_norm_written_out(g, t, "down.norm", 32)
    t = g.node("Transpose", [t], "down.to_nchw", perm=[0, 3, 1, 2])
    d = g.conv(t, "down.conv", 32, 64, 2, stride=2, pads=[0, 0, 0, 0])      # [1,64,8,8]
    y = convnext_stage_block(g, d, "block3", 64, 8, 8)
    g.output(y, [1, 64, 8, 8])
    return g, {
        "what": "ConvNeXt blocks as torch.onnx writes torchvision's convnext below opset 17: depthwise 7x7 between Transposes to NHWC and back, LayerNorm written out, Linear as MatMul + Add, GELU as Div/Erf/Add/Mul/Mul, opset 13",
        "layers": [
            "x [1,3,64,64] -> Conv 4x4 s4 3->32 -> Transpose (0,2,3,1) -> LayerNorm (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add) -> Transpose (0,3,1,2)",
            "two CNBlocks of 32 channels at 16x16: depthwise Conv 7x7 -> Transpose (0,2,3,1) -> LayerNorm -> MatMul 32->128 + Add -> GELU (erf form) -> MatMul 128->32 + Add -> Transpose (0,3,1,2) -> Mul layer scale [32,1,1] -> Add x",
            "downsampling: Transpose (0,2,3,1) -> LayerNorm -> Transpose (0,3,1,2) -> Conv 2x2 s2 32->64",
            "one CNBlock of 64 channels at 8x8 -> y [1,64,8,8]",
        ],
        "converter": "torch.onnx 1.13 at opset 13 (torchvision convnext_tiny: Permute -> Transpose, LayerNorm below opset 17 -> its decomposition, nn.Linear on rank 4 -> MatMul + Add, nn.GELU -> erf form)",
    }, [("x", "standard normal (rng.standard_normal)")]


PATTERNS = [paddle_hardswish, tf_max_leakyrelu, mediapipe_block, channel_shuffle, convnext_block]


# ----------------------------------------------------------------------------------------------

def make_input(case, index, name, shape, recipe):
    seed = seed_of(f"{case}/{index}")
    rng = np.random.default_rng(seed)
    if recipe.startswith("pixels"):
        x = rng.integers(0, 256, size=shape).astype(np.float32) / np.float32(127.5) - np.float32(1.0)
    else:
        x = rng.standard_normal(shape)
    return seed, np.asarray(x, dtype=np.float32)


def build(make):
    g, info, input_recipes = make()
    case = g.case
    m = g.model(info["what"])
    data = m.SerializeToString()
    assert len(data) < MAX_MODEL_BYTES, (case, len(data))
    write_bytes(f"{case}/model.onnx", data)
    ops = Counter(n.op_type for n in m.graph.node)
    summary.append((case, len(data), ops))

    ds_index = 0
    ds = {"index": ds_index, "inputs": {}, "recipe": {}}
    digest = hashlib.sha256()
    for k, (vi, (name, recipe)) in enumerate(zip(m.graph.input, input_recipes)):
        assert vi.name == name
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        seed, x = make_input(case, ds_index, name, shape, recipe)
        pb = tensor_pb(name, x)
        digest.update(pb)
        write_bytes(f"{case}/test_data_set_{ds_index}/input_{k}.pb", pb)
        ds["seed"] = seed
        ds["recipe"][name] = recipe
        ds["inputs"][name] = ["float32", shape]
    ds["inputs_sha256"] = digest.hexdigest()

    doc = {
        "source": f"synthetic: models/patterns/make_patterns.py, pattern '{case}' (written for memplan; no third-party weights or code)",
        "what": info["what"],
        "converter_pattern": info["converter"],
        "layers": info["layers"],
        "ops": dict(sorted(ops.items())),
        "opset": OPSET,
        "ir_version": IR_VERSION,
        "model_bytes": len(data),
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "weights_generated_by": f"numpy.random.default_rng({g.weight_seed}) (seed = crc32('{case}/weights') & 0x7fffffff): "
                                "Conv weights He-normal (std sqrt(2/fan_in)) times a per-layer gain, biases N(0, 0.1); "
                                "per-channel constants uniform",
        "expected_outputs_from": EXPECTED_FROM,
        "suggested_tolerance": dict(TOLERANCE),
        "inputs_generated_by": "numpy.random.default_rng(seed) per data set (seed = crc32('<case>/<index>') & 0x7fffffff), recipe per input below",
        "data_sets": [ds],
    }
    write_source_json(f"{case}/SOURCE.json", doc)


def main():
    for make in PATTERNS:
        build(make)
    for name, size, ops in summary:
        print(f"{name:18s} {size:8d} bytes  " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
    make_models.report_folder(changed, CHECK_ONLY, "patterns")


if __name__ == "__main__":
    main()
