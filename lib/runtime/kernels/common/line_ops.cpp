#include "runtime/kernels/common/line_ops.h"

#include <cmath>

#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt {

MEMPLAN_SIMD_CLONES void fold_line(LineOp op, float* __restrict out, const float* __restrict in, int64_t n) {
  switch (op) {
    case LineOp::Max:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] > out[i] ? in[i] : out[i];
      return;
    case LineOp::Min:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] < out[i] ? in[i] : out[i];
      return;
    case LineOp::Add:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] += in[i];
      return;
    case LineOp::AddAbs:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] += std::fabs(in[i]);
      return;
    case LineOp::AddSquare:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] += in[i] * in[i];
      return;
  }
}

}  // namespace memplan::rt
