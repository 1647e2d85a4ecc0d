// Pooling, BatchNormalization, LRN, Softmax and LogSoftmax.
#include <algorithm>
#include <optional>
#include <utility>

#include "ir/fused_activation.h"
#include "ir/window_pool.h"
#include "plan/plan.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/dnnl/banded_kernel.h"
#include "runtime/kernels/dnnl/factories.h"
#include "runtime/kernels/dnnl/row_bands.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::dnnl_kernels {

namespace {

// `k` running `pd` from input 0 (`src`) to output 0 (`dst`): pools, softmax and LRN.
std::unique_ptr<Kernel> src_to_dst(std::unique_ptr<PrimitiveKernel> k, const dnnl::primitive_desc& pd,
                                   const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
  k->set_primitive(pd);
  k->bind_input(DNNL_ARG_SRC, 0, src);
  k->bind_output(DNNL_ARG_DST, 0, dst);
  return k;
}

// A pool in chunks of `per` channels of [1, C, h, w] tensors of `type`, each chunk's kernel made
// by `make(channels)`; null where it makes none.
template <class Make>
std::unique_ptr<BandedKernel> channel_chunks(const Dims& x, const Dims& y, dnnl::memory::data_type type, int64_t per,
                                             const Make& make, const std::string& where) {
  const uint64_t elt = dnnl_data_type_size(static_cast<dnnl_data_type_t>(type));
  const uint64_t in_plane = static_cast<uint64_t>(x[2] * x[3]) * elt, out_plane = static_cast<uint64_t>(y[2] * y[3]) * elt;
  std::vector<BandedKernel::Part> parts;
  std::vector<BandedKernel::Band> bands;
  for (int64_t c0 = 0; c0 < x[1]; c0 += per) {
    const int64_t channels = std::min(per, x[1] - c0);
    if (parts.empty() || channels != per) {  // one part for the full chunks, one for a shorter last
      std::unique_ptr<Kernel> k = make(channels);
      if (!k) return nullptr;
      const uint64_t in = static_cast<uint64_t>(channels) * in_plane, out = static_cast<uint64_t>(channels) * out_plane;
      parts.push_back({std::move(k), in, out, in, out});
    }
    bands.push_back({parts.size() - 1, static_cast<uint64_t>(c0) * in_plane, static_cast<uint64_t>(c0) * out_plane});
  }
  return std::make_unique<BandedKernel>(BandedKernel::Cut::Channels, std::move(parts), std::move(bands),
                                        static_cast<uint64_t>(x[1]) * in_plane, static_cast<uint64_t>(y[1]) * out_plane, -1,
                                        where);
}

// AveragePool with count_include_pad = 1 and ceil_mode windows that run past the end padding:
// ONNX (like onnxruntime and PyTorch) divides those by the part of the window inside the padded
// input, oneDNN by the whole window. run() rescales the affected outputs.
class AvgPoolKernel final : public PrimitiveKernel {
 public:
  AvgPoolKernel(const Node& node, const KernelEnv& env, int64_t planes, int64_t plane_size,
                std::vector<std::pair<int64_t, float>> fixes)
      : PrimitiveKernel(node, env), planes_(planes), plane_size_(plane_size), fixes_(std::move(fixes)) {}

 protected:
  void after_execute(const KernelArgs& args) override {
    float* y = args.outputs[0].as<float>();
    for (int64_t p = 0; p < planes_; ++p)
      for (const auto& [pos, f] : fixes_) y[p * plane_size_ + pos] *= f;
  }

 private:
  int64_t planes_, plane_size_;
  std::vector<std::pair<int64_t, float>> fixes_;  // (position in an output plane, factor)
};

}  // namespace

