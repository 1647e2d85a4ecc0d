// Activations that converters write out as several ops, rewritten as the one ONNX op they compute,
// before the fusions (passes/fuse_conv) look for that op:
//
//   x * Clip(x + 3, 0, 6) / 6   (and / 6 before the product, or * 0.16666667)  ==>  HardSwish(x)
//   x * HardSigmoid(x) with alpha 1/6, beta 0.5                                ==>  HardSwish(x)
//
// Paddle2ONNX writes hard-swish the first way below opset 14 (MobileNetV3 and PP-LCNet backbones,
// the PaddleOCR detector, classifier and recognizer), other exporters the second. Each form is
// three or four passes over the tensor where HardSwish is one, and a Conv takes HardSwish as a
// post-op, so none at all.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Rewrites every such pattern in every graph; returns how many nodes were removed. Uses must be
// current (as infer_shapes leaves them) and are rebuilt afterwards.
int canonicalize_activations(Model& model);

}  // namespace memplan
