// Quantized fusions, before kernel selection (after fuse_conv): the dequantizing tail that ONNX
// Runtime's quantize_dynamic writes after each ConvInteger,
//   ConvInteger -> Cast(to float) -> Mul(scale) [-> Add(bias)] [-> Relu],
// becomes one ConvInteger with a float32 output (ir/fused_dequantize.h), which oneDNN's int8
// convolution runs with post-ops: up to four passes over the output and as many intermediate
// tensors fewer. The scale (quantize_dynamic's Mul(x_scale, w_scale), computed after the
// ConvInteger, which then moves before it) and the constant bias broadcast along the channel axis.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Applies the fusion in every graph; returns how many nodes were removed. Uses must be current
// and are rebuilt afterwards.
int fuse_quantized(Model& model);

}  // namespace memplan