// Output sizes: floor, or with ceil_mode anything up to the ceiling (shape inference may have
// dropped a last window that starts in the padding). oneDNN needs pads that give exactly that
// size, so the end padding grows to cover ceil_mode windows.
Dims pool_end_pads(const Window& w, const Dims& x, const Dims& y, bool ceil_mode, const std::string& at) {
  const size_t spatial = x.size() - 2;
  const Dims in_spatial(x.begin() + 2, x.end());
  if (y.size() != x.size() || y[0] != x[0] || y[1] != x[1])
    fail(at + ": output shape " + dims_string(y) + " does not fit input " + dims_string(x));
  Dims pad_r = w.pads_end;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t span = in_spatial[i] + w.pads_begin[i] + w.pads_end[i] - effective_kernel(w, i);
    if (span < 0) fail(at + ": the kernel is larger than the padded input " + dims_string(x));
    const int64_t lo = span / w.strides[i] + 1;
    const int64_t hi = (ceil_mode && w.auto_pad == AutoPad::NotSet) ? (span + w.strides[i] - 1) / w.strides[i] + 1 : lo;
    const int64_t out = y[i + 2];
    if (out < lo || out > hi) {
      Dims want(y.begin(), y.begin() + 2);
      for (size_t j = 0; j < spatial; ++j) {
        const int64_t sp = in_spatial[j] + w.pads_begin[j] + w.pads_end[j] - effective_kernel(w, j);
        want.push_back((ceil_mode && w.auto_pad == AutoPad::NotSet ? sp + w.strides[j] - 1 : sp) / w.strides[j] + 1);
      }
      fail(at + ": output shape " + dims_string(y) + " differs from the computed " + dims_string(want));
    }
    pad_r[i] = std::max(w.pads_end[i], (out - 1) * w.strides[i] + effective_kernel(w, i) - in_spatial[i] - w.pads_begin[i]);
  }
  return pad_r;
}

