// The dequantizing epilogue a fusion pass (passes/fuse_quantized) folds into a ConvInteger, and the
// requantization it folds into a QuantizeLinear, as the nodes record them for the kernels
// (runtime/kernels/quantized/) that apply them: one definition for the pass that writes them and
// the kernels that read them.
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

// DequantizeLinear(x, x_scale, x_zp) -> QuantizeLinear(y_scale, y_zp), per tensor with constant
// scales and zero points (an input of a QDQ Concat quantized unlike its output), becomes one
// QuantizeLinear with the 8-bit x as its input and
//   memplan_requantize   int 1
//   inputs 3, 4          x_scale, x_zp
//   y = QuantizeLinear(DequantizeLinear(x)) element by element, by the two kernels' own row
// loops, so the same bytes. Element by element is layout-free: the value may be stored in any
// layout (passes/int8_layouts).
inline constexpr const char* kRequantizeAttr = "memplan_requantize";
inline constexpr size_t kRequantizeScaleInput = 3, kRequantizeZeroInput = 4;

// DequantizeLinear(x, x_scale, x_zp) -> Resize (opset 11+) -> QuantizeLinear(y_scale, y_zp), per
// tensor with constant scales and zero points, of static shapes whose dims but the last two are
// not resized (a segmentation decoder's upsampling), becomes one Resize from the 8-bit x to the
// 8-bit y with
//   memplan_quantized    int 1
//   inputs 4, 5, 6, 7    x_scale, x_zp, y_scale, y_zp
// Each plane of x is dequantized by DequantizeLinear's row loop, resampled by the float Resize's
// row sums and quantized by QuantizeLinear's row loop: the same bytes as the three nodes, with no
// float32 tensor.
inline constexpr const char* kQuantizedResizeAttr = "memplan_quantized";

// DequantizeLinear(a, a_scale, a_zp) + DequantizeLinear(b, b_scale, b_zp) -> QuantizeLinear(y_scale,
// y_zp), per tensor with constant scales and zero points, a, b and y of one static shape (a QDQ
// residual connection), becomes one Add of the 8-bit a and b with
//   memplan_quantized    int 1 (kQuantizedAddAttr)
//   inputs 2 .. 7        a_scale, a_zp, b_scale, b_zp, y_scale, y_zp
// y = QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) element by element, by the
// kernels' own row loops and a float32 add, so the same bytes. Element by element is layout-free.
inline constexpr const char* kQuantizedAddAttr = "memplan_quantized";
inline constexpr size_t kAddScaleInput = 2;
inline constexpr size_t kResizeInScaleInput = 4, kResizeInZeroInput = 5, kResizeOutScaleInput = 6,
                        kResizeOutZeroInput = 7;

}  // namespace memplan
