#include "runtime/kernels/common/eltwise_step.h"

#include <cmath>

#include "runtime/kernels/common/simd_clones.h"
#include "runtime/kernels/common/simd_exp.h"

namespace memplan::rt {

MEMPLAN_SIMD_CLONES void apply_step(const EltwiseStep& s, float* y, uint64_t n) {
  const float a = s.alpha, b = s.beta;
  switch (s.kind) {
    case EltwiseStep::Kind::Linear:
#pragma omp simd
      for (uint64_t i = 0; i < n; ++i) y[i] = a * y[i] + b;
      return;
    case EltwiseStep::Kind::Clip:
#pragma omp simd
      for (uint64_t i = 0; i < n; ++i) y[i] = y[i] < a ? a : y[i] > b ? b : y[i];
      return;
    case EltwiseStep::Kind::Relu:
#pragma omp simd
      for (uint64_t i = 0; i < n; ++i) y[i] = y[i] < 0.f ? a * y[i] : y[i];
      return;
    case EltwiseStep::Kind::HardSwish:
#pragma omp simd
      for (uint64_t i = 0; i < n; ++i) {
        const float t = y[i] + 3.f;
        y[i] = y[i] * (t < 0.f ? 0.f : t > 6.f ? 6.f : t) / 6.f;
      }
      return;
    case EltwiseStep::Kind::Logistic:
#pragma omp simd
      for (uint64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + simd_exp(-y[i]));
      return;
    case EltwiseStep::Kind::Swish:
#pragma omp simd
      for (uint64_t i = 0; i < n; ++i) y[i] = y[i] / (1.f + simd_exp(-a * y[i]));
      return;
    case EltwiseStep::Kind::GeluErf:  // one element at a time (std::erf): the primitives apply it
      for (uint64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * (1.f + std::erf(y[i] * 0.70710678f));
      return;
    case EltwiseStep::Kind::GeluTanh:
      for (uint64_t i = 0; i < n; ++i)
        y[i] = 0.5f * y[i] * (1.f + std::tanh(0.79788456f * (y[i] + 0.044715f * y[i] * y[i] * y[i])));
      return;
  }
}

}  // namespace memplan::rt
