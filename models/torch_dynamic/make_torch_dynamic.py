#!/usr/bin/python3
"""Export small real PyTorch models whose ONNX graphs have run-time sizes, with ONNX Runtime's
outputs as expected.

    /usr/bin/python3 models/torch_dynamic/make_torch_dynamic.py           # (re)write everything
    /usr/bin/python3 models/torch_dynamic/make_torch_dynamic.py --memplan /tmp/memplan
                                                # ... and also run that memplan binary on each set
    /usr/bin/python3 models/torch_dynamic/make_torch_dynamic.py scripted_list_ops   # only those named

Needs Debian's python3-torch (1.13), python3-torchvision (0.14), python3-torchaudio (0.13),
python3-onnx (1.12) and python3-numpy, plus node with onnxruntime-node for the expected outputs:
NODE_PATH (default <repo>/build/bench/node_modules, where tools/benchmark.sh installs it) must
hold it. ONNX Runtime is run by models/torch_decoders/run_ort.js.
Fixed seeds; a file is rewritten only when its bytes change. Random weights, tiny dimensions,
torch.onnx.export at opset 17 (traced, unless said otherwise below).

  conformer_masks         inputs  x [2,T,16] f32 (T dynamic), lengths [2] i64
                          outputs y [2,T,16] f32, out_lengths [2] i64
      torchaudio.models.Conformer(input_dim 16, 2 heads, ffn 32, 1 layer, depthwise kernel 3),
      called as conformer(x, lengths); the key padding mask is built from lengths in the graph.
      torchaudio 0.13's _lengths_to_padding_mask takes int(torch.max(lengths).item()), which
      tracing freezes to the example's 10: that export runs at T=10 but ONNX Runtime fails at
      T=6 ("Reshape node /conformer_layers.0/self_attn/Reshape_3 ... Input shape:{2,10},
      requested shape:{2,1,1,6}"), and torch.jit.script of the Conformer does not export
      ("ScalarType UNKNOWN_SCALAR is an unexpected tensor scalar type", in prim_if). So the
      function is replaced, for the export only, by the same computation kept as a tensor:
      arange(max(lengths)).expand(B, -1) >= lengths[:, None] (ReduceMax -> Range: the mask's
      length is a value computed at run time). The eager outputs with the original function
      are checked to be identical. Sets: T=10 with lengths [10, 7]; T=6 with lengths [6, 3].

  swin_dropout0           input   x [1,8,8,16] f32          output  y [1,8,8,16] f32
      A Swin stage of two torchvision.models.swin_transformer.SwinTransformerBlock (dim 16,
      2 heads, window 4x4, shift 0 then 2), eval mode, exported unchanged. torchvision 0.14's
      shifted_window_attention calls F.dropout(attn, p=attention_dropout) and
      F.dropout(x, p=dropout) without training=, so training is True even in eval mode and
      each becomes an ONNX Dropout with ratio 0.0 and training_mode true (4 nodes; their mask
      outputs are unused). The script checks that. Two sets of random input.

  scripted_list_loop      inputs  x [2,3] f32, n [] i64
                          outputs stacked [n,2,3] f32, concatenated [2n,3] f32
      torch.jit.script of: out = []; for i in range(n): out.append(x * i + 1); then
      torch.stack(out) and torch.cat(out), each behind `if len(out) > 0` (else an empty
      tensor of the right rank). Exports as SequenceEmpty, a Loop whose body does
      SequenceInsert, then SequenceLength/Greater/If with ConcatFromSequence (new_axis 1 for
      stack, 0 for cat) in the then-branch. Sets: n = 3 and n = 0.

  scripted_list_ops       inputs  x [2,3] f32, n [] i64
                          outputs total [k,3] f32, second [2,2] f32
      torch.jit.script of a list used as a list: out = []; for i in range(n): out.append(x * i
      + 1), and out.pop(0) once it holds three; then out.insert(0, x.sin()), torch.cat(out), and
      torch.split(x, [1, 2], dim=1)[1] * 2. Exports as a Loop carrying a sequence (SequenceInsert,
      and SequenceErase in an If), SequenceInsert at position 0, SplitToSequence with sizes,
      ConcatFromSequence and SequenceAt: no scan output can stand for this list, so it runs as
      an ONNX sequence. Sets: n = 4 (k = 6), n = 1 (k = 4), n = 0 (k = 2).

  stft_frontend           input   x [2,N] f32 (N dynamic)    output  mag [2,9,F] f32
      torch.stft(x, n_fft 16, hop 4, hann window, center False, return_complex False), then
      sqrt(re^2 + im^2). torch 1.13 has no ONNX symbolic for aten::stft at any opset
      ("Exporting the operator 'aten::stft' to ONNX opset version 17 is not supported"), and
      torchaudio.transforms.Spectrogram fails the same way (it calls torch.stft). So the script
      registers a custom symbolic for aten::stft (opset 17, for this export only) that emits
      the ONNX STFT operator: Unsqueeze(x, -1) -> STFT(frame_step 4, window, frame_length 16,
      onesided 1) -> Transpose [0,2,1,3] to torch's [B, bins, frames, 2] layout.
      F = (N - 16) / 4 + 1 frames. Sets: N = 64 (13 frames) and N = 40 (7 frames).

  keypoint_rcnn_small     input   image [1,3,160,160] f32
                          outputs boxes [k,4] f32, labels [k] i64, scores [k] f32,
                                  keypoints [k,3,3] f32, keypoints_scores [k,3] f32
      torchvision.models.detection.KeypointRCNN with a 2-conv backbone (stride 8, 8 channels),
      one feature map, anchors of sizes 32 and 64 (ratio 1), RoIAlign 7x7 (boxes) and 14x14
      (keypoints), a TwoMLPHead of 32, 2 classes, keypoint head of two 16-channel convs, 3
      keypoints, min_size = max_size = 160, RPN 50 pre-NMS / 20 post-NMS proposals, at most 5
      detections per image, box_score_thresh 0.01 (so random weights give detections). The
      module is wrapped to take a [1,3,160,160] batch and return a tuple. Data-dependent
      sizes everywhere: TopK, NonMaxSuppression (inside If), NonZero score filtering, RoiAlign
      over k boxes, a Loop over detections (heatmaps to keypoints, Resize inside). Two sets of
      random images (both give k = 5). Exported at opset 15, not 17: torchvision 0.14's
      roi_align symbolic (registered for opset 11) writes RoiAlign without
      coordinate_transformation_mode, which from RoiAlign-16 on defaults to 'half_pixel'
      instead of torch's aligned=False behaviour; at opset 17 ONNX Runtime's pooled box
      features differ from torch's by up to 0.46 and the detected boxes by up to 104 pixels.

Layout as in models/make_models.py: <name>/model.onnx, <name>/test_data_set_K/input_N.pb,
output_N.pb, inputs/<name>.npy, expected/<name>.npy. The expected outputs are ONNX Runtime's
(run_ort.js, graph optimizations disabled, one thread). They are compared with the eager torch
module (int64 outputs must be identical, floats within 1e-4) and with ONNX Runtime at graph
optimization level 'all'; the script fails if any of these disagree. The list loop's eager and
scripted outputs must also be identical.
"""