namespace {

std::unique_ptr<Kernel> make_pool(const Node& node, const KernelEnv& env, bool is_max) {
  const std::string at = where(node, env);
  if (pools_on_window_loop(node)) return make_window_pool(node, env);  // memplan's loop (window_pool.cpp)
  check_arity(node, env, 1, 1, 1);
  if (node.outputs.size() > (is_max ? 2u : 1u)) fail(at + ": has too many outputs");
  // MaxPool takes 8-bit tensors too (opset 12; and passes/fuse_quantized's QDQ MaxPool): the
  // maximum of bytes, exact in any type.
  if (is_max) require_static(node, env, {DType::Float32, DType::Uint8, DType::Int8});
  else require_float32_static(node, env);
  const DType type = input_at(node, 0)->type.dtype;
  if (output_at(node, 0)->type.dtype != type)
    fail(at + ": output '" + output_at(node, 0)->name + "' is " + dtype_name(output_at(node, 0)->type.dtype) +
         ", the input " + dtype_name(type));
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  Dims x = dims_of(input_at(node, 0)), y = dims_of(output_at(node, 0));
  if (x.size() < 3 || x.size() > 5)
    fail_unsupported(at + ": pooling a rank-" + std::to_string(x.size()) + " input is not supported (1-D, 2-D and 3-D only)");
  const size_t spatial = x.size() - 2;
  Window w = read_window(node, at, spatial, {});
  const bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = !is_max && node.attr_int("count_include_pad", 0) != 0;
  Dims in_spatial(x.begin() + 2, x.end());
  resolve_forward_pads(w, in_spatial);

  const Dims pad_r = pool_end_pads(w, x, y, ceil_mode, at);

  // Rescaling for include-pad averages whose window passes the end padding.
  std::vector<std::pair<int64_t, float>> fixes;
  if (include_pad && pad_r != w.pads_end) {
    const Dims out_spatial(y.begin() + 2, y.end());
    std::vector<std::vector<float>> axis(spatial);
    for (size_t i = 0; i < spatial; ++i)
      for (int64_t o = 0; o < out_spatial[i]; ++o) {
        const int64_t start = o * w.strides[i] - w.pads_begin[i];
        const int64_t end = std::min(start + w.kernel[i], in_spatial[i] + w.pads_end[i]);
        axis[i].push_back(static_cast<float>(w.kernel[i]) / static_cast<float>(end - start));
      }
    const int64_t plane = product(out_spatial);
    for (int64_t pos = 0; pos < plane; ++pos) {
      float f = 1.f;
      int64_t rest = pos;
      for (size_t i = spatial; i-- > 0;) {
        f *= axis[i][static_cast<size_t>(rest % out_spatial[i])];
        rest /= out_spatial[i];
      }
      if (f != 1.f) fixes.emplace_back(pos, f);
    }
  }

  dnnl::memory::desc x_md = activation_md(input_at(node, 0)), y_md = pooled_md(y, output_at(node, 0), input_at(node, 0));
  // One channel: NCHW and NHWC are the same bytes, and oneDNN pools NHWC on its jit kernels on
  // any ISA (M-LSD's 3x3 MaxPool of a 160x160 map on AVX2: 1.09 ms on simple_nchw, plain).
  if (x.size() == 4 && x[1] == 1 && x_md == layout_md(x, elt::dnnl_type(type), 0) &&
      y_md == layout_md(y, elt::dnnl_type(type), 0)) {
    x_md = layout_md(x, elt::dnnl_type(type), Value::kChannelsLast);
    y_md = layout_md(y, elt::dnnl_type(type), Value::kChannelsLast);
  }
  if (!fixes.empty() && input_at(node, 0)->channel_block != 0)
    fail_internal(at + ": include-pad averages are rescaled in plain layout only");
  dnnl::algorithm alg = is_max ? dnnl::algorithm::pooling_max
                               : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                             : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::primitive_attr attr = user_scratchpad_attr();
  auto pool_pd = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
    using fwd = dnnl::pooling_v2_forward;
    fwd::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, w.strides, w.kernel, dnnl_dilations(w),
                w.pads_begin, pad_r);
    return fwd::primitive_desc(d, attr, env.dnnl->engine);
  };
  auto pd = make_pd(at, [&] { return pool_pd(x_md, y_md); });
  auto make_kernel = [&]() -> std::unique_ptr<PrimitiveKernel> {
    if (fixes.empty()) return std::make_unique<PrimitiveKernel>(node, env);
    return std::make_unique<AvgPoolKernel>(node, env, y[0] * y[1], product(y, 2), fixes);
  };
  // Below AVX-512 oneDNN has no jit pooling on plain NCHW, and its C++ one is about 20 times
  // slower (squeezenet's first MaxPool: 13 ms against 0.6 ms); for 8-bit tensors it has jit code
  // for NHWC only. A plain tensor the layout passes left (a quantized convolution's output, say)
  // is then pooled channel-blocked (8-bit: channels-last), staged through the scratchpad, with
  // leaner choices for kernel selection: the same in chunks of channels (each staging its own),
  // then the plain kernel.
  const int staged = type == DType::Float32 ? dnnl_channel_block() : Value::kChannelsLast;
  const bool slow_plain = std::string(pd.impl_info_str()).rfind("jit", 0) != 0;
  if (slow_plain && staged != 0 && x.size() == 4 && (staged < 0 || x[1] % staged == 0) &&
      input_at(node, 0)->channel_block == 0 && output_at(node, 0)->channel_block == 0) {
    try {
      const dnnl::memory::data_type dt = elt::dnnl_type(type);
      const auto is_jit = [](const dnnl::primitive_desc& p) { return std::string(p.impl_info_str()).rfind("jit", 0) == 0; };
      // The pool of `channels` channels, staged: the whole tensors, or a chunk of their channels.
      const auto staged_pool = [&](int64_t channels) -> std::unique_ptr<Kernel> {
        const Dims xc{x[0], channels, x[2], x[3]}, yc{y[0], channels, y[2], y[3]};
        auto p = pool_pd(layout_md(xc, dt, staged), layout_md(yc, dt, staged));
        if (!is_jit(p)) return nullptr;
        std::unique_ptr<PrimitiveKernel> k = make_kernel();
        k->set_primitive(p);
        k->bind_input_staged(DNNL_ARG_SRC, 0, layout_md(xc, dt, 0), p.src_desc());
        k->bind_output_staged(DNNL_ARG_DST, 0, layout_md(yc, dt, 0), p.dst_desc());
        return k;
      };
      if (std::unique_ptr<Kernel> k = staged_pool(x[1])) {
        LeanerChain chain(*k);
        // Chunks of channels (batch 1: a chunk is a dense NCHW tensor, which oneDNN reorders
        // fastest; not the include-pad rescaling, whose positions are the whole output's): two,
        // four, ... whole blocks each, each variant kept if leaner than the one before.
        const int64_t unit = staged > 0 ? staged : 1, blocks = (x[1] + unit - 1) / unit;
        uint64_t last = k->scratchpad_bytes();
        for (int64_t count = 2; x[0] == 1 && fixes.empty() && last > kBandFloor && count <= blocks; count *= 2) {
          std::unique_ptr<BandedKernel> chunks = channel_chunks(x, y, dt, (blocks + count - 1) / count * unit, staged_pool, at);
          if (!chunks || chunks->scratchpad_bytes() >= last) break;
          last = chunks->scratchpad_bytes();
          chain.append(std::move(chunks));
        }
        chain.append(src_to_dst(make_kernel(), pd, x_md, y_md));
        return k;
      }
    } catch (const dnnl::error&) {
      // no such pooling for this window: the plain one
    }
  }
  return src_to_dst(make_kernel(), pd, x_md, y_md);
}

