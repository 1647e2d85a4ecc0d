// Activations that converters write out as several ops, rewritten as the one ONNX op they compute,
// before the fusions (passes/fuse_conv) look for that op:
//
//   x * Clip(x + 3, 0, 6) / 6   (and / 6 before the product, or * 0.16666667)  ==>  HardSwish(x)
//   x * HardSigmoid(x) with alpha 1/6, beta 0.5                                ==>  HardSwish(x)
//   x * (Erf(x / sqrt(2)) + 1) * 0.5   (or * 0.70710678; the 0.5 on any side)  ==>  Gelu(x)
//
// Paddle2ONNX writes hard-swish the first way below opset 14 (MobileNetV3 and PP-LCNet backbones,
// the PaddleOCR detector, classifier and recognizer), other exporters the second. Each form is
// three or four passes over the tensor where HardSwish is one, and a Conv takes HardSwish as a
// post-op, so none at all. torch (nn.GELU, F.gelu) writes GELU out in five ops below opset 20
// (every ViT, Swin, ConvNeXt, BERT and wav2vec2 block): Gelu (opset 20, memplan runs it at any
// opset) is one pass of oneDNN's gelu_erf.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Rewrites every such pattern in every graph; returns how many nodes were removed. Uses must be
// current (as infer_shapes leaves them) and are rebuilt afterwards.
int canonicalize_activations(Model& model);

}  // namespace memplan
