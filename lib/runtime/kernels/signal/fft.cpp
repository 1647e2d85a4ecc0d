#include "runtime/kernels/signal/fft.h"

#include <bit>
#include <cmath>
#include <numbers>
#include <utility>

namespace memplan::rt::signal {
namespace {

bool is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Bluestein's work length: the power of two at least 2n - 1 (n >= 2), so that a cyclic
// convolution of that length holds the linear one of the chirp (2n - 1 terms).
uint64_t work_length(uint64_t n) { return std::bit_ceil(2 * n - 1); }

Complex mul(Complex a, Complex b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

// In place, m a power of two: a[j] = sum_k a[k] w^(jk), w = exp(-2 pi i / m), or its conjugate
// when `conjugate` (the inverse, unnormalized). twiddles[k] = exp(-2 pi i k / m), k < m / 2.
void radix2(Complex* a, uint64_t m, const Complex* twiddles, bool conjugate) {
  for (uint64_t i = 1, j = 0; i < m; ++i) {  // bit-reversed order
    uint64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  const double sign = conjugate ? -1.0 : 1.0;
  for (uint64_t len = 2; len <= m; len <<= 1) {
    const uint64_t half = len >> 1, step = m / len;
    for (uint64_t i = 0; i < m; i += len) {
      Complex* lo = a + i;
      Complex* hi = a + i + half;
      for (uint64_t k = 0; k < half; ++k) {
        const Complex t = twiddles[k * step];
        const Complex w{t.re, sign * t.im};
        const Complex v = mul(hi[k], w), u = lo[k];
        lo[k] = {u.re + v.re, u.im + v.im};
        hi[k] = {u.re - v.re, u.im - v.im};
      }
    }
  }
}

}  // namespace

uint64_t fft_scratch_bytes(uint64_t n, bool up_to) {
  uint64_t complexes = 0;
  if (n <= 2 || (is_power_of_two(n) && !up_to)) {
    complexes = n / 2 + n;  // twiddles, line
  } else {
    // Bluestein's needs grow with the length, and every shorter power of two needs less.
    const uint64_t m = work_length(n);
    complexes = m / 2 + n + 2 * m;  // twiddles, chirp, kernel, line
  }
  return complexes * sizeof(Complex);
}

Fft::Fft(uint64_t n, bool inverse, std::byte* scratch) : n_(n), inverse_(inverse) {
  bluestein_ = !is_power_of_two(n);
  m_ = bluestein_ ? work_length(n) : n;
  Complex* at = reinterpret_cast<Complex*>(scratch);
  twiddles_ = at;
  at += m_ / 2;
  for (uint64_t k = 0; k < m_ / 2; ++k) {
    const double angle = 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m_);
    twiddles_[k] = {std::cos(angle), -std::sin(angle)};
  }
  if (bluestein_) {
    chirp_ = at;
    at += n_;
    kernel_ = at;
    at += m_;
    // chirp[k] = exp(s pi i k^2 / n), s = -1 forward, +1 inverse; k^2 is taken mod 2n, where the
    // chirp repeats, so the angle stays exact for long lines.
    const double s = inverse ? 1.0 : -1.0;
    uint64_t k2 = 0;  // k^2 mod 2n
    for (uint64_t k = 0; k < n_; ++k) {
      const double angle = std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n_);
      chirp_[k] = {std::cos(angle), s * std::sin(angle)};
      k2 = (k2 + 2 * k + 1) % (2 * n_);
    }
    // The convolution's kernel: conj(chirp) at offsets -(n-1) .. n-1, wrapped mod m, transformed
    // and scaled by 1/m (the inverse transform's normalization, taken once here).
    for (uint64_t k = 0; k < m_; ++k) kernel_[k] = {};
    for (uint64_t k = 0; k < n_; ++k) {
      const Complex c{chirp_[k].re, -chirp_[k].im};
      kernel_[k] = c;
      if (k) kernel_[m_ - k] = c;
    }
    radix2(kernel_, m_, twiddles_, false);
    const double scale = 1.0 / static_cast<double>(m_);
    for (uint64_t k = 0; k < m_; ++k) kernel_[k] = {kernel_[k].re * scale, kernel_[k].im * scale};
  }
  line_ = at;
}

void Fft::run() const {
  if (!bluestein_) {
    radix2(line_, m_, twiddles_, inverse_);
    return;
  }
  // X[j] = chirp[j] sum_k (x[k] chirp[k]) conj(chirp[j - k]): a convolution, by FFTs of length m.
  Complex* a = line_;
  for (uint64_t k = 0; k < n_; ++k) a[k] = mul(a[k], chirp_[k]);
  for (uint64_t k = n_; k < m_; ++k) a[k] = {};
  radix2(a, m_, twiddles_, false);
  for (uint64_t k = 0; k < m_; ++k) a[k] = mul(a[k], kernel_[k]);
  radix2(a, m_, twiddles_, true);
  for (uint64_t k = 0; k < n_; ++k) a[k] = mul(a[k], chirp_[k]);
}

}  // namespace memplan::rt::signal
