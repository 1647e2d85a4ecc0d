// Conv fusions, before kernel selection: a per-channel Mul/Add after a BatchNormalization folded
// into its scale and shift, an Add of a per-channel constant folded into the Conv's bias (Paddle2ONNX
// writes biases so), BatchNormalization folded into the Conv weights, a
// following Add (of a same-shaped tensor) taken as a oneDNN sum post-op, then a following Relu,
// Clip, HardSwish or Sigmoid-times-input (Swish) as an eltwise post-op, and after it every
// elementwise op with a constant scalar (Add, Sub, Mul, Div, Max, Min) or activation (LeakyRelu,
// HardSigmoid, Sigmoid, ...) that reads the result alone, as a chain of them; a Relu after a batch norm
// that stays on its own is fused into it, and such a batch norm (with its Relu) that only a 1x1
// Conv reads becomes that Conv's pre-activation. A ConvTranspose takes the bias, the batch norm
// and the activations (its kernels apply them: runtime/kernels/dnnl/tiled_deconv.h, oneDNN's
// post-ops), not a shortcut Add. Each removes an intermediate
// tensor (less memory) and a pass over it (less time).
// The fused activation is recorded on the node as ir/fused_activation.h describes, for the
// oneDNN kernels to apply.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Applies the fusions in every graph; returns how many nodes were removed. Uses must be current
// (as infer_shapes leaves them) and are rebuilt afterwards.
int fuse_conv(Model& model);

}  // namespace memplan
