#include "runtime/kernels/dnnl/grouped_pointwise_conv.h"

#include <optional>
#include <string>
#include <vector>

#include "runtime/kernels/dnnl/conv_kernel.h"

namespace memplan::rt::dnnl_kernels {

namespace {
constexpr int64_t kMinGroupChannels = 16;  // input and output channels of a group, at least
}  // namespace

std::unique_ptr<Kernel> make_grouped_pointwise_conv(const Node& node, const KernelEnv& env, const GroupedPointwise& g) {
  const Value* w = input_at(node, 1);
  const Value* b = input_at(node, 2);
  if (g.x.size() != 4 || g.group <= 1 || !w->is_constant() || (b && !b->is_constant())) return nullptr;
  const int64_t c = g.x[1], m = g.y[1], groups = g.group, cg = c / groups, mg = m / groups;
  // Narrower groups leave the GEMM's vector registers half used: ShuffleNet's stem-side 1x1 of 4
  // groups of 6 -> 28 channels at 56x56 takes 0.114 ms against 0.080 for AVX-512's direct kernel.
  if (cg < kMinGroupChannels || mg < kMinGroupChannels) return nullptr;
  const int64_t rows = g.x[0] * g.x[2] * g.x[3];
  // The bias goes in with the fused activation after the primitive: oneDNN 2.6's GEMM matmul has
  // no bias per batch, and a per-group binary post-op crashed its GEMM matmul on these strided
  // views in a trial (on plain views it took the reference kernel). An activation it
  // cannot apply after the bias itself (Sigmoid, Swish) keeps the convolution.
  std::vector<EltwiseStep> after;
  if (b) {
    if (const std::optional<std::vector<EltwiseStep>> steps = after_primitive(node)) after = *steps;
    else if (const std::optional<std::vector<EltwiseStep>> all = fused_steps(node); !all || !all->empty()) return nullptr;
  }
  const std::string at = where(node, env);
  dnnl::post_ops po;
  if (g.fused_add) po.append_sum(1.f);
  if (!b) append_activation(po, node, at);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(po);
  // The same bytes as [group, rows, channels of a group] matrices: a group's channels sit side by
  // side in each pixel's row of C (or M) channels.
  const dnnl::memory::desc src = strided_md({groups, rows, cg}, {cg, c, 1});
  const dnnl::memory::desc dst = strided_md({groups, rows, mg}, {mg, m, 1});
  // ONNX's weights [M, C/g, 1, 1] are [group][M/g][C/g]: the matmul's [group][C/g][M/g] transposed.
  const dnnl::memory::desc w_user = strided_md({groups, cg, mg}, {mg * cg, 1, cg});
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    pd.emplace(dnnl::matmul::desc(src, any_md({groups, cg, mg}), dst), attr, env.dnnl->engine);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  if (std::string(pd->impl_info_str()).find("gemm") == std::string::npos) return nullptr;
  const auto f32 = dnnl::memory::data_type::f32;
  const dnnl::memory::desc x_channels_last = layout_md(g.x, f32, Value::kChannelsLast);
  const dnnl::memory::desc y_channels_last = layout_md(g.y, f32, Value::kChannelsLast);
  const bool staged_out = !(g.y_given == y_channels_last);
  auto k = std::make_unique<ConvKernel>(node, env, g.fused_add && !staged_out, "grouped 1x1 as a batched matmul, ");
  k->set_primitive(*pd);
  k->bind_input_staged(DNNL_ARG_SRC, 0, g.x_given, x_channels_last, src);
  k->bind_memory(DNNL_ARG_WEIGHTS, constant_memory(w, w_user, pd->weights_desc(), k->ctx(), at + ": weights"));
  // A fused Add's addend is reordered into a staged output before the sum post-op adds to it.
  k->bind_output_staged(DNNL_ARG_DST, 0, g.y_given, y_channels_last, g.fused_add ? 3 : -1, dst);
  if (g.fused_add) k->allow_in_place(3);
  k->apply_after(b ? constant_floats(b, at) : std::vector<float>{}, m, std::move(after));
  return k;
}

}  // namespace memplan::rt::dnnl_kernels
