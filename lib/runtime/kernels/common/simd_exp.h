// e^x for float32 in plain arithmetic, so that a `#pragma omp simd` loop vectorizes it: glibc
// offers its vector expf only under -ffast-math, and a loop calling std::exp runs one element at a
// time. Cephes' expf: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by a degree-6 polynomial, 2^n put
// into the exponent bits; within 2 ulp of std::exp. Inputs are clamped to [-87.34, 88.37], where
// e^x stays a normal float (e^-87.34 is 1.2e-38, e^88.37 is 2.4e38); NaN stays NaN.
//
// What GCC 12 vectorizes, found by -fopt-info-vec (Sigmoid and Swish ran one element at a time in
// every clone before): no std::floor (under a target_clones or target attribute it has no vector
// form), and no `?:` on floats whose result is computed with (it turns the select into branches
// that compute on each side, which -ftrapping-math, the default, then forbids to run both of; only
// AVX-512's masks got past that). So n is rounded by the 1.5 * 2^23 shift and its integer read from
// the shifted float's bits, the clamp is a select of bits, and NaN needs none: the clamp keeps it
// and the arithmetic carries it through.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace memplan::rt {

// cond ? a : b, as bits: a select the compiler keeps a select.
__attribute__((always_inline)) inline float select_bits(bool cond, float a, float b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & mask) | (std::bit_cast<uint32_t>(b) & ~mask));
}

__attribute__((always_inline)) inline float simd_exp(float x) {
  constexpr float kLowest = -87.3365f, kHighest = 88.37f;  // 2^n then stays below 2^128
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer, kept in the low bits
  const float low = select_bits(x < kLowest, kLowest, x);  // NaN compares false: stays NaN
  const float c = select_bits(low > kHighest, kHighest, low);
  const float shifted = c * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;  // round(c / ln 2), -126 to 127
  const uint32_t n_bits = std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kRound);  // n mod 2^32
  // r = c - n ln 2, with ln 2 split in two so that n * 0.693359375 is exact.
  const float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  return p * std::bit_cast<float>((n_bits + 127u) << 23);
}

}  // namespace memplan::rt
