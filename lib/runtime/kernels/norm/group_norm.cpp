// GroupNormalization (opsets 18 and 21): x [N, C, ...] normalized over each group of C / G
// channels and all their elements, then scaled and shifted: by group at opset 18 (scale and bias
// [G]), by channel from 21 on ([C]). Statistics in double, two passes, as the norm family's.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(std::string where, int64_t groups, double epsilon, bool per_channel)
      : where_(std::move(where)), groups_(groups), epsilon_(epsilon), per_channel_(per_channel) {}

  // Each group's (row's) statistics are taken before any of it is written, then each element is
  // written after its own read: y may take x's bytes.
  bool may_overwrite_input(size_t input) const override { return input == 0; }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    if (x.rank < 2) fail_at(where_, "the input must have rank 2 or more");
    const int64_t n = x.dims[0], c = x.dims[1];
    if (c % groups_ != 0)
      fail_at(where_, std::to_string(c) + " channels do not split into " + std::to_string(groups_) + " groups");
    const int64_t params = per_channel_ ? c : groups_;
    for (const TensorView* t : {&a.inputs[1], &a.inputs[2]})
      if (t->element_count() != static_cast<uint64_t>(params))
        fail_at(where_, std::string("scale and bias must have ") + std::to_string(params) + " elements (one per " +
                            (per_channel_ ? "channel" : "group") + ")");
    set_shape(a.outputs[0], x.rank, x.dims.data(), where_);
    const auto spatial = static_cast<int64_t>(x.element_count() / static_cast<uint64_t>(std::max<int64_t>(n * c, 1)));
    const int64_t per_group = c / groups_, count = per_group * spatial;
    const float* xs = x.as<const float>();
    const float* scale = a.inputs[1].as<const float>();
    const float* bias = a.inputs[2].as<const float>();
    float* ys = a.outputs[0].as<float>();
    parallel_chunks(static_cast<uint64_t>(n * groups_), std::max<uint64_t>(kParallelChunkBytes / 4 / std::max<int64_t>(count, 1), 1),
                    [&](uint64_t begin, uint64_t end) {
                      for (uint64_t ng = begin; ng < end; ++ng) {
                        const auto g = static_cast<int64_t>(ng % static_cast<uint64_t>(groups_));
                        const float* in = xs + static_cast<int64_t>(ng) * count;
                        float* out = ys + static_cast<int64_t>(ng) * count;
                        double sum = 0;
                        for (int64_t i = 0; i < count; ++i) sum += in[i];
                        const double mean = count ? sum / static_cast<double>(count) : 0;
                        double sq = 0;
                        for (int64_t i = 0; i < count; ++i) sq += (in[i] - mean) * (in[i] - mean);
                        const double inv = 1 / std::sqrt((count ? sq / static_cast<double>(count) : 0) + epsilon_);
                        for (int64_t k = 0; k < per_group; ++k) {
                          const int64_t p = per_channel_ ? g * per_group + k : g;
                          const auto s = static_cast<float>(inv * scale[p]);
                          const auto b = static_cast<float>(bias[p] - mean * inv * scale[p]);
                          for (int64_t i = k * spatial; i < (k + 1) * spatial; ++i) out[i] = in[i] * s + b;
                        }
                      }
                    });
  }

 private:
  std::string where_;
  int64_t groups_;
  double epsilon_;
  bool per_channel_;
};

}  // namespace

Factory make_group_norm(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  require_float32_inputs(n, 3, where);
  const int64_t groups = n.attr_int("num_groups", 0);
  if (!n.attr("num_groups") || groups < 1) fail_at(where, "num_groups must be given and at least 1");
  if (n.attr_int("stash_type", 1) != 1) unsupported_at(where, "stash_type other than 1 (float32) is not supported");
  return std::make_unique<GroupNormKernel>(std::move(where), groups, n.attr_float("epsilon", 1e-5f), n.opset >= 21);
}

}  // namespace memplan::rt::norm
