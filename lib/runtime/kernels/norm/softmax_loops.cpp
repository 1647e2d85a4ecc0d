// Softmax and LogSoftmax in memplan's own loops, where oneDNN 2.6's softmax is slow:
// - over a short last axis (a detector's two class scores per anchor: [1, 4420, 2]), which its jit
//   kernel sets up row by row at more cost than the arithmetic (dnnl_pool_norm.cpp's
//   kShortSoftmaxRow has the figures);
// - over an axis that is not the last (a segmentation head's classes, [1, C, H, W] along C), which
//   it runs on its reference kernel only: here vectorized across the contiguous inner elements.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
namespace {

// Softmax along the middle axis of [mid, inner] floats, for `width` <= kColumns adjacent columns
// starting at x and y: each column's maximum and sum kept in registers-sized arrays on the stack.
constexpr uint64_t kColumns = 64;

MEMPLAN_SIMD_CLONES void softmax_columns(const float* x, float* y, uint64_t mid, uint64_t inner, uint64_t width, bool log) {
  float top[kColumns], sum[kColumns];
  std::fill(top, top + width, -std::numeric_limits<float>::infinity());
  std::fill(sum, sum + width, 0.f);
  for (uint64_t m = 0; m < mid; ++m) {
    const float* in = x + m * inner;
#pragma omp simd
    for (uint64_t j = 0; j < width; ++j) top[j] = in[j] > top[j] ? in[j] : top[j];
  }
  for (uint64_t m = 0; m < mid; ++m) {
    const float* in = x + m * inner;
    float* out = y + m * inner;
    for (uint64_t j = 0; j < width; ++j) sum[j] += out[j] = std::exp(in[j] - top[j]);
  }
  for (uint64_t j = 0; j < width; ++j) sum[j] = log ? top[j] + std::log(sum[j]) : 1 / sum[j];
  for (uint64_t m = 0; m < mid; ++m) {
    const float* in = x + m * inner;
    float* out = y + m * inner;
    if (log) {
#pragma omp simd
      for (uint64_t j = 0; j < width; ++j) out[j] = in[j] - sum[j];
    } else {
#pragma omp simd
      for (uint64_t j = 0; j < width; ++j) out[j] *= sum[j];
    }
  }
}

class SoftmaxLoopKernel final : public Kernel {
 public:
  SoftmaxLoopKernel(uint64_t mid, uint64_t inner, bool log) : mid_(mid), inner_(inner), log_(log) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const float* xs = x.as<const float>();
    float* ys = a.outputs[0].as<float>();
    if (inner_ == 1) return rows(xs, ys, x.element_count() / mid_);
    // Work items: a block of up to kColumns columns of one outer slice.
    const uint64_t outer = x.element_count() / (mid_ * inner_), blocks = (inner_ + kColumns - 1) / kColumns;
    parallel_chunks(outer * blocks, std::max<uint64_t>(kParallelChunkBytes / 4 / (mid_ * kColumns), 1),
                    [&](uint64_t begin, uint64_t end) {
                      for (uint64_t item = begin; item < end; ++item) {
                        const uint64_t o = item / blocks, first = item % blocks * kColumns;
                        const uint64_t at = o * mid_ * inner_ + first;
                        softmax_columns(xs + at, ys + at, mid_, inner_, std::min(kColumns, inner_ - first), log_);
                      }
                    });
  }

  std::string implementation() const override { return inner_ == 1 ? "memplan short-row softmax" : "memplan strided softmax"; }

 private:
  // Softmax over each contiguous row of mid_ floats.
  void rows(const float* xs, float* ys, uint64_t count) const {
    parallel_chunks(count, std::max<uint64_t>(kParallelChunkBytes / 4 / mid_, 1), [&](uint64_t begin, uint64_t end) {
      for (uint64_t r = begin; r < end; ++r) {
        const float* in = xs + r * mid_;
        float* out = ys + r * mid_;
        const float top = *std::max_element(in, in + mid_);
        float sum = 0;
        for (uint64_t i = 0; i < mid_; ++i) sum += out[i] = std::exp(in[i] - top);
        if (log_) {
          const float shift = top + std::log(sum);
          for (uint64_t i = 0; i < mid_; ++i) out[i] = in[i] - shift;
        } else {
          const float inv = 1 / sum;
          for (uint64_t i = 0; i < mid_; ++i) out[i] *= inv;
        }
      }
    });
  }

  uint64_t mid_, inner_;
  bool log_;
};

}  // namespace

Factory make_softmax_loop(uint64_t mid, uint64_t inner, bool log) {
  return std::make_unique<SoftmaxLoopKernel>(std::max<uint64_t>(mid, 1), std::max<uint64_t>(inner, 1), log);
}

}  // namespace memplan::rt::norm