import io
import os
import sys
from typing import List

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
SEED = 20240618
FLOAT_TOL = 1e-4

sys.path.insert(0, os.path.dirname(HERE))
import torch_fixtures as fx  # noqa: E402  (models/torch_fixtures.py: data sets, ONNX Runtime, memplan)

NAME = os.path.basename(HERE)
write_bytes = fx.folder_writer(NAME)


# ----------------------------------------------------------------------------------------------
# conformer_masks

def traceable_lengths_to_padding_mask(lengths: torch.Tensor) -> torch.Tensor:
    """torchaudio's _lengths_to_padding_mask with the maximum length kept as a tensor."""
    batch_size = lengths.shape[0]
    max_length = torch.max(lengths)
    return torch.arange(max_length, device=lengths.device, dtype=lengths.dtype).expand(
        batch_size, -1) >= lengths.unsqueeze(1)


def make_conformer():
    import torchaudio
    import torchaudio.models.conformer as conformer_mod
    torch.manual_seed(SEED + 1)
    model = torchaudio.models.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=1,
                                        depthwise_conv_kernel_size=3).eval()
    sets = []
    for t, lengths in ((10, [10, 7]), (6, [6, 3])):
        x = torch.randn(2, t, 16)
        sets.append({"x": x, "lengths": torch.tensor(lengths, dtype=torch.int64)})

    original = conformer_mod._lengths_to_padding_mask

    def torch_fn(x, lengths):
        conformer_mod._lengths_to_padding_mask = original
        ref = model(x, lengths)
        conformer_mod._lengths_to_padding_mask = traceable_lengths_to_padding_mask
        try:
            out = model(x, lengths)
        finally:
            conformer_mod._lengths_to_padding_mask = original
        for a, b in zip(ref, out):
            assert torch.equal(a, b), "the traceable padding mask changed the eager outputs"
        return out

    def export():
        conformer_mod._lengths_to_padding_mask = traceable_lengths_to_padding_mask
        try:
            return export_bytes(model, (sets[0]["x"], sets[0]["lengths"]), ["x", "lengths"],
                                ["y", "out_lengths"], {"x": {1: "T"}, "y": {1: "T"}})
        finally:
            conformer_mod._lengths_to_padding_mask = original

    return export, torch_fn, ["x", "lengths"], ["y", "out_lengths"], sets