std::unique_ptr<Kernel> make_global_pool(const Node& node, const KernelEnv& env, bool is_max) {
  const std::string at = where(node, env);
  check_arity(node, env, 1, 1, 1);
  require_float32_static(node, env);
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  Dims x = dims_of(input_at(node, 0)), y = dims_of(output_at(node, 0));
  if (x.size() < 3) fail(at + ": input " + dims_string(x) + " needs a spatial dimension");
  Dims want(x.begin(), x.begin() + 2);
  want.resize(x.size(), 1);
  if (y != want) fail(at + ": output shape " + dims_string(y) + " differs from the computed " + dims_string(want));
  if (x.size() > 5) x = {x[0], x[1], product(x, 2)};  // one long spatial axis
  Dims kernel(x.begin() + 2, x.end()), ones(kernel.size(), 1), zeros(kernel.size(), 0);
  Dims y_view(x.begin(), x.begin() + 2);
  y_view.resize(x.size(), 1);
  dnnl::memory::desc x_md = layout_md(x, dnnl::memory::data_type::f32, input_at(node, 0)->channel_block);
  dnnl::memory::desc y_md = pooled_md(y_view, output_at(node, 0), input_at(node, 0));
  dnnl::primitive_attr attr = user_scratchpad_attr();
  auto pd = make_pd(at, [&] {
    using fwd = dnnl::pooling_v2_forward;
    fwd::desc d(dnnl::prop_kind::forward_inference,
                is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding, x_md, y_md,
                ones, kernel, zeros, zeros, zeros);
    return fwd::primitive_desc(d, attr, env.dnnl->engine);
  });
  auto k = std::make_unique<PrimitiveKernel>(node, env);
  return src_to_dst(std::move(k), pd, x_md, y_md);
}

// The longest last axis Softmax runs in memplan's own loop (norm/softmax_loops.cpp). Rows
// of 4420 x 2 floats: 0.157 ms on oneDNN's AVX2 kernel, 0.054 ms in the loop; of 4420 x 4: 0.227
// against 0.085; from 8 floats a row on, oneDNN is as fast or faster (whole `memplan run`, 1 thread).
constexpr int64_t kShortSoftmaxRow = 4;

