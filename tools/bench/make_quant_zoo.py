#!/usr/bin/python3
"""Makes the quantized zoo: int8 versions of a few CNNs in the two layouts ONNX Runtime's
quantizers write, with expected outputs from ONNX Runtime.

Usage: make_quant_zoo.py OUT_DIR [--only NAME,...] [--node-modules DIR]

models/quant holds the small ones (`--only squeezenet1_1,seg_fcn_256`), for the tests;
tools/benchmark.sh makes them all in BUILD/quant_zoo but `unet_1024` (a U-Net for background
removal at 1x3x1024x1024, 7.8 MB of int8 weights, the shape of the int8 model whose compile took
14 minutes), made only when named: tools/bench/compile_time.py times its compile.

For each float model (torchvision CNNs, and `seg_fcn`, a small encoder-decoder segmentation net at
1x3x1024x1024 with bilinear Resize upsampling, the shape of the issue's model) two folders:

- `<name>_dyn`: the layout of onnxruntime.quantization.quantize_dynamic: every activation read by
  a Conv or Gemm goes through DynamicQuantizeLinear (uint8, shared by its readers), then
  ConvInteger / MatMulInteger with int8 weights (symmetric, per output channel scales, zero point
  0), Cast to float, Mul by x_scale * w_scale and Add of the float bias.
- `<name>_qdq`: the static QDQ layout of quantize_static: QuantizeLinear -> DequantizeLinear pairs
  (uint8, asymmetric) on the graph input, on the outputs of Conv, Add, MaxPool and Concat, and on
  the inputs of Conv and Gemm, a Relu or Clip right after a Conv or Add removed as
  quantize_static removes it (its QuantizeLinear saturates the same way); weights as DequantizeLinear of int8 initializers (per channel,
  axis 0). Activation ranges come from a calibration run of the float model (ONNX Runtime, on
  random inputs other than the test input).

Each folder holds model.onnx, test_data_set_0/input_0.pb and output_0.pb (ONNX Runtime's output,
default optimizations, 1 thread) and SOURCE.json with the tolerance: what ONNX Runtime needs
against itself, as the issue asks (int8 rounding makes a model sensitive to the last bit of its
float inputs): the largest difference between its output for x and for x moved by one ulp (up,
and down), and between its optimized run and one with graph optimizations off (a QDQ model then
runs as float convolutions between QuantizeLinear/DequantizeLinear, the other way of computing the
same layout, which is what memplan does where it does not fuse). Weights are random (fixed seeds). Debian's python3-onnx, numpy and torch
only; ONNX Runtime from onnxruntime-node (NODE_PATH) through tools/bench/ort_bench.js. Idempotent:
a finished folder is skipped.
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper

from export_zoo import randomise_batchnorm, write_tensor

OPSET = 17
HERE = os.path.dirname(os.path.abspath(__file__))


class SegFcn(torch.nn.Module):
    """Four stride-2 encoder stages, four bilinear x2 decoder stages, a 1x1 classifier."""

    def __init__(self, classes=4):
        super().__init__()

        def block(i, o, s):
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, s, 1, bias=False), torch.nn.BatchNorm2d(o),
                                       torch.nn.ReLU())
        self.enc = torch.nn.ModuleList([block(3, 16, 2), block(16, 32, 2), block(32, 64, 2), block(64, 96, 2)])
        self.mid = block(96, 96, 1)
        self.dec = torch.nn.ModuleList([block(96, 64, 1), block(64, 32, 1), block(32, 16, 1)])
        self.head = torch.nn.Conv2d(16, classes, 1)

    def forward(self, x):
        for b in self.enc:
            x = b(x)
        x = self.mid(x)
        for b in self.dec:
            x = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
            x = b(x)
        x = self.head(x)
        return torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


class UNet(torch.nn.Module):
    """A U-Net for background removal (the shape of the issue's int8 model): five stages of two 3x3
    convolutions (32 to 512 channels), max-pool down, bilinear x2 up, skip connections by Concat,
    a 1x1 convolution to one mask channel, Sigmoid."""

    def __init__(self, widths=(32, 64, 128, 256, 512)):
        super().__init__()

        def double(i, o):
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(o),
                                       torch.nn.ReLU(), torch.nn.Conv2d(o, o, 3, 1, 1, bias=False),
                                       torch.nn.BatchNorm2d(o), torch.nn.ReLU())
        self.down = torch.nn.ModuleList()
        prev = 3
        for w in widths:
            self.down.append(double(prev, w))
            prev = w
        self.up = torch.nn.ModuleList(double(widths[i + 1] + widths[i], widths[i]) for i in reversed(range(len(widths) - 1)))
        self.head = torch.nn.Conv2d(widths[0], 1, 1)

    def forward(self, x):
        skips = []
        for i, b in enumerate(self.down):
            if i:
                x = torch.nn.functional.max_pool2d(x, 2)
            x = b(x)
            skips.append(x)
        skips.pop()
        for b in self.up:
            x = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
            x = b(torch.cat([x, skips.pop()], 1))
        return torch.sigmoid(self.head(x))


# name -> (constructor, input side)
MODELS = {
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 224),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 224),
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 224),
    "seg_fcn": (SegFcn, 1024),
    "seg_fcn_256": (SegFcn, 256),  # the same net at 256x256: small enough to commit (models/quant)
    "unet_1024": (UNet, 1024),
}
# Made only when named with --only: the 1024x1024 int8 U-Net (compile time, not the benchmark
# zoo: ONNX Runtime alone takes minutes over it).
ON_REQUEST = {"unet_1024"}


def export_float(make, side, path):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = make()
    randomise_batchnorm(model, min(side, 256), gen)
    x = torch.rand(1, 3, side, side, generator=gen) * 2 - 1
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
    return onnx.load(path)


# ---- ONNX Runtime --------------------------------------------------------------------------------

def ort_run(model_path, x, node_modules, out_dir, optimization="all"):
    """The model's outputs for input x (ONNX Runtime, 1 thread), as {name: array}."""
    inp = os.path.join(out_dir, "x.npy")
    np.save(inp, x)
    env = dict(os.environ, NODE_PATH=node_modules)
    subprocess.run(["node", os.path.join(HERE, "ort_bench.js"), model_path, "--input", f"input={inp}",
                    "--repeat", "0", "--threads", "1", "--output-dir", out_dir,
                    "--optimization", optimization], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir) if f != "x.npy"}


