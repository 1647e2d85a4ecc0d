// Helpers shared by the quantization kernels (quantize_kernels.cpp, quantized_matmul.cpp,
// quantized_conv.cpp): 8-bit element access, ONNX's saturating round-half-to-even, and scale /
// zero-point parameters that are per tensor or per channel and read at run time.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/kernel_registry.h"
#include "runtime/kernels/common/shape_common.h"

namespace memplan::rt::quant {

// The value range of a quantized type: uint8, int8 (and int32 for DequantizeLinear's input).
struct QRange {
  int32_t lo = 0, hi = 255;
};
// False for any other type.
bool quant_range(DType t, QRange& r);

// Element i of a uint8, int8 or int32 view.
inline int32_t qint_at(const TensorView& v, uint64_t i) {
  switch (v.dtype) {
    case DType::Uint8: return v.as<const uint8_t>()[i];
    case DType::Int8: return v.as<const int8_t>()[i];
    default: return v.as<const int32_t>()[i];
  }
}
inline void qstore(const TensorView& v, uint64_t i, int32_t q) {
  if (v.dtype == DType::Uint8) v.as<uint8_t>()[i] = static_cast<uint8_t>(q);
  else v.as<int8_t>()[i] = static_cast<int8_t>(q);
}

// saturate(round_half_to_even(v) + zero_point) in r. NaN becomes the zero point.
inline int32_t saturate_round(float v, int32_t zero_point, QRange r) {
  if (std::isnan(v)) return zero_point;
  const double q = std::nearbyint(static_cast<double>(v)) + zero_point;  // default rounding: ties to even
  return q < r.lo ? r.lo : q > r.hi ? r.hi : static_cast<int32_t>(q);
}

// A scale (float32) or zero point (8-bit) input: absent (zero point 0), one value, or one per
// index of a channel axis. Validated against the data's shape at run time.
struct Param {
  const TensorView* v = nullptr;  // null when omitted
  uint64_t count = 0;             // 1 for a per-tensor parameter
  float scale(uint64_t c) const { return v->as<const float>()[count == 1 ? 0 : c]; }
  int32_t zero(uint64_t c) const { return v ? qint_at(*v, count == 1 ? 0 : c) : 0; }
};

// Input k as a parameter with 1 or `channels` values (channels 0: per tensor only). `what`
// names it in messages; `dtype` is the type it must have (Undefined: any of uint8/int8/int32).
Param param(const KernelArgs& a, size_t k, uint64_t channels, DType dtype, const std::string& where, const char* what);

// The 8-bit type of a node's input or output, failing (Unsupported) for others.
DType quant_type(const Value* v, const std::string& where, const char* what);

}  // namespace memplan::rt::quant
