#include "runtime/kernels/dnnl/depthwise_loop.h"

#include <algorithm>

#include "runtime/kernels/common/eltwise_step.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt::dnnl_kernels {
namespace {

// y[i] += w * x[i * stride] for i < n.
MEMPLAN_SIMD_CLONES void add_scaled(float w, const float* x, int64_t stride, float* y, int64_t n) {
  if (stride == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] += w * x[i * stride];
  }
}

// For tap k of an axis: the outputs whose input position o * stride - pad + k * dilation lies
// inside [0, in), as [first, end), and the input position of `first`.
struct TapRange {
  int64_t first = 0, end = 0, input = 0;
};

TapRange tap_range(int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t offset) {
  // o * stride >= pad - offset and o * stride <= in - 1 + pad - offset.
  const int64_t low = pad - offset, high = in - 1 + pad - offset;
  TapRange t;
  t.first = low <= 0 ? 0 : (low + stride - 1) / stride;
  t.end = high < 0 ? 0 : std::min(out, high / stride + 1);
  t.end = std::max(t.end, t.first);
  t.input = t.first * stride - pad + offset;
  return t;
}

class DepthwiseLoop final : public Kernel {
 public:
  DepthwiseLoop(DepthwiseConv c, std::string where) : c_(std::move(c)), where_(std::move(where)) {
    const Window& w = c_.window;
    for (int64_t k = 0; k < w.kernel[1]; ++k)
      columns_.push_back(tap_range(c_.x[3], c_.y[3], w.strides[1], w.pads_begin[1], k * w.dilations[1]));
  }

  void run(const KernelArgs& args) override {
    const float* x = args.inputs[0].as<const float>();
    float* y = args.outputs[0].as<float>();
    const int64_t planes = c_.y[0] * c_.y[1], out_plane = c_.y[2] * c_.y[3];
    parallel_chunks(static_cast<uint64_t>(planes),
                    std::max<uint64_t>(kParallelChunkBytes / sizeof(float) / static_cast<uint64_t>(std::max<int64_t>(out_plane, 1)), 1),
                    [&](uint64_t begin, uint64_t end) {
                      for (auto p = static_cast<int64_t>(begin); p < static_cast<int64_t>(end); ++p) plane(x, y, p);
                    });
  }

  bool reads_at_run_time(size_t input) const override { return input == 0; }  // weights and bias are copied
  std::string implementation() const override { return "memplan depthwise loop"; }

 private:
  // Output plane p (image p / M, channel p % M) from its input channel.
  void plane(const float* x, float* y, int64_t p) const {
    const Window& w = c_.window;
    const int64_t m = c_.y[1], channels = c_.x[1], in_h = c_.x[2], in_w = c_.x[3];
    const int64_t out_h = c_.y[2], out_w = c_.y[3], kh = w.kernel[0], kw = w.kernel[1];
    const int64_t o = p % m, image = p / m, c = o / (m / channels);
    const float* in = x + (image * channels + c) * in_h * in_w;
    const float* taps = c_.weights.data() + o * kh * kw;
    const float b = c_.bias.empty() ? 0.f : c_.bias[static_cast<size_t>(o)];
    for (int64_t oy = 0; oy < out_h; ++oy) {
      float* row = y + (p * out_h + oy) * out_w;
      std::fill(row, row + out_w, b);
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = oy * w.strides[0] - w.pads_begin[0] + ky * w.dilations[0];
        if (iy < 0 || iy >= in_h) continue;
        const float* in_row = in + iy * in_w;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const TapRange& t = columns_[static_cast<size_t>(kx)];
          if (t.end > t.first)
            add_scaled(taps[ky * kw + kx], in_row + t.input, w.strides[1], row + t.first, t.end - t.first);
        }
      }
      for (const EltwiseStep& s : c_.steps) apply_step(s, row, static_cast<uint64_t>(out_w));
    }
  }

  DepthwiseConv c_;
  std::string where_;
  std::vector<TapRange> columns_;  // per tap of a row
};

}  // namespace

std::unique_ptr<Kernel> make_depthwise_loop(DepthwiseConv conv, std::string where) {
  const Window& w = conv.window;
  if (conv.x.size() != 4 || conv.y.size() != 4 || w.kernel.size() != 2 || conv.x[1] <= 0 || conv.y[1] % conv.x[1] != 0 ||
      static_cast<int64_t>(conv.weights.size()) != conv.y[1] * w.kernel[0] * w.kernel[1] ||
      (!conv.bias.empty() && static_cast<int64_t>(conv.bias.size()) != conv.y[1]))
    fail_internal(where + ": a depthwise loop for shapes that do not fit");
  return std::make_unique<DepthwiseLoop>(std::move(conv), std::move(where));
}

}  // namespace memplan::rt::dnnl_kernels
