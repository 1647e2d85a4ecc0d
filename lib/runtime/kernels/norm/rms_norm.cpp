// RMSNormalization (opset 23): x divided by the root mean square of its elements over the axes
// from `axis` on, times scale (one value per element of those axes, or a broadcast of them):
// LLaMA's and T5's norm. The mean of squares accumulates in double.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

class RmsNormKernel final : public Kernel {
 public:
  RmsNormKernel(std::string where, int64_t axis, double epsilon) : where_(std::move(where)), axis_(axis), epsilon_(epsilon) {}

  // Each group's (row's) statistics are taken before any of it is written, then each element is
  // written after its own read: y may take x's bytes.
  bool may_overwrite_input(size_t input) const override { return input == 0; }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const TensorView& scale = a.inputs[1];
    const int first = normalize_axis(axis_, x.rank, where_);
    uint64_t row = 1;
    for (int d = first; d < x.rank; ++d) row *= static_cast<uint64_t>(x.dims[d]);
    // scale: the normalized axes' shape (or a suffix of it), broadcast over the rest of a row.
    const uint64_t s = scale.element_count();
    if (s == 0 || row % s != 0 || scale.rank > x.rank - first)
      fail_at(where_, "scale" + dims_text(scale) + " does not broadcast to the normalized axes of" + dims_text(x));
    for (int k = 0; k < scale.rank; ++k)
      if (scale.dims[scale.rank - 1 - k] != 1 && scale.dims[scale.rank - 1 - k] != x.dims[x.rank - 1 - k])
        fail_at(where_, "scale" + dims_text(scale) + " does not broadcast to the normalized axes of" + dims_text(x));
    set_shape(a.outputs[0], x.rank, x.dims.data(), where_);
    const uint64_t rows = row ? x.element_count() / row : 0;
    const float* xs = x.as<const float>();
    const float* sc = scale.as<const float>();
    float* ys = a.outputs[0].as<float>();
    parallel_chunks(rows, std::max<uint64_t>(kParallelChunkBytes / 4 / std::max<uint64_t>(row, 1), 1), [&](uint64_t begin, uint64_t end) {
      for (uint64_t r = begin; r < end; ++r) {
        const float* in = xs + r * row;
        float* out = ys + r * row;
        double sq = 0;
        for (uint64_t i = 0; i < row; ++i) sq += static_cast<double>(in[i]) * in[i];
        const auto inv = static_cast<float>(1 / std::sqrt(sq / static_cast<double>(row) + epsilon_));
        for (uint64_t i = 0; i < row; ++i) out[i] = in[i] * inv * sc[i % s];
      }
    });
  }

 private:
  std::string where_;
  int64_t axis_;
  double epsilon_;
};

}  // namespace

Factory make_rms_norm(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  require_float32_inputs(n, 2, where);
  if (n.attr_int("stash_type", 1) != 1) unsupported_at(where, "stash_type other than 1 (float32) is not supported");
  return std::make_unique<RmsNormKernel>(std::move(where), n.attr_int("axis", -1), n.attr_float("epsilon", 1e-5f));
}

}  // namespace memplan::rt::norm