# ---- rewriting -----------------------------------------------------------------------------------

def inits_of(g):
    return {t.name: numpy_helper.to_array(t) for t in g.initializer}


def conv_attrs(node):
    return [a for a in node.attribute]


def weight_scales(w):
    """Symmetric int8 per output channel (axis 0): scale = max|w| / 127."""
    m = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    s = np.where(m > 0, m / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / s.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
    return q, s


def finish(model, nodes, inits):
    g = model.graph
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    read = {i for n in nodes for i in n.input}  # a removed Clip's bounds go
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items() if k in read)
    del g.value_info[:]
    model.opset_import[0].version = OPSET
    onnx.checker.check_model(model)
    return model


def to_dynamic(model):
    """quantize_dynamic's layout for every Conv and Gemm (transB=1) with constant weights."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    inits = inits_of(g)
    used = set()
    nodes, dql = [], {}

    def quantized(x):
        if x not in dql:
            names = (x + "_quantized", x + "_scale", x + "_zero_point")
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(names), name=x + "_QuantizeLinear"))
            dql[x] = names
        return dql[x]

    for n in g.node:
        w = inits.get(n.input[1]) if len(n.input) > 1 else None
        is_gemm = n.op_type == "Gemm" and all(
            (a.name != "transB" or a.i == 1) and (a.name not in ("alpha", "beta", "transA") or a.f == 1.0 or a.i == 0)
            for a in n.attribute)
        if w is None or not (n.op_type == "Conv" or is_gemm):
            nodes.append(n)
            continue
        xq, xs, xz = quantized(n.input[0])
        q, s = weight_scales(w)
        p = n.name or n.output[0]
        bias = inits.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if n.op_type == "Conv":
            inits[p + "_W_quantized"] = q
            inits[p + "_W_scale"] = s.reshape(-1, 1, 1)
            op = helper.make_node("ConvInteger", [xq, p + "_W_quantized", xz, p + "_W_zero_point"],
                                  [p + "_output_quantized"], name=p + "_quant")
            op.attribute.extend(conv_attrs(n))
            if bias is not None:
                inits[p + "_bias"] = bias.reshape(-1, 1, 1)
        else:
            inits[p + "_W_quantized"] = np.ascontiguousarray(q.T)  # MatMul's [K, N]
            inits[p + "_W_scale"] = s
            op = helper.make_node("MatMulInteger", [xq, p + "_W_quantized", xz, p + "_W_zero_point"],
                                  [p + "_output_quantized"], name=p + "_quant")
            if bias is not None:
                inits[p + "_bias"] = bias
        used.update(n.input[1:])
        inits[p + "_W_zero_point"] = np.array(0, np.int8)
        nodes += [op,
                  helper.make_node("Cast", [p + "_output_quantized"], [p + "_output_cast"], to=TensorProto.FLOAT,
                                   name=p + "_cast"),
                  helper.make_node("Mul", [xs, p + "_W_scale"], [p + "_scales_mul"], name=p + "_scales_mul"),
                  helper.make_node("Mul", [p + "_output_cast", p + "_scales_mul"],
                                   [p + "_mul" if bias is not None else n.output[0]], name=p + "_output_scale_mul")]
        if bias is not None:
            nodes.append(helper.make_node("Add", [p + "_mul", p + "_bias"], [n.output[0]], name=p + "_bias_add"))
    for k in used:
        if not any(k in m.input for m in nodes):
            inits.pop(k, None)
    return finish(model, nodes, inits)


def drop_activations(model):
    """quantize_static's QDQ quantizer removes a Relu or Clip that is the only reader of a Conv's or
    an Add's output (its QuantizeLinear, calibrated on the activation's output, saturates the
    same way: a zero point of 0 is Relu; a top of the range at or below Clip's max is Clip):
    the activation's output is then the Conv's or Add's."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    readers, prod = {}, {o: n for n in g.node for o in n.output}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    outs = {o.name for o in g.output}
    drop = []
    for n in g.node:
        if n.op_type not in ("Relu", "Clip") or n.input[0] not in prod or n.input[0] in outs:
            continue
        if prod[n.input[0]].op_type in ("Conv", "Add") and len(readers.get(n.input[0], [])) == 1:
            drop.append(n)
    for n in drop:
        prod[n.input[0]].output[0] = n.output[0]
        g.node.remove(n)
    # The removed Clips' bounds (Constant nodes in torch's export) go too.
    read = {i for n in g.node for i in n.input} | outs
    for n in [n for n in g.node if n.op_type == "Constant" and n.output[0] not in read]:
        g.node.remove(n)
    return model, {n.output[0]: n.op_type for n in drop}


