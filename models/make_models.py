#!/usr/bin/python3
"""Build memplan's small example ONNX models and their expected outputs.

    /usr/bin/python3 models/make_models.py            # (re)write everything under models/
    /usr/bin/python3 models/make_models.py --check    # exit 1 if any file would change

Needs only Debian's python3-onnx (1.12) and python3-numpy (1.24). Deterministic (fixed seeds)
and idempotent: a file is rewritten only when its bytes change.

Layout, as in ONNX's backend tests and shared/models/:

    models/<name>/model.onnx
    models/<name>/test_data_set_K/input_N.pb        onnx.TensorProto, name = graph input N
    models/<name>/test_data_set_K/output_N.pb       onnx.TensorProto, name = graph output N
    models/<name>/test_data_set_K/inputs/<input name>.npy
    models/<name>/test_data_set_K/expected/<output name>.npy
    models/bad/...                                  malformed or unsupported inputs

Expected outputs come from the small numpy reference below (hand-written per model, independent
of the graph protos), and are cross-checked with ONNX Runtime by models/check_with_ort.js.
"""

import io
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
IR_VERSION = 8
SEED = 20240617

CHECK_ONLY = "--check" in sys.argv[1:]
changed = []      # paths whose bytes differ from what is on disk
summary = []      # (name, bytes, note)


# ----------------------------------------------------------------------------------------------
# file writing (idempotent)

def write_bytes(path, data):
    full = os.path.join(HERE, path)
    try:
        with open(full, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    changed.append(path)
    if CHECK_ONLY:
        return
    os.makedirs(os.path.dirname(full), exist_ok=True)
    tmp = full + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, full)


def write_source_json(path, doc, ort_keys):
    """Writes a model folder's SOURCE.json (models/patterns, models/opsets) unless the file already
    holds the same content. The data sets' "outputs" and the ort_keys come from
    models/expected_with_ort.js: they are kept when model_sha256 and every data set's
    inputs_sha256 are unchanged, and dropped otherwise (rerun expected_with_ort.js)."""
    full = os.path.join(HERE, path)
    old = None
    try:
        with open(full, "rb") as f:
            old = json.loads(f.read().decode())
    except (FileNotFoundError, ValueError):
        pass
    if old and old.get("model_sha256") == doc["model_sha256"] and \
            [d.get("inputs_sha256") for d in old.get("data_sets", [])] == \
            [d["inputs_sha256"] for d in doc["data_sets"]]:
        for k in ort_keys:
            if k in old:
                doc[k] = old[k]
        for new_ds, old_ds in zip(doc["data_sets"], old["data_sets"]):
            if "outputs" in old_ds:
                new_ds["outputs"] = old_ds["outputs"]
    if old == doc:
        return
    write_bytes(path, (json.dumps(doc, indent=1) + "\n").encode())


def folder_writers(here, check_only, folder_changed):
    """write_bytes(rel, data) and write_source_json(rel, doc, ort_keys) for a generator of its own
    folder of models (models/patterns, models/opsets): paths relative to `here`, its --check, and
    its list of the paths that changed."""
    def through(write, rel, *args):
        global CHECK_ONLY
        CHECK_ONLY = check_only
        before = len(changed)
        write(os.path.join(os.path.basename(here), rel), *args)
        if len(changed) > before:
            folder_changed.append(rel)
    return (lambda rel, data: through(write_bytes, rel, data),
            lambda rel, doc, ort_keys: through(write_source_json, rel, doc, ort_keys))


def report_folder(folder_changed, check_only, folder):
    """The end of a folder generator's run (models/patterns, models/opsets): with --check, exit 1
    listing what is out of date; else list what was written and name the command that makes the
    expected outputs next."""
    if check_only:
        if folder_changed:
            print("out of date:\n  " + "\n  ".join(folder_changed))
            sys.exit(1)
        print("up to date")
        return
    print(f"{len(folder_changed)} file(s) written" + ("".join("\n  " + c for c in folder_changed)))
    if folder_changed:
        print(f"now run: NODE_PATH=/work/main/build/bench/node_modules node models/expected_with_ort.js models/{folder}")


def npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(os.path.join(HERE, path)):
        for fn in files:
            total += os.path.getsize(os.path.join(root, fn))
    return total


# ----------------------------------------------------------------------------------------------
# numpy reference implementation of the few ops the models use

