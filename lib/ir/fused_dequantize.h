// The dequantizing epilogue a fusion pass (passes/fuse_quantized) folds into a ConvInteger, as the
// node records it for the kernels (runtime/kernels/quantized/) that apply it: one definition for
// the pass that writes it and the kernels that read it.
//
// ConvInteger -> Cast(float) -> Mul(scale) [-> Add(bias)] [-> Relu], the layout of ONNX Runtime's
// quantize_dynamic, becomes one ConvInteger with a float32 output and
//   memplan_dequantized  int 1
//   input 4              scale: float32, one value or one per output channel; a constant, or a
//                        run-time tensor (quantize_dynamic's Mul(x_scale, w_scale))
//   input 5              bias: a float32 constant, one per output channel (omitted: none)
// and, for a Relu, the fused activation of ir/fused_activation.h:
//   y[n, m, ...] = float(acc[n, m, ...]) * scale[m] + bias[m]
// the same float operations in the same order as the nodes it replaces, so the same bits.
#pragma once

#include <cstddef>

namespace memplan {

inline constexpr const char* kDequantizedAttr = "memplan_dequantized";
inline constexpr size_t kDequantScaleInput = 4, kDequantBiasInput = 5;

}  // namespace memplan
