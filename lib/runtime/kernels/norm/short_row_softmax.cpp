// Softmax and LogSoftmax over a short last axis (a detector's two class scores per anchor:
// [1, 4420, 2]). oneDNN 2.6's softmax sets up each row apart, which for rows this short costs
// more than the arithmetic (dnnl_pool_norm.cpp's kShortSoftmaxRow has the figures).
#include <algorithm>
#include <cmath>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
namespace {

class ShortRowSoftmaxKernel final : public Kernel {
 public:
  ShortRowSoftmaxKernel(uint64_t width, bool log) : width_(width), log_(log) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const uint64_t rows = x.element_count() / width_;
    const float* xs = x.as<const float>();
    float* ys = a.outputs[0].as<float>();
    parallel_chunks(rows, std::max<uint64_t>(kParallelChunkBytes / 4 / width_, 1), [&](uint64_t begin, uint64_t end) {
      for (uint64_t r = begin; r < end; ++r) {
        const float* in = xs + r * width_;
        float* out = ys + r * width_;
        const float top = *std::max_element(in, in + width_);
        float sum = 0;
        for (uint64_t i = 0; i < width_; ++i) sum += out[i] = std::exp(in[i] - top);
        if (log_) {
          const float shift = top + std::log(sum);
          for (uint64_t i = 0; i < width_; ++i) out[i] = in[i] - shift;
        } else {
          const float inv = 1 / sum;
          for (uint64_t i = 0; i < width_; ++i) out[i] *= inv;
        }
      }
    });
  }

  std::string implementation() const override { return "memplan short-row softmax"; }

 private:
  uint64_t width_;
  bool log_;
};

}  // namespace

Factory make_short_row_softmax(uint64_t width, bool log) {
  return std::make_unique<ShortRowSoftmaxKernel>(std::max<uint64_t>(width, 1), log);
}

}  // namespace memplan::rt::norm
