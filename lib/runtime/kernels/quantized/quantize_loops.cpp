#include "runtime/kernels/quantized/quantize_loops.h"

#include <algorithm>
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/kernels/quantized/quantize_common.h"

namespace memplan::rt::quant {

bool min_max(const float* x, uint64_t n, float& lo, float& hi) {
  uint64_t i = 0;
  bool nan = false;
#if defined(__SSE2__)
  __m128 vlo = _mm_setzero_ps(), vhi = _mm_setzero_ps(), vnan = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    vlo = _mm_min_ps(vlo, v);
    vhi = _mm_max_ps(vhi, v);
    vnan = _mm_or_ps(vnan, _mm_cmpunord_ps(v, v));
  }
  float l[4], h[4];
  _mm_storeu_ps(l, vlo);
  _mm_storeu_ps(h, vhi);
  for (int k = 0; k < 4; ++k) {
    lo = std::min(lo, l[k]);
    hi = std::max(hi, h[k]);
  }
  nan = _mm_movemask_ps(vnan) != 0;
#endif
  for (; i < n; ++i) {
    nan = nan || std::isnan(x[i]);
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  return !nan;
}

// Clamping x / scale to [qlo - zp, qhi - zp] first is the same saturation as after rounding (the
// bounds are integers); cvtps2dq then rounds half to even (the default rounding mode), as
// std::nearbyint does. NaN lanes are zeroed, i.e. become the zero point.
void quantize_row(const float* x, uint64_t n, float scale, int32_t zp, int32_t qlo, int32_t qhi, void* y) {
  const QRange r{qlo, qhi};
  const bool is_signed = qlo < 0;
  uint64_t i = 0;
#if defined(__SSE2__)
  const __m128 vs = _mm_set1_ps(scale), vlo = _mm_set1_ps(static_cast<float>(qlo - zp)),
               vhi = _mm_set1_ps(static_cast<float>(qhi - zp));
  const __m128i vzp = _mm_set1_epi32(zp);
  auto four = [&](uint64_t at) {
    const __m128 v = _mm_div_ps(_mm_loadu_ps(x + at), vs);
    __m128 q = _mm_min_ps(_mm_max_ps(v, vlo), vhi);
    q = _mm_andnot_ps(_mm_cmpunord_ps(v, v), q);
    return _mm_add_epi32(_mm_cvtps_epi32(q), vzp);
  };
  auto* out = static_cast<uint8_t*>(y);
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_packs_epi32(four(i), four(i + 4)), b = _mm_packs_epi32(four(i + 8), four(i + 12));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), is_signed ? _mm_packs_epi16(a, b) : _mm_packus_epi16(a, b));
  }
#endif
  for (; i < n; ++i) {
    const int32_t q = saturate_round(x[i] / scale, zp, r);
    if (is_signed) static_cast<int8_t*>(y)[i] = static_cast<int8_t>(q);
    else static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
  }
}

void dequantize_row(const void* q, bool is_signed, uint64_t n, int32_t zp, float scale, float* y) {
  uint64_t i = 0;
#if defined(__SSE2__)
  const __m128 vs = _mm_set1_ps(scale);
  const __m128i vzp = _mm_set1_epi32(zp), zero = _mm_setzero_si128();
  const auto* in = static_cast<const uint8_t*>(q);
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    // Bytes to int16 (sign- or zero-extended), then to int32.
    const __m128i sign8 = is_signed ? _mm_cmpgt_epi8(zero, b) : zero;
    const __m128i lo16 = _mm_unpacklo_epi8(b, sign8), hi16 = _mm_unpackhi_epi8(b, sign8);
    const __m128i s_lo = _mm_cmpgt_epi16(zero, lo16), s_hi = _mm_cmpgt_epi16(zero, hi16);
    const __m128i w[4] = {_mm_unpacklo_epi16(lo16, s_lo), _mm_unpackhi_epi16(lo16, s_lo), _mm_unpacklo_epi16(hi16, s_hi),
                          _mm_unpackhi_epi16(hi16, s_hi)};
    for (int k = 0; k < 4; ++k)
      _mm_storeu_ps(y + i + 4 * k, _mm_mul_ps(_mm_cvtepi32_ps(_mm_sub_epi32(w[k], vzp)), vs));
  }
#endif
  for (; i < n; ++i) {
    const int32_t v = is_signed ? static_cast<const int8_t*>(q)[i] : static_cast<const uint8_t*>(q)[i];
    y[i] = static_cast<float>(v - zp) * scale;
  }
}

}  // namespace memplan::rt::quant