def qdq_points(model):
    """The activations QDQ wraps: the graph input, the outputs of Conv, Add, MaxPool, Concat and
    of the removed activations, and the inputs of Conv and Gemm (quantize_static gives every
    quantized node DequantizeLinear inputs, e.g. after a Resize)."""
    g = model.graph
    points = [g.input[0].name]
    for n in g.node:
        if n.op_type in ("Conv", "Add", "MaxPool", "Concat"):
            points.append(n.output[0])
        if n.op_type in ("Conv", "Gemm"):
            points.append(n.input[0])
    outs = {o.name for o in g.output}
    return [p for p in dict.fromkeys(points) if p not in outs]


def to_qdq(model, ranges, points):
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    inits = inits_of(g)
    rename = {}
    pre = []
    for p in points:
        lo, hi = min(ranges[p][0], 0.0), max(ranges[p][1], 0.0)
        s = np.float32(max(hi - lo, 1e-8) / 255.0)
        z = np.uint8(np.clip(np.rint(-lo / s), 0, 255))
        inits[p + "_scale"], inits[p + "_zero_point"] = np.array(s, np.float32), np.array(z, np.uint8)
        q = helper.make_node("QuantizeLinear", [p, p + "_scale", p + "_zero_point"], [p + "_QuantizeLinear_Output"],
                             name=p + "_QuantizeLinear")
        dq = helper.make_node("DequantizeLinear", [p + "_QuantizeLinear_Output", p + "_scale", p + "_zero_point"],
                              [p + "_DequantizeLinear_Output"], name=p + "_DequantizeLinear")
        rename[p] = p + "_DequantizeLinear_Output"
        pre.append((p, [q, dq]))
    nodes = []
    input_qdq = [qd for p, qd in pre if p == g.input[0].name]
    for qd in input_qdq:
        nodes += qd
    after = {p: qd for p, qd in pre if p != g.input[0].name}
    for n in g.node:
        for k, i in enumerate(n.input):
            if i in rename:
                n.input[k] = rename[i]
        if n.op_type in ("Conv", "Gemm") and n.input[1] in inits:
            w = inits.pop(n.input[1])
            if n.op_type == "Gemm":
                q, s = weight_scales(w)
            else:
                q, s = weight_scales(w)
            name = n.input[1]
            inits[name + "_quantized"], inits[name + "_scale"] = q, s
            inits[name + "_zero_point"] = np.zeros(s.shape, np.int8)
            nodes.append(helper.make_node("DequantizeLinear", [name + "_quantized", name + "_scale",
                                                               name + "_zero_point"], [name + "_DequantizeLinear_Output"],
                                          axis=0, name=name + "_DequantizeLinear"))
            n.input[1] = name + "_DequantizeLinear_Output"
        nodes.append(n)
        for y in n.output:
            if y in after:
                nodes += after[y]
    return finish(model, nodes, inits)


