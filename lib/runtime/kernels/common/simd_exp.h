// e^x for float32 in plain arithmetic, so that a `#pragma omp simd` loop vectorizes it: glibc
// offers its vector expf only under -ffast-math, and a loop calling std::exp runs one element at a
// time. Cephes' expf: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by a degree-6 polynomial, 2^n put
// into the exponent bits; within 2 ulp of std::exp. Inputs are clamped to [-87.34, 88.37], where
// e^x stays a normal float (e^-87.34 is 1.2e-38, e^88.37 is 2.4e38); NaN stays NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace memplan::rt {

__attribute__((always_inline)) inline float simd_exp(float x) {
  constexpr float kLowest = -87.3365f, kHighest = 88.37f;  // 2^n then stays below 2^128
  // NaN takes the low bound here (no NaN reaches the integer conversion) and is returned below.
  const float c = !(x >= kLowest) ? kLowest : x > kHighest ? kHighest : x;
  const float n = std::floor(c * 1.44269504088896341f + 0.5f);
  // r = c - n ln 2, with ln 2 split in two so that n * 0.693359375 is exact.
  const float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const auto bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return x != x ? x : p * std::bit_cast<float>(bits);
}

}  // namespace memplan::rt
