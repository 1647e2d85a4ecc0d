// Quantized fusions, before kernel selection (after fuse_conv): the dequantizing tail that ONNX
// Runtime's quantize_dynamic writes after each ConvInteger,
//   ConvInteger -> Cast(to float) -> Mul(scale) [-> Add(bias)] [-> Relu],
// becomes one ConvInteger with a float32 output (ir/fused_dequantize.h), which oneDNN's int8
// convolution runs with post-ops: up to four passes over the output and as many intermediate
// tensors fewer. The scale (quantize_dynamic's Mul(x_scale, w_scale), computed after the
// ConvInteger, which then moves before it) and the constant bias broadcast along the channel axis.
// A MatMulInteger or QLinearMatMul by constant weights [K, N] becomes the 1x1 ConvInteger or
// QLinearConv it is, between two Reshapes (views), so it runs on the same oneDNN kernels; a
// MatMulInteger's dequantizing tail (the same Cast -> Mul [-> Add]) is fused first. In the static
// QDQ layout, DequantizeLinear -> op -> QuantizeLinear around a Conv, MaxPool, Concat, Resize or Add
// becomes the op on the 8-bit values (the same bytes), and a Gemm by int8 weights an int8 1x1 Conv.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Applies the fusion in every graph; returns how many nodes were removed. Uses must be current
// and are rebuilt afterwards.
int fuse_quantized(Model& model);

}  // namespace memplan
