#include "ir/float16.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MEMPLAN_F16C 1
#endif

namespace memplan {
namespace {

// Rounds v to nearest even in a binary format with `p` significand bits (the implicit one
// included), smallest normal exponent `emin` and largest `emax`, 1 sign and 16 bits in all;
// returns the bits. Works on the value, not the encoding, so one function serves both formats.
uint16_t round_to(double v, int p, int emin, int emax) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const uint32_t inf = static_cast<uint32_t>(emax - emin + 2) << (p - 1);  // all exponent bits set
  if (std::isnan(v)) return static_cast<uint16_t>(sign | inf | (1u << (p - 2)));  // a quiet NaN
  const double a = std::fabs(v);
  if (a == 0) return sign;
  int e = std::isinf(a) ? emax + 1 : std::ilogb(a);
  if (e > emax) return static_cast<uint16_t>(sign | inf);
  if (e < emin) e = emin;  // subnormal: the quantum stays that of the smallest binade
  // a in units of the quantum at its binade, 2^(e - p + 1): an integer below 2^p after rounding
  // (exactly 2^p when rounding carries into the next binade).
  const auto m = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, p - 1 - e)));
  // The biased exponent is e - emin + 1 for normals, and m carries the implicit one (2^(p-1)), so
  // adding m to (e - emin) << (p - 1) encodes normals, subnormals (m < 2^(p-1)) and carries alike.
  const uint32_t bits = (static_cast<uint32_t>(e - emin) << (p - 1)) + m;
  return static_cast<uint16_t>(sign | (bits >= inf ? inf : bits));
}

}  // namespace

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  // Rebias the exponent (15 -> 127); infinities and NaNs (payload kept) map to float's.
  const uint32_t bits = sign | (exp == 0x1F ? 0x7F800000u : (exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t half_from_double(double v) { return round_to(v, 11, -14, 15); }

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;  // bfloat16 is float's upper half
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t bfloat16_from_double(double v) { return round_to(v, 8, -126, 127); }

namespace {

#if MEMPLAN_F16C
// Every CPU with AVX2 has F16C (clang's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

__attribute__((target("avx2,f16c"))) uint64_t halves_from_floats_f16c(const float* x, uint16_t* y, uint64_t n) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

__attribute__((target("avx2,f16c"))) uint64_t floats_from_halves_f16c(const uint16_t* x, float* y, uint64_t n) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  return i;
}
#endif

}  // namespace

void halves_from_floats(const float* x, uint16_t* y, uint64_t n) {
  uint64_t i = 0;
#if MEMPLAN_F16C
  if (has_f16c()) i = halves_from_floats_f16c(x, y, n);
#endif
  for (; i < n; ++i) y[i] = half_from_double(x[i]);
}

void floats_from_halves(const uint16_t* x, float* y, uint64_t n) {
  uint64_t i = 0;
#if MEMPLAN_F16C
  if (has_f16c()) i = floats_from_halves_f16c(x, y, n);
#endif
  for (; i < n; ++i) y[i] = half_to_float(x[i]);
}

}  // namespace memplan
