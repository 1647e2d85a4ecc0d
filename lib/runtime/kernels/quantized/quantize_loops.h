// The element loops of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on 8-bit
// types, in SSE2 where the compiler has it (every x86-64 CPU; GCC's -O2 leaves the plain loops
// scalar, and on large activations they were a tenth to a half of an int8 model's time), plain
// C++ elsewhere. The same results as quantize_common.h's saturate_round, element by element.
#pragma once

#include <cstdint>

namespace memplan::rt::quant {

// [min(x, 0), max(x, 0)] into lo, hi (which must start at 0); false when x holds NaN.
bool min_max(const float* x, uint64_t n, float& lo, float& hi);

// y[i] = saturate(round_half_to_even(x[i] / scale) + zp) in [qlo, qhi] (uint8: 0, 255; int8:
// -128, 127), NaN giving the zero point. `y` is uint8_t* or int8_t* as qlo says.
void quantize_row(const float* x, uint64_t n, float scale, int32_t zp, int32_t qlo, int32_t qhi, void* y);

// y[i] = float(q[i] - zp) * scale, q uint8 (is_signed false) or int8.
void dequantize_row(const void* q, bool is_signed, uint64_t n, int32_t zp, float scale, float* y);

}  // namespace memplan::rt::quant