def ref_conv(x, w, b, pads=(1, 1, 1, 1), strides=(1, 1)):
    """ONNX Conv, NCHW, group 1, dilation 1. pads = [top, left, bottom, right]."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    assert ci == c
    pt, pl, pb, pr = pads
    sh, sw = strides
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - kh) // sh + 1
    ow = (wd + pl + pr - kw) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + sh * (oh - 1) + 1:sh, kx:kx + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


def ref_relu(x):
    return np.maximum(x, 0)


def ref_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def f32(x):
    return np.asarray(x, dtype=np.float32)


# ----------------------------------------------------------------------------------------------
# proto helpers

def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const_node(out, arr, name=None):
    arr = np.asarray(arr)
    return helper.make_node("Constant", [], [out], name=name or ("const_" + out),
                            value=numpy_helper.from_array(arr, out))


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def make_model(graph, opset=OPSET, extra_opsets=()):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)] + list(extra_opsets),
        producer_name="memplan-make_models",
        producer_version="1")
    model.ir_version = IR_VERSION
    return model


def save_model(name, model, data_sets, note=""):
    """data_sets: list of (inputs dict, outputs dict) keyed by graph input/output name."""
    check = "checker ok"
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # noqa: BLE001 - report, don't hide
        check = "checker FAILED: " + str(e).splitlines()[0][:100]
        print(f"warning: {name}: {check}", file=sys.stderr)
    write_bytes(f"{name}/model.onnx", model.SerializeToString())
    in_names = [i.name for i in model.graph.input
                if i.name not in {t.name for t in model.graph.initializer}]
    out_names = [o.name for o in model.graph.output]
    for k, (inputs, outputs) in enumerate(data_sets):
        assert sorted(inputs) == sorted(in_names), (name, sorted(inputs), in_names)
        assert sorted(outputs) == sorted(out_names), (name, sorted(outputs), out_names)
        d = f"{name}/test_data_set_{k}"
        for j, n in enumerate(in_names):
            a = np.asarray(inputs[n])
            write_bytes(f"{d}/input_{j}.pb", numpy_helper.from_array(a, n).SerializeToString())
            write_bytes(f"{d}/inputs/{n}.npy", npy_bytes(a))
        for j, n in enumerate(out_names):
            a = np.asarray(outputs[n])
            write_bytes(f"{d}/output_{j}.pb", numpy_helper.from_array(a, n).SerializeToString())
            write_bytes(f"{d}/expected/{n}.npy", npy_bytes(a))
    summary.append((name, dir_bytes(name) if not CHECK_ONLY else 0,
                    f"{len(data_sets)} data sets; {check}" + (f"; {note}" if note else "")))
    return model


# ----------------------------------------------------------------------------------------------
# example: THE example graph of the design notes

def build_example(rng):
    C, H, W = 8, 112, 112
    w0 = f32(rng.standard_normal((C, C, 3, 3)) * 0.1)
    b0 = f32(rng.standard_normal(C) * 0.1)
    w1 = f32(rng.standard_normal((C, C, 3, 3)) * 0.1)
    b1 = f32(rng.standard_normal(C) * 0.1)
    trip = np.array(3, np.int64)
    loop_step = f32(np.arange(1, C + 1).reshape(1, C, 1, 1) * 0.1)
    else_scale = f32(0.5)
    shape = [1, C, H, W]

    # Loop body: carried x -> x + loop_step, three times (trip count from a main-graph initializer)
    body = helper.make_graph(
        [const_node("loop_step", loop_step),
         helper.make_node("Add", ["loop_x_in", "loop_step"], ["loop_x_out"], name="loop_add"),
         helper.make_node("Identity", ["loop_cond_in"], ["loop_cond_out"], name="loop_cond")],
        "loop_body",
        [vi("loop_iter", TensorProto.INT64, []), vi("loop_cond_in", TensorProto.BOOL, []),
         vi("loop_x_in", TensorProto.FLOAT, shape)],
        [vi("loop_cond_out", TensorProto.BOOL, []), vi("loop_x_out", TensorProto.FLOAT, shape)])
    then_g = helper.make_graph(
        [helper.make_node("Conv", ["relu_out", "w1", "b1"], ["then_conv"], name="then_conv",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Loop", ["trip_count", "", "then_conv"], ["then_out"], name="loop",
                          body=body)],
        "then_branch", [], [vi("then_out", TensorProto.FLOAT, shape)])
    else_g = helper.make_graph(
        [const_node("else_scale", else_scale),
         helper.make_node("Mul", ["relu_out", "else_scale"], ["else_out"], name="else_mul")],
        "else_branch", [], [vi("else_out", TensorProto.FLOAT, shape)])
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w0", "b0"], ["conv_out"], name="conv0",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["conv_out"], ["relu_out"], name="relu0"),
         helper.make_node("If", ["cond"], ["if_out"], name="if0",
                          then_branch=then_g, else_branch=else_g),
         helper.make_node("Add", ["if_out", "add_in"], ["output"], name="add_out")],
        "example",
        [vi("input", TensorProto.FLOAT, shape), vi("cond", TensorProto.BOOL, []),
         vi("add_in", TensorProto.FLOAT, shape)],
        [vi("output", TensorProto.FLOAT, shape)],
        [init("w0", w0), init("b0", b0), init("w1", w1), init("b1", b1),
         init("trip_count", trip)])
    model = make_model(graph)

    def ref(x, cond, add_in):
        r = ref_relu(ref_conv(x, w0, b0))
        if cond:
            t = ref_conv(r, w1, b1)
            for _ in range(int(trip)):
                t = t + loop_step
            y = t
        else:
            y = r * else_scale
        return {"output": f32(y + add_in)}

    sets = []
    for cond in (True, False):
        x = f32(rng.standard_normal(shape))
        a = f32(rng.standard_normal(shape))
        c = np.array(cond)
        sets.append(({"input": x, "cond": c, "add_in": a}, ref(x, cond, a)))
    return save_model("example", model, sets,
                      "Conv-Relu-If{Conv-Loop(3) | Mul}-Add, [1,8,112,112]")


# ----------------------------------------------------------------------------------------------
# nested_if_loop_if: If -> Loop -> If

def build_nested_if_loop_if(rng):
    shape = [4, 16]
    trip = 4
    inner_then = helper.make_graph(
        [const_node("one", f32(1.0)),
         helper.make_node("Add", ["acc", "one"], ["inner_then_out"], name="inner_add")],
        "inner_then", [], [vi("inner_then_out", TensorProto.FLOAT, shape)])
    inner_else = helper.make_graph(
        [const_node("half", f32(-0.5)),
         helper.make_node("Mul", ["acc", "half"], ["inner_else_out"], name="inner_mul")],
        "inner_else", [], [vi("inner_else_out", TensorProto.FLOAT, shape)])
    body = helper.make_graph(
        [const_node("two_i", np.array(2, np.int64)),
         const_node("zero_i", np.array(0, np.int64)),
         helper.make_node("Mod", ["i", "two_i"], ["i_mod_2"], name="mod"),
         helper.make_node("Equal", ["i_mod_2", "zero_i"], ["i_even"], name="even"),
         helper.make_node("If", ["i_even"], ["acc_out"], name="inner_if",
                          then_branch=inner_then, else_branch=inner_else),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="pass_cond")],
        "loop_body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("acc", TensorProto.FLOAT, shape)],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, shape)])
    outer_then = helper.make_graph(
        [const_node("trip", np.array(trip, np.int64)),
         helper.make_node("Loop", ["trip", "", "x"], ["outer_then_out"], name="loop",
                          body=body)],
        "outer_then", [], [vi("outer_then_out", TensorProto.FLOAT, shape)])
    outer_else = helper.make_graph(
        [const_node("two_f", f32(2.0)),
         helper.make_node("Sub", ["x", "two_f"], ["outer_else_out"], name="outer_sub")],
        "outer_else", [], [vi("outer_else_out", TensorProto.FLOAT, shape)])
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], name="outer_if",
                          then_branch=outer_then, else_branch=outer_else)],
        "nested_if_loop_if",
        [vi("x", TensorProto.FLOAT, shape), vi("cond", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, shape)])
    model = make_model(graph)

    def ref(x, cond):
        if cond:
            acc = x.astype(np.float64)
            for i in range(trip):
                acc = acc + 1.0 if i % 2 == 0 else acc * -0.5
            return {"y": f32(acc)}
        return {"y": f32(x - 2.0)}

    sets = []
    for cond in (True, False):
        x = f32(rng.standard_normal(shape))
        sets.append(({"x": x, "cond": np.array(cond)}, ref(x, cond)))
    return save_model("nested_if_loop_if", model, sets,
                      "If{Loop(4){If(i%2==0){Add|Mul}}|Sub}, [4,16]")


# ----------------------------------------------------------------------------------------------
# loop_scan_outputs: Loop with a carried value and a scan output, M = 5

def build_loop_scan_outputs(rng):
    M = 5
    body = helper.make_graph(
        [const_node("half", f32(0.5)),
         helper.make_node("Cast", ["i"], ["i_f"], name="cast_i", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["acc", "half"], ["acc_half"], name="mul_half"),
         helper.make_node("Mul", ["x", "i_f"], ["x_i"], name="mul_x_i"),   # x captured
         helper.make_node("Add", ["acc_half", "x_i"], ["acc_out"], name="add_acc"),
         helper.make_node("Sub", ["acc_out", "acc"], ["delta"], name="delta"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="pass_cond")],
        "loop_body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("acc", TensorProto.FLOAT, [16])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [16]),
         vi("delta", TensorProto.FLOAT, [16])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "acc0"], ["acc_final", "deltas"], name="loop",
                          body=body)],
        "loop_scan_outputs",
        [vi("x", TensorProto.FLOAT, [16]), vi("acc0", TensorProto.FLOAT, [16])],
        [vi("acc_final", TensorProto.FLOAT, [16]), vi("deltas", TensorProto.FLOAT, [M, 16])],
        [init("M", np.array(M, np.int64))])
    model = make_model(graph)

    def ref(x, acc0):
        acc = acc0.astype(np.float64)
        deltas = []
        for i in range(M):
            new = acc * 0.5 + x * float(i)
            deltas.append(new - acc)
            acc = new
        return {"acc_final": f32(acc), "deltas": f32(np.stack(deltas))}

    x = f32(rng.standard_normal(16))
    a = f32(rng.standard_normal(16))
    return save_model("loop_scan_outputs", model, [({"x": x, "acc0": a}, ref(x, a))],
                      "Loop M=5, carried [16] + scan output [5,16]")


# ----------------------------------------------------------------------------------------------
# loop_data_dependent_exit: while loop, keep doubling x until sum(x) > threshold

THRESHOLD = f32(1000.0)


def _while_body(with_scan):
    outs = [vi("c_out", TensorProto.BOOL, []), vi("x_out", TensorProto.FLOAT, [8]),
            vi("n_out", TensorProto.INT64, [])]
    if with_scan:
        outs.append(vi("s", TensorProto.FLOAT, []))
    return helper.make_graph(
        [const_node("two", f32(2.0)),
         const_node("one_i", np.array(1, np.int64)),
         helper.make_node("Mul", ["x_in", "two"], ["x_out"], name="double"),
         helper.make_node("ReduceSum", ["x_out"], ["s"], name="sum", keepdims=0),
         helper.make_node("Greater", ["s", "threshold"], ["done"], name="gt"),  # captured
         helper.make_node("Not", ["done"], ["c_out"], name="not_done"),
         helper.make_node("Add", ["n_in", "one_i"], ["n_out"], name="count")],
        "while_body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("x_in", TensorProto.FLOAT, [8]), vi("n_in", TensorProto.INT64, [])],
        outs)


def _ref_while(x, keep_going):
    x = f32(x)
    n = 0
    sums = []
    c = bool(keep_going)
    while c:
        x = f32(x * f32(2.0))
        s = np.sum(x, dtype=np.float32)
        sums.append(s)
        c = not (s > THRESHOLD)
        n += 1
    return x, np.array(n, np.int64), f32(sums).reshape(-1)


def _while_sets(rng):
    x0 = f32(rng.uniform(0.1, 1.0, 8))
    return [
        (x0, False),                       # 0 iterations: cond input False
        (f32(np.full(8, 100.0)), True),    # 1 iteration: sum(2x) = 1600 > 1000
        (f32(x0 * 0.01), True),            # many iterations
    ]


def build_loop_data_dependent_exit(rng):
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "keep_going", "x", "n0"], ["y", "iterations"],
                          name="while", body=_while_body(False))],
        "loop_data_dependent_exit",
        [vi("x", TensorProto.FLOAT, [8]), vi("keep_going", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, [8]), vi("iterations", TensorProto.INT64, [])],
        [init("threshold", THRESHOLD), init("n0", np.array(0, np.int64))])
    model = make_model(graph)
    sets = []
    for x, c in _while_sets(rng):
        y, n, _ = _ref_while(x, c)
        sets.append(({"x": x, "keep_going": np.array(c)}, {"y": y, "iterations": n}))
    iters = [int(s[1]["iterations"]) for s in sets]
    return save_model("loop_data_dependent_exit", model, sets,
                      f"while loop, no trip count; iterations per set {iters}")


def build_loop_data_dependent_scan(rng):
    """Same while loop plus a scan output: its length is data-dependent (needs a bound)."""
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "keep_going", "x", "n0"], ["y", "iterations", "sums"],
                          name="while", body=_while_body(True))],
        "loop_data_dependent_scan",
        [vi("x", TensorProto.FLOAT, [8]), vi("keep_going", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, [8]), vi("iterations", TensorProto.INT64, []),
         vi("sums", TensorProto.FLOAT, ["K"])],
        [init("threshold", THRESHOLD), init("n0", np.array(0, np.int64))])
    model = make_model(graph)
    sets = []
    for x, c in _while_sets(rng):
        y, n, sums = _ref_while(x, c)
        sets.append(({"x": x, "keep_going": np.array(c)},
                     {"y": y, "iterations": n, "sums": sums}))
    return save_model("loop_data_dependent_scan", model, sets,
                      "while loop with a scan output of data-dependent length K")


# ----------------------------------------------------------------------------------------------
# loop_growing_state: a greedy decoder. The token history `ys` gains a column each iteration
# ([1, 1] -> [1, 2] -> ...), as in every autoregressive decoder: its shape only the run decides.

DEC_VOCAB, DEC_WIDTH = 11, 8


def _decoder_body():
    return helper.make_graph(
        [helper.make_node("Gather", ["embedding", "ys_in"], ["embedded"], name="embed", axis=0),  # [1, L, D]
         helper.make_node("ReduceMean", ["embedded"], ["context"], name="pool", axes=[1], keepdims=0),
         helper.make_node("MatMul", ["context", "projection"], ["logits"], name="project"),  # [1, V]
         helper.make_node("ArgMax", ["logits"], ["token"], name="pick", axis=1, keepdims=1),  # [1, 1]
         helper.make_node("Concat", ["ys_in", "token"], ["ys_out"], name="append", axis=1),  # [1, L + 1]
         helper.make_node("Squeeze", ["token"], ["token_scalar"], name="scalar"),
         helper.make_node("Equal", ["token_scalar", "end"], ["ended"], name="is_end"),  # captured
         helper.make_node("Not", ["ended"], ["go_on"], name="go_on"),
         helper.make_node("ReduceSum", ["logits"], ["score"], name="score", keepdims=0)],
        "decoder_step",
        [vi("step", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("ys_in", TensorProto.INT64, [1, "L"])],
        [vi("go_on", TensorProto.BOOL, []), vi("ys_out", TensorProto.INT64, [1, "L1"]),
         vi("score", TensorProto.FLOAT, [])])


def _ref_decoder(embedding, projection, max_len, start, end):
    ys, scores = np.array([[start]], np.int64), []
    for _ in range(max_len):
        logits = np.mean(embedding[ys], axis=1, dtype=np.float32) @ projection
        token = int(np.argmax(logits, axis=1)[0])
        ys = np.concatenate([ys, [[token]]], axis=1)
        scores.append(np.sum(logits, dtype=np.float32))
        if token == end:
            break
    return ys, f32(scores).reshape(-1)


def build_loop_growing_state(rng):
    embedding = f32(rng.standard_normal((DEC_VOCAB, DEC_WIDTH)))
    projection = f32(rng.standard_normal((DEC_WIDTH, DEC_VOCAB)))
    graph = helper.make_graph(
        [helper.make_node("Loop", ["max_len", "", "start"], ["ys", "scores"], name="decode", body=_decoder_body())],
        "loop_growing_state",
        [vi("max_len", TensorProto.INT64, []), vi("start", TensorProto.INT64, [1, 1]),
         vi("end", TensorProto.INT64, [])],
        [vi("ys", TensorProto.INT64, [1, "L"]), vi("scores", TensorProto.FLOAT, ["N"])],
        [init("embedding", embedding), init("projection", projection)])
    model = make_model(graph)
    start = 5  # decodes 6, 9, 9, 9, 7, 9: tokens that change, and repeat
    full, _ = _ref_decoder(embedding, projection, 6, start, -1)
    cases = [(6, start, int(full[0, 2])),  # stops early, at its end token (the second decoded)
             (6, start, DEC_VOCAB),        # never meets its end token: the full six steps
             (0, 4, 0)]                    # no step: the start token alone
    sets = []
    for max_len, start, end in cases:
        ys, scores = _ref_decoder(embedding, projection, max_len, start, end)
        sets.append(({"max_len": np.array(max_len, np.int64), "start": np.array([[start]], np.int64),
                      "end": np.array(end, np.int64)}, {"ys": ys, "scores": scores}))
    lengths = [s[1]["ys"].shape[1] for s in sets]
    return save_model("loop_growing_state", model, sets,
                      f"greedy decoder, a carried token history that grows; lengths per set {lengths}")


# ----------------------------------------------------------------------------------------------
# if_different_shapes: then -> [2,3], else -> [6]

def build_if_different_shapes(rng):
    then_g = helper.make_graph(
        [const_node("one", f32(1.0)),
         const_node("shape_2x3", np.array([2, 3], np.int64)),
         helper.make_node("Add", ["x", "one"], ["x_plus_1"], name="add_one"),
         helper.make_node("Reshape", ["x_plus_1", "shape_2x3"], ["then_out"], name="reshape")],
        "then_branch", [], [vi("then_out", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph(
        [const_node("two", f32(2.0)),
         helper.make_node("Mul", ["x", "two"], ["else_out"], name="mul_two")],
        "else_branch", [], [vi("else_out", TensorProto.FLOAT, [6])])
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g,
                          else_branch=else_g)],
        "if_different_shapes",
        [vi("x", TensorProto.FLOAT, [6]), vi("cond", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, None)])     # rank differs per branch: no static shape
    model = make_model(graph)
    sets = []
    for cond in (True, False):
        x = f32(rng.standard_normal(6))
        y = (x + 1.0).reshape(2, 3) if cond else x * 2.0
        sets.append(({"x": x, "cond": np.array(cond)}, {"y": f32(y)}))
    return save_model("if_different_shapes", model, sets, "If output [2,3] vs [6]")


# ----------------------------------------------------------------------------------------------
# capture_two_levels: main value used two levels down; a shadowing subgraph input wins

def build_capture_two_levels(rng):
    # Loop body: its carried input is named "shadow", like a main-graph value; it also reads
    # "outer_val" straight from the main graph (main -> If then-branch -> Loop body).
    body = helper.make_graph(
        [helper.make_node("Add", ["shadow", "outer_val"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["c_in"], ["c_out"], name="pass_cond")],
        "loop_body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("shadow", TensorProto.FLOAT, [4])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [4])])
    then_g = helper.make_graph(
        [const_node("trip", np.array(3, np.int64)),
         helper.make_node("Loop", ["trip", "", "x"], ["then_out"], name="loop", body=body)],
        "then_branch", [], [vi("then_out", TensorProto.FLOAT, [4])])
    # else-branch: reads "outer_val" one level up. (A node output named like an outer value is
    # invalid ONNX -- IR.md: node outputs in a nested subgraph MUST be distinct from visible outer
    # names -- so that case lives in bad/shadow_node_output.onnx instead.)
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["outer_val", "x"], ["else_out"], name="else_sub")],
        "else_branch", [], [vi("else_out", TensorProto.FLOAT, [4])])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "three"], ["outer_val"], name="outer_mul"),
         helper.make_node("Add", ["x", "hundred"], ["shadow"], name="outer_shadow"),
         helper.make_node("If", ["cond"], ["if_out"], name="if", then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Add", ["if_out", "shadow"], ["y"], name="final_add")],
        "capture_two_levels",
        [vi("x", TensorProto.FLOAT, [4]), vi("cond", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, [4])],
        [init("three", f32(3.0)), init("hundred", f32(100.0))])
    model = make_model(graph)

    def ref(x, cond):
        x = x.astype(np.float64)
        outer_val = x * 3.0
        shadow = x + 100.0
        if cond:
            acc = x
            for _ in range(3):
                acc = acc + outer_val      # inner "shadow" is the carried value, not x + 100
            r = acc                        # = 10x; wrong scoping would give 4x + 100
        else:
            r = outer_val - x              # = 2x
        return {"y": f32(r + shadow)}

    sets = []
    for cond in (True, False):
        x = f32(rng.standard_normal(4))
        sets.append(({"x": x, "cond": np.array(cond)}, ref(x, cond)))
    return save_model("capture_two_levels", model, sets,
                      "main value read in If->Loop body; Loop input 'shadow' shadows main's")


# ----------------------------------------------------------------------------------------------
# scan_sum: Scan (opset 9+ form) running sums over a [5,3] sequence

def build_scan_sum(rng):
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "next"], ["sum_out"], name="add"),
         helper.make_node("Identity", ["sum_out"], ["scan_out"], name="emit")],
        "scan_body",
        [vi("sum_in", TensorProto.FLOAT, [3]), vi("next", TensorProto.FLOAT, [3])],
        [vi("sum_out", TensorProto.FLOAT, [3]), vi("scan_out", TensorProto.FLOAT, [3])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["initial", "x"], ["y", "z"], name="scan",
                          num_scan_inputs=1, body=body)],
        "scan_sum",
        [vi("initial", TensorProto.FLOAT, [3]), vi("x", TensorProto.FLOAT, [5, 3])],
        [vi("y", TensorProto.FLOAT, [3]), vi("z", TensorProto.FLOAT, [5, 3])])
    model = make_model(graph)
    init_v = f32(rng.standard_normal(3))
    x = f32(rng.standard_normal((5, 3)))
    z = init_v.astype(np.float64) + np.cumsum(x.astype(np.float64), axis=0)
    return save_model("scan_sum", model,
                      [({"initial": init_v, "x": x}, {"y": f32(z[-1]), "z": f32(z)})],
                      "Scan over [5,3], carried [3] + scan output [5,3]")


# ----------------------------------------------------------------------------------------------
# tiny_mlp: a plain model

def build_tiny_mlp(rng):
    w1 = f32(rng.standard_normal((64, 32)) * 0.2)
    b1 = f32(rng.standard_normal(32) * 0.1)
    w2 = f32(rng.standard_normal((32, 10)) * 0.2)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
         helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
         helper.make_node("Relu", ["hb"], ["hr"], name="relu1"),
         helper.make_node("MatMul", ["hr", "w2"], ["logits"], name="fc2"),
         helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1)],
        "tiny_mlp",
        [vi("x", TensorProto.FLOAT, [1, 64])],
        [vi("probs", TensorProto.FLOAT, [1, 10])],
        [init("w1", w1), init("b1", b1), init("w2", w2)])
    model = make_model(graph)
    x = f32(rng.standard_normal((1, 64)))
    h = ref_relu(x.astype(np.float64) @ w1 + b1)
    probs = ref_softmax(h @ w2)
    return save_model("tiny_mlp", model, [({"x": x}, {"probs": f32(probs)})],
                      "MatMul-Add-Relu-MatMul-Softmax, [1,64]")


# ----------------------------------------------------------------------------------------------
# cnn_stem: a CNN's first layers, which a budget runs in patches (tiles of rows)

def ref_max_pool(x, k, stride):
    n, c, h, w = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = np.full((n, c, oh, ow), -np.inf)
    for ky in range(k):
        for kx in range(k):
            out = np.maximum(out, x[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride])
    return out


def build_cnn_stem(rng):
    w1 = f32(rng.standard_normal((16, 3, 3, 3)) * 0.3)
    b1 = f32(rng.standard_normal(16) * 0.1)
    w2 = f32(rng.standard_normal((16, 16, 3, 3)) * 0.1)
    b2 = f32(rng.standard_normal(16) * 0.1)
    w3 = f32(rng.standard_normal((32, 16, 1, 1)) * 0.2)
    b3 = f32(rng.standard_normal(32) * 0.1)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
         helper.make_node("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p", "w3", "b3"], ["c3"], name="conv3"),
         helper.make_node("GlobalAveragePool", ["c3"], ["y"], name="gap")],
        "cnn_stem",
        [vi("x", TensorProto.FLOAT, [1, 3, 96, 96])],
        [vi("y", TensorProto.FLOAT, [1, 32, 1, 1])],
        [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2), init("w3", w3), init("b3", b3)])
    model = make_model(graph)
    x = f32(rng.standard_normal((1, 3, 96, 96)))
    r1 = ref_relu(ref_conv(x, w1, b1, strides=(2, 2)))
    r2 = ref_relu(ref_conv(r1, w2, b2))
    c3 = ref_conv(ref_max_pool(r2, 2, 2), w3, b3, pads=(0, 0, 0, 0))
    y = c3.mean(axis=(2, 3), keepdims=True)
    return save_model("cnn_stem", model, [({"x": x}, {"y": f32(y)})],
                      "Conv s2-Relu-Conv-Relu-MaxPool-Conv 1x1-GlobalAveragePool on [1,3,96,96]: --max-arena runs its first layers in patches")


# ----------------------------------------------------------------------------------------------
# bad inputs

def relu_model(shape, opset=OPSET, name="relu"):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], name,
        [vi("x", TensorProto.FLOAT, shape)], [vi("y", TensorProto.FLOAT, shape)])
    return make_model(graph, opset=opset)


def bad(path, data, note):
    write_bytes(f"bad/{path}", data)
    summary.append((f"bad/{path}", len(data), note))


def build_deep_if(depth):
    """If nested `depth` levels deep; the innermost then-branch returns a constant.

    Built bottom-up (no Python recursion). Every level's else-branch returns its own constant,
    all levels read the main-graph input "cond" (a capture from up to `depth` levels up).
    """
    def const_graph(gname, out, value):
        return helper.make_graph([const_node(out, f32([value]))], gname, [],
                                 [vi(out, TensorProto.FLOAT, [1])])

    inner = const_graph("innermost", "innermost_out", 1000.0)
    inner_out = "innermost_out"
    for level in range(depth, 1, -1):   # If nodes at levels depth..2 live inside branches
        out = f"if{level}_out"
        node = helper.make_node("If", ["cond"], [out], name=f"if{level}",
                                then_branch=inner,
                                else_branch=const_graph(f"else{level}", f"else{level}_out",
                                                        float(level)))
        inner = helper.make_graph([node], f"then{level - 1}", [],
                                  [vi(out, TensorProto.FLOAT, [1])])
        inner_out = out
    node = helper.make_node("If", ["cond"], ["y"], name="if1", then_branch=inner,
                            else_branch=const_graph("else1", "else1_out", 1.0))
    graph = helper.make_graph([node], "deep_if", [vi("cond", TensorProto.BOOL, [])],
                              [vi("y", TensorProto.FLOAT, [1])])
    del inner_out
    return make_model(graph)


def build_bad(rng, example_model):
    bad("random_bytes.onnx", rng.bytes(4096), "4 KiB of seeded random bytes")

    ex = example_model.SerializeToString()
    bad("truncated.onnx", ex[:len(ex) // 2], f"example model cut to {len(ex) // 2} of {len(ex)} bytes")

    # cycle: a_out = Add(x, b_out); b_out = Relu(a_out). Built by hand, never checked.
    g = onnx.GraphProto(name="cycle")
    g.node.extend([helper.make_node("Add", ["x", "b_out"], ["a_out"], name="A"),
                   helper.make_node("Relu", ["a_out"], ["b_out"], name="B")])
    g.input.extend([vi("x", TensorProto.FLOAT, [4])])
    g.output.extend([vi("a_out", TensorProto.FLOAT, [4])])
    bad("cycle.onnx", make_model(g).SerializeToString(), "two nodes feeding each other")

    g = onnx.GraphProto(name="dangling_input")
    g.node.extend([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add_nowhere")])
    g.input.extend([vi("x", TensorProto.FLOAT, [4])])
    g.output.extend([vi("y", TensorProto.FLOAT, [4])])
    bad("dangling_input.onnx", make_model(g).SerializeToString(),
        "node input 'nowhere' that nothing produces")

    g = helper.make_graph(
        [helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.example.unknown")],
        "unknown_domain", [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])])
    m = make_model(g, extra_opsets=[helper.make_opsetid("com.example.unknown", 1)])
    bad("unknown_domain.onnx", m.SerializeToString(), "op Foo in domain com.example.unknown")

    bad("opset24.onnx", relu_model([4], opset=24, name="opset24").SerializeToString(),
        "valid Relu model declaring ai.onnx opset 24, newer than the opset adapter knows")

    # IR 9's float8: an initializer of element type FLOAT8E4M3FN (17), one byte per element
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w8"], ["y"], name="add_w8")], "float8",
        [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])],
        [TensorProto(name="w8", data_type=17, dims=[4], raw_data=bytes(4))])
    m = make_model(g, opset=19)
    m.ir_version = 9
    bad("float8.onnx", m.SerializeToString(), "an IR 9, opset 19 model with a float8e4m3fn initializer")

    # ReduceMean-18 whose axes are computed at run time (a graph input), and one with float axes
    g = helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean_runtime_axes")], "reduce_runtime_axes",
        [vi("x", TensorProto.FLOAT, [2, 3]), vi("axes", TensorProto.INT64, [1])], [vi("y", TensorProto.FLOAT, None)])
    bad("reduce_runtime_axes.onnx", make_model(g, opset=18).SerializeToString(),
        "ReduceMean-18 with its axes a graph input")
    g = helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean_float_axes")], "reduce_float_axes",
        [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1.0], dtype=np.float32), "axes")])
    bad("reduce_float_axes.onnx", make_model(g, opset=18).SerializeToString(),
        "ReduceMean-18 with float32 axes")

    bad("negative_dim.onnx", relu_model([-5, 3], name="negative_dim").SerializeToString(),
        "input dim_value -5")

    bad("overflow_dims.onnx",
        relu_model([2 ** 40, 2 ** 40, 16], name="overflow_dims").SerializeToString(),
        "input [2^40, 2^40, 16] float: byte size overflows 64 bits")

    deep = build_deep_if(1000)
    data = deep.SerializeToString()
    note = "If nested 1000 levels deep (then-branches), constants at the bottom"
    try:
        back = onnx.ModelProto()
        back.ParseFromString(data)
        note += "; python protobuf parses it back"
    except Exception as e:  # noqa: BLE001
        note += f"; python protobuf cannot parse it back ({type(e).__name__})"
    bad("deep_if_1000.onnx", data, note)

    # external data whose location climbs out of the model's folder
    t = numpy_helper.from_array(f32(np.zeros(4)), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../secret.bin"), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")], "external_outside",
        [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])], [t])
    bad("external_outside/model.onnx", make_model(g).SerializeToString(),
        "initializer 'w' with external data location ../../secret.bin (file not provided)")

    # a subgraph node output with the name of a main-graph value: IR.md forbids it, onnx's
    # checker rejects it (SSA); a tool must reject it or resolve inner uses to the inner value.
    else_g = helper.make_graph(
        [const_node("minus_one", f32(-1.0)),
         helper.make_node("Mul", ["x", "minus_one"], ["outer_val"], name="else_local"),
         helper.make_node("Sub", ["outer_val", "x"], ["else_out"], name="else_sub")],
        "else_branch", [], [vi("else_out", TensorProto.FLOAT, [4])])
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["outer_val"], ["then_out"], name="then_id")],
        "then_branch", [], [vi("then_out", TensorProto.FLOAT, [4])])
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "three"], ["outer_val"], name="outer_mul"),
         helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g,
                          else_branch=else_g)],
        "shadow_node_output",
        [vi("x", TensorProto.FLOAT, [4]), vi("cond", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, [4])], [init("three", f32(3.0))])
    bad("shadow_node_output.onnx", make_model(g).SerializeToString(),
        "If else-branch node output 'outer_val' redefines a main-graph value (not SSA)")

    bad("symbolic_dim.onnx", relu_model(["N", 3], name="symbolic_dim").SerializeToString(),
        "input shape [N, 3], N unset (needs a bound or a concrete input)")


# ----------------------------------------------------------------------------------------------

def main():
    # one generator per model, so adding a model does not change the others' data
    example = build_example(np.random.default_rng([SEED, 1]))
    build_nested_if_loop_if(np.random.default_rng([SEED, 2]))
    build_loop_scan_outputs(np.random.default_rng([SEED, 3]))
    build_loop_data_dependent_exit(np.random.default_rng([SEED, 4]))
    build_loop_data_dependent_scan(np.random.default_rng([SEED, 4]))
    build_loop_growing_state(np.random.default_rng([SEED, 10]))
    build_if_different_shapes(np.random.default_rng([SEED, 5]))
    build_capture_two_levels(np.random.default_rng([SEED, 6]))
    build_scan_sum(np.random.default_rng([SEED, 7]))
    build_tiny_mlp(np.random.default_rng([SEED, 8]))
    build_cnn_stem(np.random.default_rng([SEED, 11]))
    build_bad(np.random.default_rng([SEED, 9]), example)

    if CHECK_ONLY:
        if changed:
            print("out of date:\n  " + "\n  ".join(changed))
            return 1
        print("all generated files are up to date")
        return 0

    w = max(len(n) for n, _, _ in summary)
    print(f"{'name':<{w}}  {'bytes':>9}  notes")
    for n, b, note in summary:
        print(f"{n:<{w}}  {b:>9}  {note}")
    print(f"{'total (models/)':<{w}}  {dir_bytes('.'):>9}")
    print(f"{len(changed)} file(s) written, the rest unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
