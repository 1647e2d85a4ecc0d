#!/usr/bin/python3
"""Exports the benchmark zoos: torchvision CNNs and four torch.jit.script control-flow models, or
with --transformers the transformer zoo (zoo_transformers.py: ViT, Swin, ConvNeXt, wav2vec2, a
Conformer, a BERT-like encoder with a padding mask, an RNN-T predictor and joiner).

Usage: export_zoo.py OUT_DIR [--transformers] [--only NAME,...]

Each model goes to OUT_DIR/<name>/model.onnx with test_data_set_0/input_N.pb and output_N.pb
(torch's own outputs), the layout of ONNX's backend tests and of shared/models. Weights are random
(fixed seed) and BatchNorm statistics are randomised, so a wrong fusion or a skipped BatchNorm shows
as a large error. Idempotent: a model whose folder already has model.onnx and its data set is skipped
(delete the folder to export it again). Debian's python3-torch, python3-torchvision and
python3-torchaudio only.
"""
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

from zoo_control_flow import CONTROL_FLOW_MODELS

OPSET = 17  # the newest opset torch 1.13 exports and memplan accepts

# name -> (constructor, input side). inception_v3 wants 299x299; the others 224x224.
CNNS = {
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 224),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), 224),
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 224),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), 224),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 224),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), 224),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), 224),
    "googlenet": (lambda: torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True), 224),
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True), 299),
}


def randomise_batchnorm(model, side, gen):
    """Fresh BatchNorm layers are the identity (mean 0, var 1, weight 1, bias 0), which would hide a
    BatchNorm that a runtime skips or folds wrongly. Give them statistics like a trained network's:
    measure each layer's real activation statistics on random images (so activations keep a sane
    scale through deep networks instead of growing to 1e12), then perturb them and draw random
    affine parameters."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a plain average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.rand(4, 3, side, side, generator=gen) * 2 - 1)
        for m in bns:
            n = m.num_features
            m.running_mean.add_(torch.randn(n, generator=gen) * 0.1 * m.running_var.sqrt())
            m.running_var.mul_(torch.rand(n, generator=gen) * 0.4 + 0.8)
            m.weight.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
    model.eval()


def write_tensor(path, name, array):
    t = numpy_helper.from_array(np.array(array, order="C"), name)  # (ascontiguousarray makes 0-d 1-d)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def save(out_dir, name, module, inputs, input_names, output_names):
    """Exports `module` (eager or scripted), then records torch's outputs for `inputs`."""
    folder = os.path.join(out_dir, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    tmp = os.path.join(folder, "model.onnx.tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Traced with gradients on: under no_grad, torch 1.13's attention layers take their fused
        # inference kernel (aten::_native_multi_head_attention), which has no ONNX export.
        torch.onnx.export(module, tuple(inputs), tmp, opset_version=OPSET, input_names=input_names,
                          output_names=output_names, do_constant_folding=True)
        with torch.no_grad():
            outputs = module(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    onnx.checker.check_model(onnx.load(tmp))
    for k, (n, x) in enumerate(zip(input_names, inputs)):
        write_tensor(os.path.join(data, f"input_{k}.pb"), n, x.numpy())
    for k, (n, y) in enumerate(zip(output_names, outputs)):
        write_tensor(os.path.join(data, f"output_{k}.pb"), n, y.numpy())
    os.replace(tmp, os.path.join(folder, "model.onnx"))  # last: its presence marks a finished export


def done(out_dir, name):
    folder = os.path.join(out_dir, name)
    return (os.path.exists(os.path.join(folder, "model.onnx"))
            and os.path.exists(os.path.join(folder, "test_data_set_0", "output_0.pb")))


def main():
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    transformers = "--transformers" in args
    if transformers:
        args.remove("--transformers")
    if len(args) != 1:
        sys.exit(__doc__)
    out_dir = args[0]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if transformers:
        from zoo_transformers import TRANSFORMER_MODELS  # imports torchaudio, which the CNNs do not need
        export_makers(out_dir, TRANSFORMER_MODELS, only, lambda module: module.eval())
        return
    for name, (make, side) in CNNS.items():
        if (only and name not in only) or done(out_dir, name):
            continue
        print(f"export_zoo: {name}", flush=True)
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        model = make()
        randomise_batchnorm(model, side, gen)
        x = torch.rand(1, 3, side, side, generator=gen) * 2 - 1
        save(out_dir, name, model, [x], ["input"], ["logits"])
    export_makers(out_dir, CONTROL_FLOW_MODELS, only, lambda module: torch.jit.script(module.eval()))


def export_makers(out_dir, makers, only, prepare):
    """Exports each maker's (module, inputs, input names, output names), the module passed through
    `prepare` (eval, or scripting for data-dependent control flow)."""
    for name, make in makers.items():
        if (only and name not in only) or done(out_dir, name):
            continue
        print(f"export_zoo: {name}", flush=True)
        torch.manual_seed(0)
        module, inputs, input_names, output_names = make()
        save(out_dir, name, prepare(module), inputs, input_names, output_names)


if __name__ == "__main__":
    main()