std::unique_ptr<Kernel> make_softmax_like(const Node& node, const KernelEnv& env, bool log) {
  const std::string at = where(node, env);
  check_arity(node, env, 1, 1, 1);
  require_float32_static(node, env);
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  Dims x = dims_of(input_at(node, 0));
  if (dims_of(output_at(node, 0)) != x) fail(at + ": output shape differs from the input's " + dims_string(x));
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) fail(at + ": the input must have rank 1 or more");
  const bool modern = node.opset >= 13;  // opset < 13: coerce to 2-D at `axis`
  int64_t axis = node.attr_int("axis", modern ? -1 : 1);
  if (axis < -rank || axis >= rank + (modern ? 0 : 1))
    fail(at + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const size_t ax = static_cast<size_t>(axis);
  const int64_t outer = product(x, 0, ax);
  const int64_t mid = modern ? x[ax] : product(x, ax);
  const int64_t inner = modern ? product(x, ax + 1) : 1;
  // oneDNN sets up each row apart: short rows are faster in memplan's own loop.
  if (inner == 1 && mid <= kShortSoftmaxRow)
    return norm::make_softmax_loop(static_cast<uint64_t>(mid), 1, log);
  Dims view = inner == 1 ? Dims{outer, mid} : Dims{outer, mid, inner};
  dnnl::memory::desc md = plain_md(view);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  auto pd = make_pd(at, [&] {
    using fwd = dnnl::softmax_v2_forward;
    fwd::desc d(dnnl::prop_kind::forward_inference,
                log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md, 1);
    return fwd::primitive_desc(d, attr, env.dnnl->engine);
  });
  // Along an axis that is not the last, oneDNN 2.6 has only its reference kernel.
  if (is_reference_implementation(pd.impl_info_str()))
    return norm::make_softmax_loop(static_cast<uint64_t>(mid), static_cast<uint64_t>(inner), log);
  auto k = std::make_unique<PrimitiveKernel>(node, env);
  k->allow_in_place(0);  // oneDNN's softmax runs in place: attention's scores need no buffer of their own
  return src_to_dst(std::move(k), pd, md, md);
}

}  // namespace

std::unique_ptr<Kernel> make_max_pool(const Node& node, const KernelEnv& env) { return make_pool(node, env, true); }
std::unique_ptr<Kernel> make_average_pool(const Node& node, const KernelEnv& env) { return make_pool(node, env, false); }
std::unique_ptr<Kernel> make_global_max_pool(const Node& node, const KernelEnv& env) {
  return make_global_pool(node, env, true);
}
std::unique_ptr<Kernel> make_global_average_pool(const Node& node, const KernelEnv& env) {
  return make_global_pool(node, env, false);
}
std::unique_ptr<Kernel> make_softmax(const Node& node, const KernelEnv& env) { return make_softmax_like(node, env, false); }
std::unique_ptr<Kernel> make_log_softmax(const Node& node, const KernelEnv& env) {
  return make_softmax_like(node, env, true);
}
bool softmax_accepts(const Node& node) {
  const Value* x = node.inputs.empty() ? nullptr : node.inputs[0];
  return x && x->type.dtype == DType::Float32 && x->type.is_static();  // as require_float32_static
}

