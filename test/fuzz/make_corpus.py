#!/usr/bin/python3
"""(Re)make the fuzz targets' seed corpora under test/fuzz/corpus/<target>/.

    /usr/bin/python3 test/fuzz/make_corpus.py --cli build/tools/memplan --conformance build/conformance

Seeds (kept small, < 2 MB in all):
  fuzz_onnx  the small models in models/, models/bad and models/opsets (not example/ or deep_if_1000: large
             seeds slow every input down), a few ONNX node tests (tools/gen_conformance.sh), and
             hand-made hostile models (the shapes of issue 14's findings).
  fuzz_npy   the .npy inputs of models/ plus every dtype, 0-d, empty, header versions 2.0 and 3.0.
  fuzz_plan  plans `memplan compile -o` makes for the small models fuzz_plan verifies against,
             whole (magic, length, payload, checksum) and as bare payloads (the harness adds the
             header and the checksum to any input that does not start with the magic).
Every input under test/fuzz/findings/<target>/ (one that once crashed the target) is a seed too.
Needs Debian's python3-onnx and python3-numpy only. Deterministic: a rerun writes the same bytes.
"""

import argparse
import io
import os
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")

SMALL_MODELS = ["tiny_mlp", "scan_sum", "loop_scan_outputs", "nested_if_loop_if", "capture_two_levels",
                "if_different_shapes", "loop_data_dependent_exit", "loop_data_dependent_scan", "loop_growing_state",
                "sequence_list"]
BAD_MODELS = ["cycle.onnx", "dangling_input.onnx", "negative_dim.onnx", "opset24.onnx", "float8.onnx", "reduce_runtime_axes.onnx", "reduce_float_axes.onnx", "overflow_dims.onnx",
              "random_bytes.onnx", "shadow_node_output.onnx", "symbolic_dim.onnx", "truncated.onnx",
              "unknown_domain.onnx", "external_outside/model.onnx"]
NODE_TESTS = ["test_sequence_insert_at_back", "test_loop13_seq", "test_if_seq", "test_optional_get_element_sequence",
              "test_optional_has_element_empty", "test_conv_with_strides_padding", "test_convinteger_with_padding", "test_convtranspose",
              "test_layer_normalization_4d_axis1", "test_scan9_sum", "test_loop11", "test_if", "test_gather_0",
              "test_reshape_reordered_all_dims", "test_slice", "test_resize_upsample_scales_nearest",
              "test_maxpool_2d_pads", "test_averagepool_2d_same_upper", "test_batchnorm_example",
              "test_gemm_default_matrix_bias", "test_matmul_2d", "test_softmax_axis_1", "test_transpose_default",
              "test_concat_2d_axis_0", "test_split_equal_parts_1d", "test_expand_dim_changed",
              "test_range_float_type_positive_delta_expanded", "test_nonzero_example", "test_compress_0",
              "test_constantofshape_int_zeros", "test_where_example", "test_reduce_sum_keepdims_example",
              "test_cast_FLOAT_to_FLOAT16", "test_tile", "test_einsum_batch_matmul", "test_lrn",
              "test_instancenorm_example", "test_argmax_default_axis_example", "test_squeeze",
              "test_unsqueeze_axis_0", "test_scan_sum", "test_tfidfvectorizer_tf_uniandbigrams_skip5"]
# Models fuzz_plan verifies plans against (test/fuzz/fuzz_plan.cpp lists the same).
# ai.onnx 18-23 models of models/opsets: the opset adapter's rewrites (axes inputs, num_outputs,
# Pad axes, Resize policies) and memplan's own ops, in graphs and subgraphs.
OPSET_MODELS = ["reduce_axes_forms_18", "split_num_outputs_18", "pad_axes_18", "resize_18", "dft_20",
                "control_flow_21", "transformer_block_20", "bitwise_18", "groupnorm_21", "qdq_21", "deformconv_19",
                "attention_kv_23", "lppool_18", "averagepool_19", "resize_antialias_18"]
PLAN_MODELS = ["tiny_mlp", "scan_sum", "loop_scan_outputs", "nested_if_loop_if", "capture_two_levels",
               "loop_growing_state", "cnn_stem"]