# ---- calibration, expected outputs, tolerance ----------------------------------------------------

def calibrate(model, points, side, node_modules, tmp):
    m = onnx.ModelProto.FromString(model.SerializeToString())
    have = {o.name for o in m.graph.output}
    for p in points:
        if p not in have:
            m.graph.output.append(helper.make_empty_tensor_value_info(p))
    path = os.path.join(tmp, "calib.onnx")
    onnx.save(m, path)
    rng = np.random.default_rng(7)
    ranges = {}
    for run in range(2):
        x = rng.uniform(-1, 1, (1, 3, side, side)).astype(np.float32)
        out = os.path.join(tmp, f"calib{run}")
        os.makedirs(out, exist_ok=True)
        got = ort_run(path, x, node_modules, out)
        for p in points:
            a = got[p.replace("/", "_").replace(":", "_")]
            lo, hi = ranges.get(p, (np.inf, -np.inf))
            ranges[p] = (min(lo, float(a.min())), max(hi, float(a.max())))
    return ranges


def write_case(folder, model, x, node_modules, source):
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(folder, "model.onnx.tmp")
    onnx.save(model, path)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for tag, xi in (("x", x), ("up", np.nextafter(x, np.float32(np.inf))),
                        ("down", np.nextafter(x, np.float32(-np.inf)))):
            d = os.path.join(tmp, tag)
            os.makedirs(d)
            runs[tag] = ort_run(path, xi, node_modules, d)["output"]
        d = os.path.join(tmp, "float")
        os.makedirs(d)
        runs["unfused"] = ort_run(path, x, node_modules, d, "disabled")["output"]
    ref = runs["x"]
    diffs = {t: float(np.abs(runs[t].astype(np.float64) - ref).max()) for t in ("up", "down", "unfused")}
    # The tolerance: what ONNX Runtime needs against itself under a 1-ulp input change (at least
    # the float models' 1e-4), rounded up to one significant digit.
    need = max(diffs["up"], diffs["down"], diffs["unfused"], 1e-4)
    atol = float(f"{need:.0e}")
    atol = atol if atol >= need else float(f"{atol * 2:.0e}") if atol * 2 >= need else need * 1.5
    write_tensor(os.path.join(data, "input_0.pb"), "input", x)
    write_tensor(os.path.join(data, "output_0.pb"), "output", ref)
    source = dict(source)
    source.update({
        "expected_outputs_from": "onnxruntime-node 1.30.0 CPU EP, default graph optimizations, intraOpNumThreads=1",
        "suggested_tolerance": {"rtol": 0.001, "atol": atol},
        "tolerance_rationale": "what ONNX Runtime needs against itself: the largest of max |diff| when every "
                               "input element moves by one ulp (numpy.nextafter up and down) and max |diff| "
                               "between its default graph optimizations (int8 kernels, fused) and none (each node "
                               "as written), rounded up; not less than 1e-4",
        "tolerance_evidence": {"max_abs_diff_1ulp_up": diffs["up"], "max_abs_diff_1ulp_down": diffs["down"],
                               "max_abs_diff_optimizations_off": diffs["unfused"],
                               "output_max_abs": float(np.abs(ref).max())},
    })
    with open(os.path.join(folder, "SOURCE.json"), "w") as f:
        json.dump(source, f, indent=1)
    os.replace(path, os.path.join(folder, "model.onnx"))