// Inference: Y = scale * (X - mean) / sqrt(var + epsilon) + B, per channel (dim 1). Training mode
// (opset 14+) is the plain loop of norm_kernels.cpp.
std::unique_ptr<Kernel> make_batch_norm(const Node& node, const KernelEnv& env) {
  const std::string at = where(node, env);
  if (node.opset >= 14 && node.attr_int("training_mode", 0) != 0) return norm::make_batch_norm_training(node, env);
  check_arity(node, env, 5, 5, 1);
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i]) fail_unsupported(at + ": training-mode outputs (mean, var, ...) are not supported");
  if (node.attr_int("training_mode", 0) != 0) fail_unsupported(at + ": training_mode = 1 is not supported");
  if (node.opset < 9 && node.attr_int("spatial", 1) == 0) fail_unsupported(at + ": spatial = 0 is not supported");
  require_float32_static(node, env);
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  Dims x = dims_of(input_at(node, 0));
  if (x.size() < 2) fail(at + ": input " + dims_string(x) + " needs a channel dimension");
  if (dims_of(output_at(node, 0)) != x) fail(at + ": output shape differs from the input's " + dims_string(x));
  const int64_t c = x[1];
  static const char* names[] = {"", "scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    if (dims_of(input_at(node, i)) != Dims{c})
      fail(at + ": " + names[i] + " '" + input_at(node, i)->name + "' has shape " +
           input_at(node, i)->type.shape_string() + ", expected [" + std::to_string(c) + "]");
  if (x.size() > 5) x = {x[0], x[1], product(x, 2)};
  const float eps = node.attr_float("epsilon", 1e-5f);
  const std::optional<FusedActivation> act = fused_activation(node);
  if (act != FusedActivation::None && act != FusedActivation::Relu)
    fail(at + ": " + kFusedActivationAttr + " " + std::to_string(node.attr_int(kFusedActivationAttr, 0)) +
         " is not 0 or 1 (Relu)");
  const bool relu = act == FusedActivation::Relu;
  dnnl::memory::desc md = blocked_md(x, input_at(node, 0)->channel_block), param_md = plain_md({c});
  dnnl::primitive_attr attr = user_scratchpad_attr();
  auto pd = make_pd(at, [&] {
    using fwd = dnnl::batch_normalization_forward;
    using flags = dnnl::normalization_flags;
    auto f = flags::use_global_stats | flags::use_scale | flags::use_shift;
    if (relu) f = f | flags::fuse_norm_relu;  // fused by passes/fuse_conv
    fwd::desc d(dnnl::prop_kind::forward_inference, md, eps, f);
    return fwd::primitive_desc(d, attr, env.dnnl->engine);
  });
  auto k = std::make_unique<PrimitiveKernel>(node, env);
  k->set_primitive(pd);
  k->bind_input(DNNL_ARG_SRC, 0, md);
  k->allow_in_place(0);  // oneDNN's batch normalization runs in place
  const int args[] = {0, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  for (size_t i = 1; i < 5; ++i) {
    const Value* v = input_at(node, i);
    if (v->is_constant()) k->bind_memory(args[i], constant_memory(v, param_md, param_md, k->ctx(), at));
    else k->bind_input(args[i], i, param_md);
  }
  k->bind_output(DNNL_ARG_DST, 0, md);
  return k;
}

// ONNX: y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2),
// c + ceil((size-1)/2)])^beta. oneDNN's lrn_across_channels is the same for odd sizes; for even
// sizes its window leans the other way, so those are refused.
std::unique_ptr<Kernel> make_lrn(const Node& node, const KernelEnv& env) {
  const std::string at = where(node, env);
  check_arity(node, env, 1, 1, 1);
  require_float32_static(node, env);
  const Attribute* size_attr = node.attr("size");
  if (!size_attr || size_attr->kind != Attribute::Kind::Int) fail(at + ": attribute 'size' is required");
  const int64_t size = size_attr->i;
  if (size < 1) fail(at + ": size " + std::to_string(size) + " must be positive");
  if (size % 2 == 0) fail_unsupported(at + ": LRN with an even size (" + std::to_string(size) + ") is not supported");
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  Dims x = dims_of(input_at(node, 0));
  if (x.size() < 2) fail(at + ": input " + dims_string(x) + " needs a channel dimension");
  if (dims_of(output_at(node, 0)) != x) fail(at + ": output shape differs from the input's " + dims_string(x));
  const float alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
              bias = node.attr_float("bias", 1.f);
  const int block = input_at(node, 0)->channel_block;
  dnnl::memory::desc md = block ? blocked_md(x, block) : plain_md({x[0], x[1], product(x, 2), 1});
  dnnl::primitive_attr attr = user_scratchpad_attr();
  auto pd = make_pd(at, [&] {
    using fwd = dnnl::lrn_forward;
    fwd::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels, md, size, alpha, beta, bias);
    return fwd::primitive_desc(d, attr, env.dnnl->engine);
  });
  return src_to_dst(std::make_unique<PrimitiveKernel>(node, env), pd, md, md);
}

}  // namespace memplan::rt::dnnl_kernels