# Compile options of a plan seed: cnn_stem's budget runs its first layers in patches (a patch region).
PLAN_OPTIONS = {"cnn_stem": ["--max-arena", "200000"]}
# More seeds of a model, other options: (seed name, model, options). Preferring speed, cnn_stem's
# 3x3 convolution runs Winograd's kernel (on AVX-512: the plan records it).
PLAN_VARIANTS = [("cnn_stem_speed", "cnn_stem", ["--prefer", "speed"])]


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model_bytes(graph, opset=17):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="fuzz-seed")
    m.ir_version = 8
    return m.SerializeToString()


def hostile_models():
    """Small models in the shapes of issue 14's findings, so the fuzzer starts next to them."""
    out = {}
    # Finding 1: a Scan whose scan output nothing reads.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="add"),
         helper.make_node("Identity", ["s_out"], ["y_t"], name="emit")],
        "body", [vi("s_in", TensorProto.FLOAT, [3]), vi("x_t", TensorProto.FLOAT, [3])],
        [vi("s_out", TensorProto.FLOAT, [3]), vi("y_t", TensorProto.FLOAT, [3])])
    out["scan_unread_scan_output.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", num_scan_inputs=1, body=body)],
        "scan_unread", [vi("s0", TensorProto.FLOAT, [3]), vi("xs", TensorProto.FLOAT, [4, 3])],
        [vi("s", TensorProto.FLOAT, [3])]))
    # memplan's own patch-chain op in a model: it has no layers of its own there.
    out["memplan_patch_chain_op.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("memplan.PatchChain", ["x"], ["y"], name="fake", tile_rows=2)],
        "fake_patches", [vi("x", TensorProto.FLOAT, [1, 3, 8, 8])], [vi("y", TensorProto.FLOAT, [1, 3, 8, 8])]))
    # Finding 2: two nodes of the same name.
    out["same_node_names.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="n"), helper.make_node("Relu", ["a"], ["b"], name="n")],
        "same_names", [vi("x", TensorProto.FLOAT, [2, 3])], [vi("b", TensorProto.FLOAT, [2, 3])]))
    # Findings 3-5: Conv weight rank, ConvTranspose rank-2 weight, LayerNormalization axis.
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [1.0] * 9)
    out["conv_3x3.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        "conv", [vi("x", TensorProto.FLOAT, [1, 1, 8, 8])], [vi("y", TensorProto.FLOAT, None)], [w]))
    out["convtranspose_3x3.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="convt", strides=[2, 2])],
        "convt", [vi("x", TensorProto.FLOAT, [1, 1, 4, 4])], [vi("y", TensorProto.FLOAT, None)], [w]))
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [3], [1.0, 1.0, 1.0])
    out["layernorm_three_outputs.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv_std"], name="ln", axis=-1)],
        "ln", [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, None)], [scale]))
    # Transposes between NCHW and NHWC around convolutions: channels-last views
    # (ir/layout_transpose.h). The fuzzer's mutations of perm, rank and shapes land beside them.
    wd = helper.make_tensor("wd", TensorProto.FLOAT, [16, 1, 3, 3], [0.1] * 144)
    out["nhwc_transposes_as_views.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("Conv", ["x", "wd"], ["d"], name="depthwise", pads=[1, 1, 1, 1], group=16),
         helper.make_node("Transpose", ["d"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Softmax", ["t"], ["s"], name="softmax", axis=-1),
         helper.make_node("Transpose", ["s"], ["u"], name="to_nchw", perm=[0, 3, 1, 2]),
         helper.make_node("Add", ["u", "d"], ["sum"], name="residual"),
         helper.make_node("Conv", ["sum", "wd"], ["y"], name="last", pads=[1, 1, 1, 1], group=16)],
        "nhwc_views", [vi("x", TensorProto.FLOAT, [1, 16, 4, 4])], [vi("y", TensorProto.FLOAT, [1, 16, 4, 4])], [wd]))
    # A weight large enough to be read out of line (onnx/inline_weights.h: 64 KiB or more of
    # raw_data), whole and cut inside its bytes.
    big = helper.make_tensor("w", TensorProto.FLOAT, [128, 128],
                             np.linspace(-1, 1, 128 * 128, dtype=np.float32).tobytes(), raw=True)
    whole = model_bytes(helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)],
        "fc", [vi("x", TensorProto.FLOAT, [1, 128])], [vi("y", TensorProto.FLOAT, [1, 128])], [big]))
    # Loop state whose shape changes across iterations: a carried value that grows by appending,
    # one whose rank grows each iteration (past memplan's largest rank on long runs), one that shrinks.
    def carried_loop(name, node, extra_inits):
        body = helper.make_graph(
            [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"), node],
            "body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("x_in", TensorProto.FLOAT, None)],
            [vi("c_out", TensorProto.BOOL, []), vi("x_out", TensorProto.FLOAT, None)])
        return model_bytes(helper.make_graph(
            [helper.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body)], name,
            [vi("n", TensorProto.INT64, []), vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, None)],
            extra_inits))
    out["loop_state_grows.onnx"] = carried_loop(
        "grows", helper.make_node("Concat", ["x_in", "x"], ["x_out"], name="append", axis=0), [])
    out["loop_rank_grows.onnx"] = carried_loop(
        "rank", helper.make_node("Unsqueeze", ["x_in", "axes"], ["x_out"], name="lift"),
        [helper.make_tensor("axes", TensorProto.INT64, [1], [0])])
    out["loop_state_shrinks.onnx"] = carried_loop(
        "shrinks", helper.make_node("Slice", ["x_in", "one", "big"], ["x_out"], name="drop_first"),
        [helper.make_tensor("one", TensorProto.INT64, [1], [1]), helper.make_tensor("big", TensorProto.INT64, [1], [99])])
    # A list built in a loop (an ONNX sequence, read as the Loop's scan output) and stacked.
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
         helper.make_node("SequenceInsert", ["list_in", "x"], ["list_out"], name="append")],
        "body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
                 helper.make_value_info("list_in", seq)],
        [vi("c_out", TensorProto.BOOL, []), helper.make_value_info("list_out", seq)])
    out["loop_built_list.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("SequenceEmpty", [], ["empty"], name="empty", dtype=TensorProto.FLOAT),
         helper.make_node("Loop", ["n", "", "empty"], ["list"], name="loop", body=body),
         helper.make_node("ConcatFromSequence", ["list"], ["y"], name="stack", axis=0, new_axis=1)],
        "list", [vi("n", TensorProto.INT64, []), vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, None)]))
    out["out_of_line_weight.onnx"] = whole
    out["out_of_line_weight_cut.onnx"] = whole[:len(whole) // 2]
    # Weights as Constant nodes (Paddle2ONNX's, tf2onnx's), one of them in an If branch: read out
    # of line too, through nodes, attributes and subgraphs.
    cw = helper.make_tensor("cw", TensorProto.FLOAT, [128, 128],
                            np.linspace(-1, 1, 128 * 128, dtype=np.float32).tobytes(), raw=True)
    cv = helper.make_tensor("cv", TensorProto.FLOAT, [128, 128],
                            np.linspace(1, -1, 128 * 128, dtype=np.float32).tobytes(), raw=True)
    then_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["cv"], name="weights_in_branch", value=cv),
         helper.make_node("MatMul", ["h", "cv"], ["t"], name="fc2")],
        "then", [], [vi("t", TensorProto.FLOAT, [1, 128])])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["h"], ["e"], name="same")], "else", [], [vi("e", TensorProto.FLOAT, [1, 128])])
    out["constant_weights_in_branch.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("Constant", [], ["cw"], name="weights", value=cw),
         helper.make_node("MatMul", ["x", "cw"], ["h"], name="fc"),
         helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_branch, else_branch=else_branch)],
        "constants", [vi("x", TensorProto.FLOAT, [1, 128]), vi("c", TensorProto.BOOL, [])],
        [vi("y", TensorProto.FLOAT, [1, 128])]))
    # An upsampling ConvTranspose (kernel = stride: runtime/kernels/dnnl/tiled_deconv.h) with the
    # bias Add, batch norm and Relu it takes in.
    c = 4
    up_inits = [helper.make_tensor("uw", TensorProto.FLOAT, [c, c, 2, 2], [0.1] * (c * c * 4)),
                helper.make_tensor("shift", TensorProto.FLOAT, [1, c, 1, 1], [0.5] * c)]
    up_inits += [helper.make_tensor(n, TensorProto.FLOAT, [c], [v] * c)
                 for n, v in (("gamma", 1.0), ("beta", 0.0), ("mean", 0.0), ("var", 1.0))]
    out["upsampling_conv_transpose.onnx"] = model_bytes(helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "uw"], ["u"], name="up", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Add", ["u", "shift"], ["a"], name="bias"),
         helper.make_node("BatchNormalization", ["a", "gamma", "beta", "mean", "var"], ["b"], name="bn"),
         helper.make_node("Relu", ["b"], ["y"], name="relu")],
        "upsampling", [vi("x", TensorProto.FLOAT, [1, c, 3, 5])], [vi("y", TensorProto.FLOAT, [1, c, 6, 10])],
        up_inits))
    return out