def done(folder):
    return os.path.exists(os.path.join(folder, "model.onnx"))


def main():
    args = sys.argv[1:]
    only, node_modules = None, os.environ.get("NODE_PATH", "/tmp/ort/node_modules")
    for flag in ("--only", "--node-modules"):
        if flag in args:
            i = args.index(flag)
            if flag == "--only":
                only = set(args[i + 1].split(","))
            else:
                node_modules = args[i + 1]
            del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    out_dir = args[0]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name, (make, side) in MODELS.items():
        if (only and name not in only) or (not only and name in ON_REQUEST):
            continue
        dyn, qdq = os.path.join(out_dir, name + "_dyn"), os.path.join(out_dir, name + "_qdq")
        if done(dyn) and done(qdq):
            continue
        print(f"make_quant_zoo: {name}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            fmodel = export_float(make, side, os.path.join(tmp, "float.onnx"))
            x = np.random.default_rng(1234).uniform(-1, 1, (1, 3, side, side)).astype(np.float32)
            base = {"source": f"tools/bench/make_quant_zoo.py from torchvision/torch {name} (random weights, "
                              "randomised BatchNorm statistics, folded by the export)",
                    "input": "numpy.random.default_rng(1234).uniform(-1, 1, (1, 3, S, S)) float32"}
            if not done(dyn):
                write_case(dyn, to_dynamic(fmodel), x, node_modules,
                           dict(base, layout="quantize_dynamic: DynamicQuantizeLinear -> ConvInteger/MatMulInteger "
                                             "(int8 per-channel weights) -> Cast -> Mul -> Add"))
            if not done(qdq):
                # Calibrated on the float model: a removed activation's output is its range.
                points = qdq_points(drop_activations(fmodel)[0])
                ranges = calibrate(fmodel, points, side, node_modules, tmp)
                fmodel, _ = drop_activations(fmodel)
                write_case(qdq, to_qdq(fmodel, ranges, points), x, node_modules,
                           dict(base, layout="QDQ: QuantizeLinear -> DequantizeLinear (uint8, calibrated on two "
                                             "uniform(-1,1) inputs, seed 7) around Conv/Add/MaxPool/Concat; weights "
                                             "DequantizeLinear of int8 per-channel initializers"))


if __name__ == "__main__":
    main()