# ----------------------------------------------------------------------------------------------
# swin_dropout0

def make_swin():
    from torchvision.models.swin_transformer import SwinTransformerBlock
    torch.manual_seed(SEED + 2)
    model = nn.Sequential(SwinTransformerBlock(16, 2, [4, 4], [0, 0]),
                          SwinTransformerBlock(16, 2, [4, 4], [2, 2])).eval()
    sets = [{"x": torch.randn(1, 8, 8, 16)} for _ in range(2)]

    def export():
        return export_bytes(model, (sets[0]["x"],), ["x"], ["y"])

    return export, model, ["x"], ["y"], sets


def check_dropouts(model):
    """Every Dropout must have ratio 0 and training_mode true (constants); returns a summary."""
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in model.graph.node if n.op_type == "Constant"}
    consts.update({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    found = []
    for n in model.graph.node:
        if n.op_type != "Dropout":
            continue
        assert len(n.input) == 3, f"{n.name}: inputs {list(n.input)}"
        ratio, training = (consts[i] for i in n.input[1:])
        assert float(ratio) == 0.0 and bool(training), f"{n.name}: ratio {ratio}, training {training}"
        found.append(f"{n.name}(ratio {float(ratio)}, training_mode {bool(training)}, "
                     f"{len(n.output)} outputs)")
    assert found, "no Dropout node"
    return found


# ----------------------------------------------------------------------------------------------
# scripted_list_loop

class ListLoop(nn.Module):
    def forward(self, x, n):
        out: List[torch.Tensor] = []
        for i in range(int(n)):
            out.append(x * i + 1.0)
        if len(out) > 0:
            stacked = torch.stack(out, 0)
        else:
            stacked = x.new_zeros([0, x.size(0), x.size(1)])
        if len(out) > 0:
            concatenated = torch.cat(out, 0)
        else:
            concatenated = x[:0]
        return stacked, concatenated


def make_list_loop():
    torch.manual_seed(SEED + 3)
    model = ListLoop()
    x = torch.randn(2, 3)
    sets = [{"x": x, "n": torch.tensor(3)}, {"x": x, "n": torch.tensor(0)}]
    scripted = torch.jit.script(model)

    def export():
        return export_bytes(scripted, (x, torch.tensor(3)), ["x", "n"],
                            ["stacked", "concatenated"])

    def torch_fn(x, n):
        out = scripted(x, n)
        ref = model(x, n)
        for a, b in zip(ref, out):
            assert torch.equal(a, b), "eager and scripted differ"
        return out

    return export, torch_fn, ["x", "n"], ["stacked", "concatenated"], sets


# ----------------------------------------------------------------------------------------------
# scripted_list_ops

class ListOps(nn.Module):
    def forward(self, x, n):
        out: List[torch.Tensor] = []
        for i in range(int(n)):
            out.append(x * i + 1.0)
            if len(out) > 2:
                out.pop(0)
        out.insert(0, x.sin())
        pieces = torch.split(x, [1, 2], dim=1)
        return torch.cat(out, 0), pieces[1] * 2.0


def make_list_ops():
    torch.manual_seed(SEED + 5)
    model = ListOps()
    x = torch.randn(2, 3)
    sets = [{"x": x, "n": torch.tensor(n)} for n in (4, 1, 0)]
    scripted = torch.jit.script(model)

    def export():
        return export_bytes(scripted, (x, torch.tensor(4)), ["x", "n"], ["total", "second"])

    def torch_fn(x, n):
        out = scripted(x, n)
        for a, b in zip(model(x, n), out):
            assert torch.equal(a, b), "eager and scripted differ"
        return out

    return export, torch_fn, ["x", "n"], ["total", "second"], sets


# ----------------------------------------------------------------------------------------------
# stft_frontend

def stft_symbolic(g, input, n_fft, hop_length, win_length, window, normalized, onesided,
                  return_complex):
    """aten::stft -> ONNX STFT (torch 1.13 has none); only what StftMagnitude uses."""
    from torch.onnx import symbolic_helper as sh
    n_fft = sh._get_const(n_fft, "i", "n_fft")
    hop = sh._get_const(hop_length, "i", "hop_length")
    if not sh._is_none(win_length):
        assert sh._get_const(win_length, "i", "win_length") == n_fft
    assert not sh._get_const(normalized, "b", "normalized")
    signal = g.op("Unsqueeze", input, g.op("Constant", value_t=torch.tensor([-1])))
    out = g.op("STFT", signal, g.op("Constant", value_t=torch.tensor(hop)), window,
               g.op("Constant", value_t=torch.tensor(n_fft)), onesided_i=1)
    return g.op("Transpose", out, perm_i=[0, 2, 1, 3])      # [B, frames, bins, 2] -> torch's


class StftMagnitude(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(16))

    def forward(self, x):
        s = torch.stft(x, n_fft=16, hop_length=4, window=self.window, center=False,
                       return_complex=False)
        return torch.sqrt(s.pow(2).sum(-1))


def make_stft():
    torch.manual_seed(SEED + 4)
    model = StftMagnitude().eval()
    sets = [{"x": torch.randn(2, 64)}, {"x": torch.randn(2, 40)}]

    def export():
        try:
            export_bytes(model, (sets[0]["x"],), ["x"], ["mag"])
            raise AssertionError("torch exported aten::stft by itself: drop the custom symbolic")
        except torch.onnx.errors.UnsupportedOperatorError:
            pass
        torch.onnx.register_custom_op_symbolic("aten::stft", stft_symbolic, OPSET)
        try:
            return export_bytes(model, (sets[0]["x"],), ["x"], ["mag"],
                                {"x": {1: "N"}, "mag": {2: "frames"}})
        finally:
            torch.onnx.unregister_custom_op_symbolic("aten::stft", OPSET)

    return export, model, ["x"], ["mag"], sets


# ----------------------------------------------------------------------------------------------
# keypoint_rcnn_small

# torchvision 0.14 registers its roi_align symbolic for opset 11 and emits RoiAlign without
# coordinate_transformation_mode: right for RoiAlign-10 (whose only behaviour is torch's
# aligned=False, 'output_half_pixel'), wrong from opset 16 on, where the default is 'half_pixel'.
KRCNN_OPSET = 15
KRCNN_OUTPUTS = ["boxes", "labels", "scores", "keypoints", "keypoints_scores"]


class TinyBackbone(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Conv2d(3, 8, 3, stride=4, padding=1), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU())
        self.out_channels = 8


class BatchOfOne(nn.Module):
    """[1,3,H,W] in, a tuple of the single image's detections out."""

    def __init__(self, detector):
        super().__init__()
        self.detector = detector

    def forward(self, images):
        det = self.detector([images[0]])[0]
        return tuple(det[k] for k in KRCNN_OUTPUTS)


def make_keypoint_rcnn():
    from torchvision.models.detection import KeypointRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.models.detection.keypoint_rcnn import (KeypointRCNNHeads,
                                                            KeypointRCNNPredictor)
    from torchvision.ops import MultiScaleRoIAlign
    torch.manual_seed(SEED + 5)
    detector = KeypointRCNN(
        TinyBackbone(), num_classes=None, min_size=160, max_size=160,
        rpn_anchor_generator=AnchorGenerator(sizes=((32, 64),), aspect_ratios=((1.0,),)),
        box_roi_pool=MultiScaleRoIAlign(["0"], 7, 2),
        box_head=TwoMLPHead(8 * 7 * 7, 32), box_predictor=FastRCNNPredictor(32, 2),
        keypoint_roi_pool=MultiScaleRoIAlign(["0"], 14, 2),
        keypoint_head=KeypointRCNNHeads(8, (16, 16)), keypoint_predictor=KeypointRCNNPredictor(16, 3),
        rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20, box_detections_per_img=5,
        box_score_thresh=0.01)
    model = BatchOfOne(detector).eval()
    sets = [{"image": torch.rand(1, 3, 160, 160)} for _ in range(2)]

    def export():
        return export_bytes(model, (sets[0]["image"],), ["image"], KRCNN_OUTPUTS,
                            opset=KRCNN_OPSET)

    return export, model, ["image"], KRCNN_OUTPUTS, sets


# ----------------------------------------------------------------------------------------------
# export, expected outputs, data sets

def export_bytes(module, example, in_names, out_names, dynamic_axes=None, opset=OPSET):
    buf = io.BytesIO()
    torch.onnx.export(module, example, buf, opset_version=opset, input_names=in_names,
                      output_names=out_names, dynamic_axes=dynamic_axes)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model, full_check=True)
    return buf.getvalue(), model


def ops_summary(graph, depth=0):
    lines = []
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                lines.append("  " * (depth + 1) + f"{n.op_type}.{a.name} ops "
                             f"{sorted({k.op_type for k in a.g.node})}")
                lines += ops_summary(a.g, depth + 1)
    return lines


def build(name, maker, memplan):
    export, torch_fn, in_names, out_names, sets = maker()
    with torch.no_grad():
        data, model = export()
    write_bytes(f"{name}/model.onnx", data)
    graph_in = [i.name for i in model.graph.input]
    graph_out = [o.name for o in model.graph.output]
    assert graph_in == in_names and graph_out == out_names, (graph_in, graph_out)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    print(f"{name}: {len(data)} bytes, opset {opset}, {len(model.graph.node)} nodes; "
          f"main graph ops {sorted({n.op_type for n in model.graph.node})}")
    for line in ops_summary(model.graph):
        print(line)
    print("  declared inputs " + ", ".join(f"{v.name} {fx.shape_str(v)}" for v in model.graph.input) +
          "; outputs " + ", ".join(f"{v.name} {fx.shape_str(v)}" for v in model.graph.output))
    if name == "swin_dropout0":
        drops = check_dropouts(model)
        print(f"  {len(drops)} Dropout node(s): " + ", ".join(drops))
    model_path = os.path.join(HERE, name, "model.onnx")
    for k, inputs in enumerate(sets):
        d = f"{NAME}/{name}/test_data_set_{k}"
        fx.write_inputs(d, in_names, {n: inputs[n].numpy() for n in in_names})
        with torch.no_grad():
            ref = fx.as_np(torch_fn(*(inputs[n] for n in in_names)))
        ort, report = fx.expect_ort(model_path, d, out_names, ref, FLOAT_TOL)
        desc = ", ".join(f"{n} {inputs[n].dtype}{list(inputs[n].shape)}" +
                         (f" = {inputs[n].tolist()}" if inputs[n].numel() <= 4 else "")
                         for n in in_names)
        print(f"  set {k}: {desc}")
        print("         " + report)
        if memplan:
            fx.run_memplan(memplan, model_path, d, in_names, out_names)


MODELS = [
    ("conformer_masks", make_conformer),
    ("swin_dropout0", make_swin),
    ("scripted_list_loop", make_list_loop),
    ("scripted_list_ops", make_list_ops),
    ("stft_frontend", make_stft),
    ("keypoint_rcnn_small", make_keypoint_rcnn),
]


def main():
    memplan = None
    if "--memplan" in sys.argv[1:]:
        memplan = sys.argv[sys.argv.index("--memplan") + 1]
    torch.set_num_threads(1)
    only = [a for a in sys.argv[1:] if not a.startswith("--") and a != memplan]  # model names, or all
    for name, maker in MODELS:
        if not only or name in only:
            build(name, maker, memplan)
    print(f"{len(fx.changed)} file(s) written, the rest unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