def npy_bytes(a, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a, allow_pickle=False)
    else:
        np.lib.format.write_array(buf, a, version=version, allow_pickle=False)
    return buf.getvalue()


def npy_seeds():
    out = {}
    rng = np.random.default_rng(14)
    for code in ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]:
        out[f"{code}_2x3.npy"] = npy_bytes((rng.standard_normal((2, 3)) * 10).astype("<" + code))
    out["b1_4.npy"] = npy_bytes(np.array([True, False, True, True]))
    out["f4_scalar.npy"] = npy_bytes(np.float32(1.5))
    out["f4_empty.npy"] = npy_bytes(np.zeros((0, 3), np.float32))
    out["f4_v2.npy"] = npy_bytes(np.ones((2, 2), np.float32), version=(2, 0))
    out["f4_v3.npy"] = npy_bytes(np.ones((3,), np.float32), version=(3, 0))
    out["f4_fortran.npy"] = npy_bytes(np.asfortranarray(np.ones((2, 3), np.float32)))
    out["f4_bigendian.npy"] = npy_bytes(np.ones((2,), ">f4"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True, help="the memplan CLI (build/tools/memplan)")
    ap.add_argument("--conformance", required=True, help="tools/gen_conformance.sh's output folder")
    args = ap.parse_args()
    shutil.rmtree(CORPUS, ignore_errors=True)
    # Inputs that once crashed a target (test/fuzz/findings/<target>/) stay seeds of it.
    for target in sorted(os.listdir(os.path.join(HERE, "findings"))):
        for name in sorted(os.listdir(os.path.join(HERE, "findings", target))):
            write(target, name, read(os.path.join(HERE, "findings", target, name)))

    for name in SMALL_MODELS:
        write("fuzz_onnx", f"{name}.onnx", read(os.path.join(ROOT, "models", name, "model.onnx")))
    for name in BAD_MODELS:
        write("fuzz_onnx", "bad_" + name.replace("/", "_"), read(os.path.join(ROOT, "models", "bad", name)))
    for name in OPSET_MODELS:
        write("fuzz_onnx", f"opsets_{name}.onnx", read(os.path.join(ROOT, "models", "opsets", name, "model.onnx")))
    for name in NODE_TESTS:
        write("fuzz_onnx", f"{name}.onnx", read(os.path.join(args.conformance, "node", name, "model.onnx")))
    for name, data in hostile_models().items():
        write("fuzz_onnx", "hostile_" + name, data)

    for name in ["tiny_mlp", "scan_sum", "loop_data_dependent_exit", "nested_if_loop_if"]:
        d = os.path.join(ROOT, "models", name, "test_data_set_0", "inputs")
        for f in sorted(os.listdir(d)):
            write("fuzz_npy", f"{name}_{f}", read(os.path.join(d, f)))
    for name, data in npy_seeds().items():
        write("fuzz_npy", name, data)

    tmp = os.path.join(CORPUS, "tmp.mplan")
    for name, model, options in [(m, m, PLAN_OPTIONS.get(m, [])) for m in PLAN_MODELS] + PLAN_VARIANTS:
        subprocess.run([args.cli, "compile", os.path.join(ROOT, "models", model, "model.onnx"), "-o", tmp] + options,
                       check=True, stdout=subprocess.DEVNULL)
        whole = read(tmp)
        os.remove(tmp)
        write("fuzz_plan", f"{name}.mplan", whole)
        n = int.from_bytes(whole[8:16], "little")
        write("fuzz_plan", f"{name}.payload", whole[16:16 + n])

    total = 0
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        total += size
        print(f"{target}: {len(files)} seeds, {size} bytes")
    print(f"total {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
