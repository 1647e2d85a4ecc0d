// Conv (with the fusions documented in dnnl/registration.cpp) and ConvTranspose.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "ir/fused_activation.h"
#include "ir/winograd_conv.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"
#include "runtime/kernels/dnnl/banded_kernel.h"
#include "runtime/kernels/dnnl/conv_kernel.h"
#include "runtime/kernels/dnnl/depthwise_loop.h"
#include "runtime/kernels/dnnl/factories.h"
#include "runtime/kernels/dnnl/grouped_pointwise_conv.h"
#include "runtime/kernels/dnnl/row_bands.h"
#include "runtime/kernels/dnnl/tiled_deconv.h"
#include "runtime/kernels/dnnl/winograd.h"
#include "runtime/kernels/linalg/weights_gemv.h"

namespace memplan::rt::dnnl_kernels {

namespace {

struct ConvShapes {
  Dims x, w, y;
  int64_t group = 1;
  size_t spatial = 0;
};

// The weights' logical oneDNN dims: [M, C/g, k...] or, grouped, [g, M/g, C/g, k...]. `out_ch`,
// `in_ch` are the convolution's (for ConvTranspose, the deconvolution's) channel counts.
Dims weight_dims(int64_t group, int64_t out_ch, int64_t in_ch, const Dims& kernel) {
  Dims d;
  if (group > 1) d = {group, out_ch / group, in_ch / group};
  else d = {out_ch, in_ch};
  d.insert(d.end(), kernel.begin(), kernel.end());
  return d;
}

ConvShapes read_shapes(const Node& node, const std::string& where, const char* op) {
  ConvShapes s;
  s.x = dims_of(input_at(node, 0));
  s.w = dims_of(input_at(node, 1));
  s.y = dims_of(output_at(node, 0));
  if (s.x.size() < 3 || s.x.size() > 5)
    fail_unsupported(where + ": " + op + " on a rank-" + std::to_string(s.x.size()) +
                     " input is not supported (1-D, 2-D and 3-D only)");
  if (s.w.size() != s.x.size() || s.y.size() != s.x.size())
    fail(where + ": input " + dims_string(s.x) + ", weights " + dims_string(s.w) + " and output " +
         dims_string(s.y) + " must have the same rank");
  s.spatial = s.x.size() - 2;
  s.group = node.attr_int("group", 1);
  if (s.group < 1) fail(where + ": group " + std::to_string(s.group) + " must be positive");
  return s;
}

// Bias (input 2) as a constant or a run-time input.
void bind_bias(PrimitiveKernel& k, const Node& node, const dnnl::primitive_desc& pd) {
  const Value* b = input_at(node, 2);
  if (!b) return;
  dnnl::memory::desc md = plain_md(dims_of(b));
  if (b->is_constant()) k.bind_memory(DNNL_ARG_BIAS, constant_memory(b, md, pd.query_md(dnnl::query::weights_md, 1), k.ctx(), k.where()));
  else k.bind_input(DNNL_ARG_BIAS, 2, md);
}

void check_bias(const Node& node, const std::string& where, int64_t channels) {
  const Value* b = input_at(node, 2);
  if (b && dims_of(b) != Dims{channels})
    fail(where + ": bias '" + b->name + "' has shape " + dims_string(dims_of(b)) + ", expected [" +
         std::to_string(channels) + "]");
}

// make_conv's steps: check the node against its shapes and window, choose the layouts oneDNN has
// a fast kernel for, then bind the primitive's memories.
class ConvBuilder {
 public:
  ConvBuilder(const Node& node, const KernelEnv& env) : node_(node), env_(env), at_(where(node, env)) {}

  // `grouped_matmul`: whether a grouped 1x1 convolution may run as a batched matmul.
  std::unique_ptr<Kernel> build(bool grouped_matmul = true) {
    check_arity(node_, env_, 2, 4, 1);
    require_float32_static(node_, env_);
    if (empty_output(node_)) return std::make_unique<NoopKernel>();
    check_geometry();
    set_post_ops();
    init_descs();
    choose_layouts();
    try_direct_kernel();
    try_padded_source();
    if (std::unique_ptr<Kernel> k = grouped_matmul ? grouped_pointwise() : nullptr) {
      // The convolution itself (and its leaner variants), for kernel selection to take where the
      // matmul's staged activations set the arena's peak. Made now: the model's constants are
      // released once its kernels are made.
      if (k->scratchpad_bytes() > 0) k->set_leaner(ConvBuilder(node_, env_).build(false));
      return k;
    }
    if (std::unique_ptr<Kernel> k = depthwise_loop()) return k;
    if (std::unique_ptr<Kernel> k = one_pixel_gemv()) return k;
    try_block_diagonal();
    std::unique_ptr<Kernel> k = bind_clamped_gemm(addend_ != nullptr);
    if (!k) k = bind();
    if (dense_.empty() && pad_offsets_.empty()) defer_leaner(*k);
    if (const int tile = winograd_tile(node_))
      if (std::unique_ptr<Kernel> w = winograd_kernel(tile)) {
        w->set_leaner(std::move(k));
        return w;
      }
    return k;
  }

  // Where the node is one oneDNN has a Winograd kernel of `tile` for (winograd.h): its tile, the
  // weight bytes it adds and its scratchpad.
  std::optional<WinogradKernel> probe_winograd(int tile) {
    check_arity(node_, env_, 2, 4, 1);
    require_float32_static(node_, env_);
    if (empty_output(node_)) return std::nullopt;
    check_geometry();
    set_post_ops();
    init_descs();
    const std::optional<dnnl::convolution_forward::primitive_desc> p = winograd(tile);
    if (!p) return std::nullopt;
    const uint64_t own = static_cast<uint64_t>(product(wdims_)) * sizeof(float), transformed = p->weights_desc().get_size();
    return WinogradKernel{tile_of(*p), transformed > own ? transformed - own : 0, p->scratchpad_desc().get_size()};
  }

  // The convolution on one band of rows whose views are the band's own buffers (a patch chain's
  // tile buffers): on the views' layouts where oneDNN has a fast kernel for them, else on its
  // choice with staged copies; null where that is a slow one too. A fused Add's addend is read
  // with the output's view (the patch chain passes the output's bytes, holding the addend).
  std::unique_ptr<Kernel> rows(const BandViews& b) {
    check_arity(node_, env_, 2, 4, 1);
    require_float32_static(node_, env_);
    check_geometry();
    set_post_ops();
    init_descs();
    if (s_.spatial != 2) return nullptr;
    const Window whole = w_;
    describe_band(b, false, whole);
    dst_md_ = b.y;
    if (auto exact = make(b.x); !is_slow(exact)) pd_ = exact;
    return is_slow(pd_) ? nullptr : bind();
  }

 private:
  // oneDNN 2.6's GEMM convolution applies eltwise post-ops in a slow loop (a 1x1 Conv of 24
  // channels at 128x128 with Relu after a sum post-op: 4.9 ms, against 0.24 ms without the
  // Relu; a 1x1 Conv of 32 -> 48 channels at 24x32 with a Linear step: 0.36 ms, against 0.03):
  // the kernel then applies the fused steps itself (apply_step), after the primitive, over its
  // whole output (so not a band of rows, whose view spans other rows). `sum`: the primitive has
  // a sum post-op. Null where that does not apply (another kernel, Sigmoid or Swish steps).
  std::unique_ptr<Kernel> bind_clamped_gemm(bool sum) {
    const std::optional<std::vector<EltwiseStep>> steps = after_primitive(node_);
    if (!dense_.empty() || !steps || std::string(pd_.impl_info_str()).find("gemm") == std::string::npos)
      return nullptr;
    const dnnl::primitive_attr fused_attr = attr_;
    const auto fused_pd = pd_;
    dnnl::post_ops po;
    if (sum) po.append_sum(1.f);
    attr_ = user_scratchpad_attr();
    attr_.set_post_ops(po);
    pd_ = make(fused_pd.src_desc());
    std::unique_ptr<Kernel> k;
    if (pd_.dst_desc() == fused_pd.dst_desc() && std::string(pd_.impl_info_str()) == fused_pd.impl_info_str()) {
      k = bind();
      static_cast<ConvKernel&>(*k).apply_after({}, 0, *steps);
    }
    attr_ = fused_attr;
    pd_ = fused_pd;
    return k;
  }

  // The shapes, weights, bias, window and output shape, and the fused Add's input.
  void check_geometry() {
    s_ = read_shapes(node_, at_, "Conv");
    c_ = s_.x[1];
    m_ = s_.w[0];
    if (s_.w[1] * s_.group != c_ || m_ % s_.group != 0)
      fail(at_ + ": weights " + dims_string(s_.w) + " do not fit input " + dims_string(s_.x) + " with group " +
           std::to_string(s_.group));
    check_bias(node_, at_, m_);
    w_ = read_window(node_, at_, s_.spatial, Dims(s_.w.begin() + 2, s_.w.end()));
    Dims in_spatial(s_.x.begin() + 2, s_.x.end());
    resolve_forward_pads(w_, in_spatial);
    Dims expected{s_.x[0], m_};
    for (size_t i = 0; i < s_.spatial; ++i) {
      int64_t span = in_spatial[i] + w_.pads_begin[i] + w_.pads_end[i] - effective_kernel(w_, i);
      if (span < 0) fail(at_ + ": the kernel is larger than the padded input " + dims_string(s_.x));
      expected.push_back(span / w_.strides[i] + 1);
    }
    if (expected != s_.y)
      fail(at_ + ": output shape " + dims_string(s_.y) + " differs from the computed " + dims_string(expected));
    addend_ = input_at(node_, 3);
    if (addend_ && dims_of(addend_) != s_.y)
      fail_unsupported(at_ + ": the fused Add input '" + addend_->name + "' has shape " +
                       dims_string(dims_of(addend_)) + ", it must have the output's shape " + dims_string(s_.y));
    if (s_.spatial == 1) as_one_row();
  }

  // A 1-D convolution as a 2-D one of one row: the same bytes ([N, C, W] is [N, C, 1, W], and
  // its weights [M, C/g, 1, k]), but oneDNN 2.6's fast kernels take more of them as 2-D. A
  // Conformer's depthwise 31-tap convolution of 144 channels at 2x200 ran on oneDNN's GEMM
  // as 1-D, 2.3 ms; as one row, on brdgmm_dw with channels-last copies, 0.05 ms.
  void as_one_row() {
    for (Dims* d : {&s_.x, &s_.y, &s_.w}) d->insert(d->begin() + 2, 1);
    s_.spatial = 2;
    for (Dims* d : {&w_.kernel, &w_.strides, &w_.dilations}) d->insert(d->begin(), 1);
    for (Dims* d : {&w_.pads_begin, &w_.pads_end}) d->insert(d->begin(), 0);
  }

  // The fused Add (sum post-op) comes before the fused activation.
  void set_post_ops() {
    dnnl::post_ops po;
    if (addend_) po.append_sum(1.f);
    append_activation(po, node_, at_);
    attr_ = user_scratchpad_attr();
    attr_.set_post_ops(po);
  }

  // Activations come in the layouts the layout pass chose. Towards a blocked output oneDNN picks
  // the source layout itself (a 3-channel image stays plain; another plain source is reordered
  // into the scratchpad each run), and it falls back on that too if it has no fast kernel for
  // the given one.
  void init_descs() {
    xv_ = input_at(node_, 0);
    wv_ = input_at(node_, 1);
    wdims_ = weight_dims(s_.group, m_, c_, w_.kernel);
    // From s_, not the values' own dims: a 1-D convolution's are one row of 2-D (as_one_row).
    x_md_ = layout_md(s_.x, dnnl::memory::data_type::f32, xv_->channel_block);
    y_md_ = dst_md_ = layout_md(s_.y, dnnl::memory::data_type::f32, output_at(node_, 0)->channel_block);
    user_w_md_ = plain_md(wdims_);
    w_md_ = wv_->is_constant() ? any_md(wdims_) : user_w_md_;
  }

  dnnl::convolution_forward::primitive_desc make(const dnnl::memory::desc& src_md) const {
    return make_pd(at_, [&] {
      using fwd = dnnl::convolution_forward;
      auto kind = dnnl::prop_kind::forward_inference;
      auto alg = dnnl::algorithm::convolution_direct;
      Dims dil = dnnl_dilations(w_);
      if (input_at(node_, 2) && with_bias_) {
        fwd::desc d(kind, alg, src_md, w_md_, plain_md({m_}), dst_md_, w_.strides, dil, w_.pads_begin, w_.pads_end);
        return fwd::primitive_desc(d, attr_, env_.dnnl->engine);
      }
      fwd::desc d(kind, alg, src_md, w_md_, dst_md_, w_.strides, dil, w_.pads_begin, w_.pads_end);
      return fwd::primitive_desc(d, attr_, env_.dnnl->engine);
    });
  }

  // Output rows and columns of a Winograd kernel's tile: oneDNN's F(2,3) kernel is "..._2x3",
  // the others compute F(4,3).
  static int tile_of(const dnnl::primitive_desc& p) {
    return std::string(p.impl_info_str()).find("2x3") != std::string::npos ? 2 : 4;
  }

  // oneDNN's Winograd kernel of `tile` (0: its first choice) for the activations in their given
  // layouts (its kernels take channel-blocked ones and stage nothing), none where it has none: a
  // 2-D 3x3 window of stride 1, no dilation, one group, constant weights (transformed once, at load).
  std::optional<dnnl::convolution_forward::primitive_desc> winograd(int tile) const {
    const auto all = [](const Dims& d, int64_t v) { return std::all_of(d.begin(), d.end(), [v](int64_t e) { return e == v; }); };
    // (Not the block-diagonal form of a grouped convolution, nor a source padded by the kernel:
    // their weights and source are not the node's.)
    if (s_.spatial != 2 || s_.group != 1 || !dense_.empty() || !pad_offsets_.empty() || !wv_->is_constant() ||
        !all(w_.kernel, 3) || !all(w_.strides, 1) || !all(w_.dilations, 1) || xv_->channel_block <= 0 ||
        output_at(node_, 0)->channel_block <= 0)
      return std::nullopt;
    try {
      using fwd = dnnl::convolution_forward;
      const auto kind = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_winograd;
      const Dims dil = dnnl_dilations(w_);
      std::optional<fwd::desc> d;
      if (input_at(node_, 2) && with_bias_)
        d.emplace(kind, alg, x_md_, w_md_, plain_md({m_}), y_md_, w_.strides, dil, w_.pads_begin, w_.pads_end);
      else
        d.emplace(kind, alg, x_md_, w_md_, y_md_, w_.strides, dil, w_.pads_begin, w_.pads_end);
      fwd::primitive_desc p(*d, attr_, env_.dnnl->engine);
      do {
        if (std::string(p.impl_info_str()).find("wino") != std::string::npos && p.src_desc() == x_md_ &&
            p.dst_desc() == y_md_ && (tile == 0 || tile_of(p) == tile))
          return fwd::primitive_desc(p.get());  // a clone of this implementation, apart from the iterator
      } while (p.next_impl());
      return std::nullopt;
    } catch (const dnnl::error&) {
      return std::nullopt;  // no Winograd kernel for this shape, layout or fused activation here
    }
  }

  // The Winograd kernel for a node marked for it (passes/winograd_convs), null where oneDNN has
  // none here. Its weights are transformed from the model's own (oneDNN transforms only plain
  // weights, not another layout's copy), which the model holds until the node's kernels are made.
  std::unique_ptr<Kernel> winograd_kernel(int tile) {
    const std::optional<dnnl::convolution_forward::primitive_desc> p = winograd(tile);
    if (!p) return nullptr;
    weights_.emplace_back(p->weights_desc(), constant_memory(wv_, user_w_md_, p->weights_desc(), *env_.dnnl, at_));
    const auto direct = pd_;
    pd_ = *p;
    std::unique_ptr<Kernel> k = bind();
    pd_ = direct;
    static_cast<ConvKernel&>(*k).give_way_for_memory();
    return k;
  }

  static bool is_ref(const dnnl::primitive_desc& p) { return std::string(p.impl_info_str()).rfind("ref", 0) == 0; }
  bool is_slow(const dnnl::primitive_desc& p) const {
    return is_ref(p) || (s_.group > 1 && std::string(p.impl_info_str()).find("gemm") != std::string::npos);
  }

  void choose_layouts() {
    const bool blocked_out = output_at(node_, 0)->channel_block != 0;
    pd_ = make(blocked_out && xv_->channel_block == 0 ? any_md(s_.x) : x_md_);
    // A channels-last source towards a plain output has only the reference kernel: the output is
    // better computed channels-last too and reordered (one staged copy, not two).
    if (xv_->channel_block == Value::kChannelsLast && !blocked_out && is_ref(pd_)) {
      dst_md_ = channels_last_md(s_.y);
      if (auto p = make(x_md_); !is_slow(p)) pd_ = p;
      else dst_md_ = y_md_;
    }
    // oneDNN's reference convolution is orders of magnitude slower than a reorder: a blocked source
    // towards a plain output is better reordered (to oneDNN's choice, else plain) first.
    if (xv_->channel_block != 0 && is_ref(pd_)) pd_ = make(any_md(s_.x));
    // oneDNN's convolutions pair like with like: a blocked source towards a channels-last output
    // (a grouped Conv of 4 channels a group, which no block divides, after a 1x1 Conv of 128
    // blocked ones: ResNeXt) has only the reference kernel; the source is better reordered.
    if (is_slow(pd_) && output_at(node_, 0)->channel_block == Value::kChannelsLast)
      if (auto p = make(channels_last_md(s_.x)); !is_slow(p)) pd_ = p;
    if (xv_->channel_block != 0 && is_ref(pd_)) pd_ = make(plain_md(s_.x));
    // Grouped (depthwise) convolutions as GEMMs are slow too. Where the given layouts have no fast
    // kernel, the output is computed in oneDNN's choice of layout and reordered (a fused Add's
    // addend is reordered in first); a GEMM that way still beats the reference kernel.
    if (is_slow(pd_)) {
      dst_md_ = any_md(s_.y);
      auto staged = make(any_md(s_.x));
      if (!is_slow(staged) || (is_ref(pd_) && !is_ref(staged))) pd_ = staged;
      else dst_md_ = y_md_;  // no better kernel: keep the given layouts
    }
  }

  // A window wider than 1x1 on oneDNN's GEMM (im2col, then a product) towards a plain output,
  // whose direct kernels take blocked tensors only: the direct kernel and a reorder of the output
  // are faster (AVX2, 1 thread: 3x3 of 64 -> 16 channels at 80x80, 2.74 ms against 1.33; of
  // 32 -> 32 at 160x160, 7.66 against 4.34; of 128 -> 64 at 40x40, 3.29 against 3.42). So is a 1x1
  // convolution from a blocked source to an output no larger, which the GEMM reorders to plain
  // first: one reorder either way, the direct kernel's no larger (the arena does not grow), and the
  // GEMM's kernels, a megabyte of jit code once made, are then never made at all.
  void try_direct_kernel() {
    const bool pointwise = std::all_of(w_.kernel.begin(), w_.kernel.end(), [](int64_t k) { return k == 1; });
    if (s_.group != 1 || (pointwise && (xv_->channel_block == 0 || product(s_.y) > product(s_.x))) ||
        std::string(pd_.impl_info_str()).find("gemm") == std::string::npos)
      return;
    const dnnl::memory::desc given = dst_md_;
    dst_md_ = any_md(s_.y);
    try {
      if (auto p = make(any_md(s_.x)); !is_ref(p) && std::string(p.impl_info_str()).find("gemm") == std::string::npos) {
        pd_ = p;
        return;
      }
    } catch (const Error&) {
      // none: keep the GEMM
    }
    dst_md_ = given;
  }

  // oneDNN 2.6's direct kernels refuse some paddings (on AVX2, a 3x3 convolution dilated by 5 and
  // padded by 5, as RFB modules have: 0.18 ms on its GEMM, 0.065 ms on jit:avx2 without the
  // padding). Where its GEMM or reference kernel would run, the source is better padded with
  // zeros into the scratchpad on each run, for a kernel with no padding of its own.
  void try_padded_source() {
    const auto none = [](const Dims& d) { return std::all_of(d.begin(), d.end(), [](int64_t v) { return v == 0; }); };
    const auto gemm_or_ref = [](const dnnl::convolution_forward::primitive_desc& p) {
      return is_ref(p) || std::string(p.impl_info_str()).find("gemm") != std::string::npos;
    };
    if (s_.spatial != 2 || (none(w_.pads_begin) && none(w_.pads_end)) || !gemm_or_ref(pd_)) return;
    Dims padded = s_.x;
    for (size_t i = 0; i < s_.spatial; ++i) padded[2 + i] += w_.pads_begin[i] + w_.pads_end[i];
    const Window given = w_;
    w_.pads_begin.assign(s_.spatial, 0);
    w_.pads_end.assign(s_.spatial, 0);
    try {
      if (auto p = make(any_md(padded)); !gemm_or_ref(p)) {
        pd_ = p;
        pad_offsets_ = {0, 0, given.pads_begin[0], given.pads_begin[1]};
        return;
      }
    } catch (const Error&) {
      // no kernel for the padded source: keep the given padding
    }
    w_ = given;
  }

  // A grouped 1x1 convolution (stride 1, no padding) oneDNN has no 1x1 kernel for: one batched
  // matmul over the groups, on channels-last activations (grouped_pointwise_conv.h).
  std::unique_ptr<Kernel> grouped_pointwise() const {
    const auto ones = [](const Dims& d) { return std::all_of(d.begin(), d.end(), [](int64_t v) { return v == 1; }); };
    const auto zeros = [](const Dims& d) { return std::all_of(d.begin(), d.end(), [](int64_t v) { return v == 0; }); };
    if (s_.group <= 1 || s_.group == c_ || !ones(w_.kernel) || !ones(w_.strides) || !zeros(w_.pads_begin) ||
        !zeros(w_.pads_end) || std::string(pd_.impl_info_str()).find("1x1") != std::string::npos)
      return nullptr;
    return make_grouped_pointwise_conv(node_, env_, {s_.x, s_.y, s_.group, x_md_, y_md_, addend_ != nullptr});
  }

  // A depthwise convolution (each group one input channel) that oneDNN has only its GEMM or its
  // reference kernel for, on plain activations, with constant weights and no fused Add: memplan's
  // own loop (depthwise_loop.h).
  std::unique_ptr<Kernel> depthwise_loop() const {
    const Value* b = input_at(node_, 2);
    const std::optional<std::vector<EltwiseStep>> steps = fused_steps(node_);
    if (!is_slow(pd_) || s_.group <= 1 || s_.group != c_ || m_ % c_ != 0 || s_.spatial != 2 || addend_ || !steps ||
        !wv_->is_constant() || (b && !b->is_constant()) || xv_->channel_block != 0 ||
        output_at(node_, 0)->channel_block != 0)
      return nullptr;
    return make_depthwise_loop({s_.x, s_.y, w_, constant_floats(wv_, at_),
                                b ? constant_floats(b, at_) : std::vector<float>{}, *steps},
                               at_);
  }

  // A convolution of one pixel (a squeeze-and-excitation block's two 1x1 convolutions after its
  // global pool, a classifier written as a Conv) is a product of [N, C] by the weights' [M, C]
  // rows: memplan's weights-in-place loop (linalg/weights_gemv.h) with the fused activation, where
  // oneDNN would run its GEMM. The GEMM's first use makes its kernels, a megabyte of jit code that
  // the process holds to its end: PaddleOCR's classifier (0.5 MB of weights, 0.33 MB of arena) took
  // it for its 18 such convolutions, and paid it. (A [N, C, 1, 1] tensor has the bytes of [N, C]
  // in every layout.)
  std::unique_ptr<Kernel> one_pixel_gemv() const {
    const auto ones = [](auto begin, auto end) { return std::all_of(begin, end, [](int64_t v) { return v == 1; }); };
    const Value* b = input_at(node_, 2);
    const std::optional<std::vector<EltwiseStep>> steps = fused_steps(node_);
    if (s_.group != 1 || addend_ || !steps || !wv_->is_constant() || (b && !b->is_constant()) || !dense_.empty() ||
        s_.x[0] > kWeightsInPlaceRows || !ones(s_.x.begin() + 2, s_.x.end()) ||
        !ones(s_.y.begin() + 2, s_.y.end()) || !ones(w_.kernel.begin(), w_.kernel.end()) ||
        std::string(pd_.impl_info_str()).find("gemm:") == std::string::npos)
      return nullptr;
    return linalg::make_weights_gemv({s_.x[0], c_, m_, true, 1.f, 1.f, b ? 1 : 0, b ? m_ : 0, *steps}, at_);
  }

  // A few groups with odd channel counts (ShuffleNet) as one dense convolution with block-diagonal
  // weights: `group` times the arithmetic, yet faster than oneDNN's per-group GEMMs.
  void try_block_diagonal() {
    if (!is_slow(pd_) || !wv_->is_constant() || s_.group <= 1 || s_.group > 8 || s_.group == c_) return;
    const std::vector<float> grouped = constant_floats(wv_, at_);
    const int64_t cg = c_ / s_.group, mg = m_ / s_.group, taps = product(w_.kernel);
    dense_.assign(static_cast<size_t>(m_ * c_ * taps), 0.f);
    for (int64_t o = 0; o < m_; ++o)
      for (int64_t i = 0; i < cg; ++i)
        std::copy_n(grouped.begin() + (o * cg + i) * taps, taps, dense_.begin() + (o * c_ + (o / mg) * cg + i) * taps);
    const Dims grouped_dims = wdims_;
    const int64_t group = s_.group;
    wdims_ = weight_dims(1, m_, c_, w_.kernel);
    user_w_md_ = plain_md(wdims_);
    w_md_ = any_md(wdims_);
    dst_md_ = any_md(s_.y);
    s_.group = 1;
    auto dense_pd = make(any_md(s_.x));
    const std::string impl = dense_pd.impl_info_str();
    if (impl.rfind("ref", 0) == 0 || impl.find("gemm") != std::string::npos) {
      dense_.clear();  // no faster after all: keep the grouped primitive and its weights
      s_.group = group;
      wdims_ = grouped_dims;
      user_w_md_ = plain_md(wdims_);
      dst_md_ = y_md_;
    } else {
      pd_ = dense_pd;
    }
  }

  // Scratchpad bytes a primitive needs here, its staged copies of the activations included.
  uint64_t cost(const dnnl::convolution_forward::primitive_desc& p) const {
    uint64_t bytes = p.scratchpad_desc().get_size();
    if (!(x_md_ == p.src_desc())) bytes += p.src_desc().get_size();
    if (!(y_md_ == p.dst_desc())) bytes += p.dst_desc().get_size();
    return bytes;
  }

  // The leanest of oneDNN's implementations for these pairs of source and destination layouts
  // that costs less than `below`. Reference kernels are left out (orders of magnitude slower),
  // and with `fast_only` grouped GEMMs too (bands and chunks do not take them).
  std::optional<dnnl::convolution_forward::primitive_desc> leanest(
      std::initializer_list<std::pair<dnnl::memory::desc, dnnl::memory::desc>> layouts, uint64_t below,
      bool fast_only) const {
    using fwd = dnnl::convolution_forward;
    std::optional<fwd::primitive_desc> best;
    for (const auto& [src, dst] : layouts) {
      try {
        // The iterator reads the op descriptor: both live in this scope while it walks.
        const auto kind = dnnl::prop_kind::forward_inference;
        const Dims dil = dnnl_dilations(w_);
        std::optional<fwd::desc> d;
        if (input_at(node_, 2) && with_bias_)
          d.emplace(kind, dnnl::algorithm::convolution_direct, src, w_md_, plain_md({m_}), dst, w_.strides, dil,
                    w_.pads_begin, w_.pads_end);
        else
          d.emplace(kind, dnnl::algorithm::convolution_direct, src, w_md_, dst, w_.strides, dil, w_.pads_begin,
                    w_.pads_end);
        fwd::primitive_desc p(*d, attr_, env_.dnnl->engine);
        do {
          if (!(fast_only ? is_slow(p) : is_ref(p)) && cost(p) < below) {
            below = cost(p);
            best = fwd::primitive_desc(p.get());  // a clone of this implementation, apart from the iterator
          }
        } while (p.next_impl());
      } catch (const dnnl::error&) {
        // no such configuration: the others may still have one
      }
    }
    return best;
  }

  // Channels-last copies of `dims`: oneDNN's direct kernels for a few channels (fewer than a
  // block) can read and write them with no scratchpad, where its default kernel keeps one.
  static dnnl::memory::desc channels_last_md(const Dims& dims) {
    return layout_md(dims, dnnl::memory::data_type::f32, Value::kChannelsLast);
  }

  // k's chain of leaner variants, made when kernel selection first takes one (pipeline/
  // lean_kernels): most nodes never need one, and made with k they held their own reordered
  // weights and generated code until the variants were settled (peak of `memplan compile`:
  // blazeface_back_256 44.0 -> 32.2 MB, faceplugin_fr_feature 49.5 -> 44.1 MB). The factory holds
  // a copy of this builder with only k's weights and bias: the model releases its constants once
  // its kernels are made, and the variants reorder theirs from k's.
  void defer_leaner(Kernel& k) const {
    if (cost(pd_) == 0) return;
    ConvBuilder b = *this;
    std::erase_if(b.weights_, [&](const auto& copy) { return !(copy.first == pd_.weights_desc()); });
    k.set_leaner([b = std::move(b)]() mutable { return b.leaner_chain(); });
  }

  // The leanest of oneDNN's other implementations, for the given layouts and for the chosen ones,
  // then bands of rows, then chunks of channels: the head of the chain after the chosen kernel.
  // Kernel selection takes a variant where the chosen kernel's scratchpad sets the arena's peak.
  std::unique_ptr<Kernel> leaner_chain() {
    const uint64_t have = cost(pd_);
    // For the given layouts, the chosen ones, and oneDNN's own choice (a blocked kernel whose
    // staged copies of the activations can cost less than a GEMM's im2col buffer).
    const std::optional<dnnl::convolution_forward::primitive_desc> best =
        leanest({{pd_.src_desc(), dst_md_}, {x_md_, y_md_}, {any_md(s_.x), any_md(s_.y)}, {x_md_, any_md(s_.y)},
                 {any_md(s_.x), y_md_}},
                have, false);
    const uint64_t best_cost = best ? cost(*best) : have;
    std::unique_ptr<Kernel> lean;
    if (best) {
      const auto chosen = pd_;
      pd_ = *best;
      lean = bind();
      pd_ = chosen;
    }
    // The chain: the leanest whole kernel, bands of rows, then chunks of channels (made when
    // taken). Kernel selection passes over a variant that is too slow or does not lower the arena
    // for the next one: the chunks, faster than the leanest whole kernel where that is a slow
    // one, may still need more scratchpad than the last bands.
    LeanerChain chain;
    chain.append(std::move(lean));
    for (std::unique_ptr<BandedKernel>& b : bands(best ? best_cost : have)) chain.append(std::move(b));
    if (have > kBandFloor && chunks_apply())
      chain.append_last([node = &node_, env = env_, weights = weights_for(pd_.weights_desc(), *env_.dnnl),
                         bias = bias_values(), have] {
        return ConvBuilder(*node, env).chunked(weights, bias, kChunks, have);
      });
    return chain.take_head();
  }

  // ---- Chunks of channels --------------------------------------------------------------------

  // The first chunked variant's chunks; each next variant has twice as many.
  static constexpr int64_t kChunks = 2;

  // The constant bias's values (none without a bias), from its reordered copy: the model's own
  // may be released by the time a chain of variants is made.
  std::shared_ptr<const std::vector<float>> bias_values() const {
    const Value* b = input_at(node_, 2);
    if (!b) return std::make_shared<const std::vector<float>>();
    const dnnl::memory m = copy_of(biases_, b, plain_md({m_}), plain_md({m_}), *env_.dnnl);
    const auto* data = static_cast<const float*>(m.get_data_handle());
    return std::make_shared<const std::vector<float>>(data, data + m_);
  }

  // Batch 1 (a chunk of channels is then contiguous, plain or channel-blocked), constant weights
  // and bias, more than one group or input channel, not the block-diagonal form.
  bool chunks_apply() const {
    const Value* b = input_at(node_, 2);
    return s_.x[0] == 1 && dense_.empty() && wv_->is_constant() && (!b || b->is_constant()) &&
           xv_->channel_block >= 0 && output_at(node_, 0)->channel_block >= 0 && (s_.group > 1 ? s_.group : c_) > 1;
  }

  // The convolution in chunks of channels, each a kernel of its own on a view of its channels:
  // the first variant in `count` chunks (or as many as the channel blocks allow) that needs less
  // than `below` scratchpad bytes, trying twice as many chunks until one does; null if none does
  // or oneDNN has no fast kernel for a chunk. A grouped convolution is cut between groups: each
  // chunk reads its own input channels and writes its own output channels. Any other is cut
  // between input channels and the chunks' partial sums accumulate in the output (oneDNN's sum
  // post-op): the first chunk adds the bias and the fused Add's addend, the last applies the
  // fused activation. What a kernel stages or unfolds of its input (a blocked copy, a strided
  // 1x1 kernel's unit-stride copy, an im2col buffer) shrinks with the chunk, and unlike bands of
  // rows the views are dense: no strided reorders. Its leaner variant is the next that needs less
  // than it. `weights`: the whole kernel's reordered weights (a handle on its buffer, so the
  // factory keeps no copy of them and the model may release its own); `bias`: the bias's values
  // (none: empty).
  std::unique_ptr<Kernel> chunked(const dnnl::memory& weights, const std::shared_ptr<const std::vector<float>>& bias,
                                  int64_t count, uint64_t below) {
    check_arity(node_, env_, 2, 4, 1);
    check_geometry();
    set_post_ops();
    init_descs();
    if (!chunks_apply()) return nullptr;
    const Chunking ch = chunking();
    // The weights back in ONNX's order, from the whole kernel's reordered copy.
    std::vector<float> w(static_cast<size_t>(product(wdims_)));
    dnnl::memory reordered = weights, plain(user_w_md_, env_.dnnl->engine, w.data());
    dnnl::reorder(reordered, plain).execute(env_.dnnl->stream, reordered, plain);
    env_.dnnl->stream.wait();
    const std::vector<float>& b = *bias;
    if (!b.empty() && static_cast<int64_t>(b.size()) != m_)
      fail_internal(at_ + ": the constant bias does not have the node's output channels");
    for (;; count *= 2) {
      const int64_t per = (ch.units + count - 1) / count, chunk = (per + ch.step - 1) / ch.step * ch.step;
      if (chunk >= ch.units) return nullptr;
      std::unique_ptr<BandedKernel> k = chunks_of(ch, chunk, w, b.empty() ? nullptr : &b);
      if (!k) return nullptr;
      const uint64_t has = k->scratchpad_bytes();
      if (has < below) {
        if (chunk > ch.step)
          k->set_leaner([node = &node_, env = env_, weights, bias, count, has] {
            return ConvBuilder(*node, env).chunked(weights, bias, count * 2, has);
          });
        return k;
      }
      if (chunk == ch.step) return nullptr;
    }
  }

  // What a chunk is made of: `units` groups (a grouped convolution) or input channels, each
  // `in_unit` input and `out_unit` output channels (0: every output channel); `step` units, the
  // fewest whose channels fill whole channel blocks.
  struct Chunking {
    bool grouped = false;
    int64_t units = 0, in_unit = 1, out_unit = 0, step = 1;
  };

  Chunking chunking() const {
    Chunking ch;
    ch.grouped = s_.group > 1;
    ch.units = ch.grouped ? s_.group : c_;
    ch.in_unit = ch.grouped ? c_ / s_.group : 1;
    ch.out_unit = ch.grouped ? m_ / s_.group : 0;
    const int64_t x_block = std::max(xv_->channel_block, 1), y_block = std::max(output_at(node_, 0)->channel_block, 1);
    while (ch.step < ch.units && ((ch.step * ch.in_unit) % x_block != 0 || (ch.step * ch.out_unit) % y_block != 0))
      ++ch.step;
    return ch;
  }

  // The variant in chunks of `chunk` units (the last may be shorter); null where oneDNN has no
  // fast kernel for one. `w`, `b`: the node's weights and bias (null: none).
  std::unique_ptr<BandedKernel> chunks_of(const Chunking& ch, int64_t chunk, const std::vector<float>& w,
                                          const std::vector<float>* b) const {
    const int64_t taps = product(w_.kernel);
    const uint64_t in_plane = static_cast<uint64_t>(product(s_.x, 2)) * sizeof(float);
    const uint64_t out_plane = static_cast<uint64_t>(product(s_.y, 2)) * sizeof(float);
    std::vector<BandedKernel::Part> parts;
    std::vector<BandedKernel::Band> bands;
    for (int64_t first = 0; first < ch.units; first += chunk) {
      const int64_t n = std::min(chunk, ch.units - first);
      ConvBuilder part = *this;
      std::unique_ptr<Kernel> k;
      if (ch.grouped) {
        const int64_t m0 = first * ch.out_unit, mn = n * ch.out_unit;
        const std::vector<float> ws = channel_slice(w, 1, m_, ch.in_unit * taps, m0, mn);
        const std::vector<float> bs = b ? channel_slice(*b, 1, m_, 1, m0, mn) : std::vector<float>{};
        k = part.chunk(n * ch.in_unit, mn, n, ws, b ? &bs : nullptr, true, true);
      } else {
        const std::vector<float> ws = channel_slice(w, m_, c_, taps, first, n);
        k = part.chunk(n, m_, 1, ws, first == 0 ? b : nullptr, first == 0, first + n == ch.units);
      }
      if (!k) return nullptr;
      const uint64_t in_bytes = part.x_md_.get_size(), out_bytes = part.y_md_.get_size();
      bands.push_back({parts.size(), static_cast<uint64_t>(first * ch.in_unit) * in_plane,
                       static_cast<uint64_t>(first * ch.out_unit) * out_plane});
      parts.push_back({std::move(k), in_bytes, out_bytes, in_bytes, out_bytes});
    }
    const uint64_t in_bytes = static_cast<uint64_t>(product(s_.x)) * sizeof(float);
    const uint64_t out_bytes = static_cast<uint64_t>(product(s_.y)) * sizeof(float);
    return std::make_unique<BandedKernel>(BandedKernel::Cut::Channels, std::move(parts), std::move(bands), in_bytes,
                                          out_bytes, addend_ ? 3 : -1, at_);
  }

  // Makes this (copied) builder's descriptors those of one chunk, `in_ch` input and `out_ch`
  // output channels in `groups` groups, with the chunk's weights and bias (null: none), and binds
  // its kernel. `first` and `last`: whether the chunk starts or ends the accumulation (a grouped
  // convolution's chunks each do both).
  std::unique_ptr<Kernel> chunk(int64_t in_ch, int64_t out_ch, int64_t groups, const std::vector<float>& weights,
                                const std::vector<float>* bias, bool first, bool last) {
    const bool grouped = s_.group > 1;
    c_ = in_ch;
    m_ = out_ch;
    s_.group = groups;
    s_.x[1] = in_ch;
    s_.y[1] = out_ch;
    wdims_ = weight_dims(groups, out_ch, in_ch, w_.kernel);
    user_w_md_ = plain_md(wdims_);
    w_md_ = any_md(wdims_);
    x_md_ = layout_md(s_.x, dnnl::memory::data_type::f32, xv_->channel_block);
    if (grouped) y_md_ = layout_md(s_.y, dnnl::memory::data_type::f32, output_at(node_, 0)->channel_block);
    dst_md_ = y_md_;
    with_bias_ = bias != nullptr;
    if (!first) addend_ = nullptr;  // an earlier chunk added it
    dnnl::post_ops po;
    if (addend_ || !first) po.append_sum(1.f);
    if (last) append_activation(po, node_, at_);
    attr_ = user_scratchpad_attr();
    attr_.set_post_ops(po);
    choose_layouts();
    // A later chunk adds into what the earlier ones wrote: their output is written in place.
    if (is_slow(pd_) || (!grouped && !(pd_.dst_desc() == y_md_))) return nullptr;
    chunk_weights_ = &weights;
    chunk_bias_ = bias;
    // The last chunk writes its whole output (its channels, or all of them): it may clamp it.
    std::unique_ptr<Kernel> k = last ? bind_clamped_gemm(addend_ || !first) : nullptr;
    return k ? std::move(k) : bind();
  }

  // The convolution in bands of output rows (row_bands.h), after a kernel needing `have`
  // scratchpad bytes: only 2-D convolutions on plain tensors, whose rows are strided views oneDNN
  // can read and write. Each band is oneDNN's choice or, `lean`, its leanest kernel (in a one-row
  // band of 8 channels on AVX-512, a direct kernel on channels-last copies with no scratchpad,
  // where its default keeps 12 KB).
  std::vector<std::unique_ptr<BandedKernel>> bands(uint64_t have) {
    const Value* y = output_at(node_, 0);
    if (s_.spatial != 2 || xv_->channel_block != 0 || y->channel_block != 0 || !dense_.empty()) return {};
    // The builder's descriptors describe one band at a time meanwhile; put back on return.
    struct Restore {
      ConvBuilder& b;
      dnnl::memory::desc x, y, dst;
      dnnl::convolution_forward::primitive_desc pd;
      Window w;
      ~Restore() { b.x_md_ = x, b.y_md_ = y, b.dst_md_ = dst, b.pd_ = pd, b.w_ = w; }
    } restore{*this, x_md_, y_md_, dst_md_, pd_, w_};
    const auto f32 = dnnl::memory::data_type::f32;
    const RowBanding r{s_.x, s_.y, f32, f32, w_.strides[0], w_.pads_begin[0], effective_kernel(w_, 0),
                       addend_ ? 3 : -1, at_, env_.dnnl->engine};
    return row_band_variants(
        r, have,
        [&](const BandViews& b) {
          describe_band(b, false, restore.w);
          return cost(pd_);
        },
        [&](const BandViews& b, bool lean) -> std::unique_ptr<Kernel> {
          describe_band(b, lean, restore.w);
          // A fused Add is preloaded into a staged output; ConvKernel's copy of it into an output
          // written in place would copy whole tensors, not rows.
          if (is_slow(pd_) || (addend_ && y_md_ == pd_.dst_desc())) return nullptr;
          return bind();
        });
  }

  // The builder's descriptors those of band `b` of the convolution whose window is `whole`; with
  // `lean`, on its leanest implementation.
  void describe_band(const BandViews& b, bool lean, const Window& whole) {
    const Dims x{s_.x[0], c_, b.shape.in_rows, s_.x[3]}, yd{s_.y[0], m_, b.shape.out_rows, s_.y[3]};
    x_md_ = b.x;
    y_md_ = b.y;
    dst_md_ = any_md(yd);
    w_ = whole;
    w_.pads_begin[0] = b.shape.pad_top;
    w_.pads_end[0] = b.shape.pad_bottom;
    pd_ = make(any_md(x));
    if (!lean) return;
    if (auto p = leanest({{any_md(x), any_md(yd)}, {channels_last_md(x), channels_last_md(yd)}}, cost(pd_), true))
      pd_ = *p;
  }

  std::unique_ptr<Kernel> bind() const {
    const bool staged_out = !(y_md_ == pd_.dst_desc());
    auto k = std::make_unique<ConvKernel>(node_, env_, addend_ != nullptr && !staged_out);
    k->set_primitive(pd_);
    if (pad_offsets_.empty()) k->bind_input_staged(DNNL_ARG_SRC, 0, x_md_, pd_.src_desc());
    else k->bind_input_padded(DNNL_ARG_SRC, 0, x_md_, pd_.src_desc(), pad_offsets_);
    if (!dense_.empty())
      k->bind_memory(DNNL_ARG_WEIGHTS, reordered_memory(dense_.data(), dense_.size() * sizeof(float), user_w_md_,
                                                        pd_.weights_desc(), k->ctx(),
                                                        at_ + ": block-diagonal weights"));
    else if (chunk_weights_)
      k->bind_memory(DNNL_ARG_WEIGHTS, reordered_memory(chunk_weights_->data(), chunk_weights_->size() * sizeof(float),
                                                        user_w_md_, pd_.weights_desc(), k->ctx(), at_ + ": weights"));
    else if (wv_->is_constant())
      k->bind_memory(DNNL_ARG_WEIGHTS, weights_for(pd_.weights_desc(), k->ctx()));
    else k->bind_input(DNNL_ARG_WEIGHTS, 1, user_w_md_);
    if (chunk_weights_) {
      if (chunk_bias_)
        k->bind_memory(DNNL_ARG_BIAS, reordered_memory(chunk_bias_->data(), chunk_bias_->size() * sizeof(float),
                                                       plain_md({m_}), pd_.query_md(dnnl::query::weights_md, 1),
                                                       k->ctx(), at_ + ": bias"));
    } else if (const Value* b = input_at(node_, 2); b && b->is_constant()) {
      k->bind_memory(DNNL_ARG_BIAS,
                     copy_of(biases_, b, plain_md({m_}), pd_.query_md(dnnl::query::weights_md, 1), k->ctx()));
    } else {
      bind_bias(*k, node_, pd_);
    }
    k->bind_output_staged(DNNL_ARG_DST, 0, y_md_, pd_.dst_desc(), addend_ ? 3 : -1);
    // The sum post-op accumulates into dst: written over the addend, the copy into dst is skipped
    // (a staged dst reads the addend into the scratchpad before the primitive runs).
    if (addend_) k->allow_in_place(3);
    return k;
  }

  // The constant weights reordered to `want`, once per layout: the bands of a convolution and its
  // variants share them.
  dnnl::memory weights_for(const dnnl::memory::desc& want, DnnlContext& ctx) const {
    return copy_of(weights_, wv_, user_w_md_, want, ctx);
  }

  // Reordered copies of one constant, one per layout.
  using Copies = std::vector<std::pair<dnnl::memory::desc, dnnl::memory>>;

  // Constant `v` (in layout `user`) as `want`: a copy made already, else one reordered from
  // a copy made already (the model may have released its own bytes by then: defer_leaner), else
  // from the constant.
  dnnl::memory copy_of(Copies& copies, const Value* v, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                       DnnlContext& ctx) const {
    for (const auto& [md, m] : copies)
      if (md == want) return m;
    if (copies.empty()) {
      copies.emplace_back(want, constant_memory(v, user, want, ctx, at_));
    } else {
      const auto& [md, m] = copies.front();
      copies.emplace_back(want, reordered_memory(m.get_data_handle(), md.get_size(), md, want, ctx,
                                                 at_ + ": constant '" + v->name + "'"));
    }
    return copies.back().second;
  }

  const Node& node_;
  const KernelEnv env_;  // a copy: a deferred chain of variants (defer_leaner) outlives the caller's
  const std::string at_;
  mutable Copies weights_, biases_;
  ConvShapes s_;
  int64_t c_ = 0, m_ = 0;  // input and output channels
  Window w_;
  const Value* addend_ = nullptr;  // the fused Add's input 3
  const Value* xv_ = nullptr;
  const Value* wv_ = nullptr;
  dnnl::primitive_attr attr_;
  Dims wdims_;
  // x_md_, y_md_: the activations as given; dst_md_: the output the primitive is asked for.
  dnnl::memory::desc x_md_, y_md_, dst_md_, user_w_md_, w_md_;
  std::vector<float> dense_;  // block-diagonal weights, when try_block_diagonal took them
  Dims pad_offsets_;  // where the source sits in its zero-padded copy, when try_padded_source took one
  // A chunk's (chunk()): its weights and bias, and whether its kernel adds the bias at all.
  const std::vector<float>* chunk_weights_ = nullptr;
  const std::vector<float>* chunk_bias_ = nullptr;
  bool with_bias_ = true;
  dnnl::convolution_forward::primitive_desc pd_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv(const Node& node, const KernelEnv& env) {
  if (pre_activation(node)) return make_pre_activated_conv(node, env);
  return ConvBuilder(node, env).build();
}

std::optional<WinogradKernel> probe_winograd(const Node& node, const KernelEnv& env, int tile) {
  if (node.op_type != "Conv" || pre_activation(node) || node.touches_dynamic()) return std::nullopt;
  try {
    return ConvBuilder(node, env).probe_winograd(tile);
  } catch (const Error&) {
    return std::nullopt;  // a node the convolution kernels refuse: kernel selection says why
  }
}

std::unique_ptr<Kernel> make_conv_rows(const Node& node, const KernelEnv& env, const BandViews& views) {
  if (pre_activation(node)) return nullptr;
  return ConvBuilder(node, env).rows(views);
}

namespace {

// ConvTranspose's output_padding and output_shape (its spatial dims; empty when absent).
void read_output_attrs(const Node& node, const std::string& at, size_t spatial, Dims& out_pad, Dims& out_shape) {
  out_pad = node.attr_ints("output_padding");
  if (out_pad.empty()) out_pad.assign(spatial, 0);
  if (out_pad.size() != spatial) fail(at + ": output_padding " + dims_string(out_pad) + " has the wrong length");
  out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == spatial + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != spatial)
    fail(at + ": output_shape " + dims_string(node.attr_ints("output_shape")) + " has the wrong length");
}

// Sets the window's pads as ConvTranspose's attributes decide them; returns the output shape
// they give ([N, m, spatial...]).
Dims transpose_pads(const std::string& at, const ConvShapes& s, int64_t m, const Dims& out_pad, const Dims& out_shape,
                    Window& w) {
  Dims expected{s.x[0], m};
  for (size_t i = 0; i < s.spatial; ++i) {
    const int64_t in = s.x[i + 2], st = w.strides[i];
    if (out_pad[i] < 0 || (out_pad[i] >= st && out_pad[i] >= w.dilations[i]))
      fail(at + ": output_padding " + dims_string(out_pad) + " must be below the stride or the dilation");
    const int64_t full = st * (in - 1) + out_pad[i] + effective_kernel(w, i);
    // The ONNX spec's rule: output_shape, or SAME_* (output = input * stride), decides the pads.
    int64_t target = -1;
    if (!out_shape.empty()) target = out_shape[i];
    else if (w.auto_pad == AutoPad::SameUpper || w.auto_pad == AutoPad::SameLower) target = in * st;
    else if (w.auto_pad == AutoPad::Valid) w.pads_begin[i] = w.pads_end[i] = 0;
    if (target >= 0) {
      const int64_t total = full - target;
      if (total < 0) {
        // An output_shape past the full transposed convolution: like onnxruntime (and ONNX's
        // reference), no padding, and the outputs past the end get only the bias.
        w.pads_begin[i] = 0;
        w.pads_end[i] = total;
      } else {
        const int64_t half = total / 2;
        w.pads_begin[i] = w.auto_pad == AutoPad::SameUpper ? half : total - half;
        w.pads_end[i] = total - w.pads_begin[i];
      }
    }
    expected.push_back(full - w.pads_begin[i] - w.pads_end[i]);
  }
  return expected;
}

// ONNX weights are [C, M/g, k...], i.e. [g][C/g][M/g][k...] in memory; oneDNN's logical dims
// are [g,] M/g, C/g, k... ("i" and "o" swapped), so the user layout is a strided view.
dnnl::memory::desc transpose_weights_md(const ConvShapes& s, const Window& w, int64_t m, int64_t c) {
  const Dims wdims = weight_dims(s.group, m, c, w.kernel);
  const int64_t ks = product(w.kernel), og = m / s.group, ig = c / s.group;
  Dims wstrides;
  if (s.group > 1) wstrides = {ig * og * ks, ks, og * ks};
  else wstrides = {ks, og * ks};
  for (size_t i = 0; i < s.spatial; ++i) wstrides.push_back(product(w.kernel, i + 1));
  return strided_md(wdims, wstrides);
}

// The deconvolution primitive and its kernel, with `pad_r` oneDNN's end padding.
std::unique_ptr<Kernel> make_deconvolution(const Node& node, const KernelEnv& env, const std::string& at,
                                           const ConvShapes& s, const Window& w, const Dims& pad_r, int64_t m,
                                           const dnnl::memory::desc& user_w_md) {
  const Value* wv = input_at(node, 1);
  dnnl::memory::desc src_md = plain_md(s.x), dst_md = plain_md(s.y);
  dnnl::memory::desc w_md = wv->is_constant() ? any_md(user_w_md.dims()) : user_w_md;
  dnnl::primitive_attr attr = user_scratchpad_attr();
  dnnl::post_ops po;
  append_activation(po, node, at);
  attr.set_post_ops(po);
  const Value* b = input_at(node, 2);
  auto pd = make_pd(at, [&] {
    using fwd = dnnl::deconvolution_forward;
    auto kind = dnnl::prop_kind::forward_inference;
    auto alg = dnnl::algorithm::deconvolution_direct;
    Dims dil = dnnl_dilations(w);
    if (b) {
      fwd::desc d(kind, alg, src_md, w_md, plain_md({m}), dst_md, w.strides, dil, w.pads_begin, pad_r);
      return fwd::primitive_desc(d, attr, env.dnnl->engine);
    }
    fwd::desc d(kind, alg, src_md, w_md, dst_md, w.strides, dil, w.pads_begin, pad_r);
    return fwd::primitive_desc(d, attr, env.dnnl->engine);
  });

  auto k = std::make_unique<ConvKernel>(node, env, false);
  k->set_primitive(pd);
  k->bind_input(DNNL_ARG_SRC, 0, src_md);
  if (wv->is_constant()) k->bind_memory(DNNL_ARG_WEIGHTS, constant_memory(wv, user_w_md, pd.weights_desc(), k->ctx(), at));
  else k->bind_input(DNNL_ARG_WEIGHTS, 1, user_w_md);
  bind_bias(*k, node, pd);
  k->bind_output(DNNL_ARG_DST, 0, dst_md);
  return k;
}

// The upsampling kind (kernel = stride, nothing padded or dilated, 1-D or 2-D) as memplan's own
// loop (tiled_deconv.h), else nullopt.
std::optional<TiledDeconv> as_tiled(const Node& node, const ConvShapes& s, const Window& w, const Dims& pad_r,
                                    int64_t m) {
  if (s.spatial < 1 || s.spatial > 2) return std::nullopt;
  for (size_t i = 0; i < s.spatial; ++i)
    if (w.strides[i] != w.kernel[i] || w.kernel[i] > kTiledDeconvMaxKernel || w.dilations[i] != 1 ||
        w.pads_begin[i] != 0 || w.pads_end[i] != 0 || pad_r[i] != 0)
      return std::nullopt;
  const std::optional<std::vector<EltwiseStep>> steps = fused_steps(node);
  if (!steps) return std::nullopt;  // make_deconvolution names what is wrong with it
  TiledDeconv t;
  t.n = s.x[0];
  t.c = s.x[1];
  t.m = m;
  t.group = s.group;
  t.h = s.spatial == 2 ? s.x[2] : 1;
  t.w = s.x.back();
  t.kh = s.spatial == 2 ? w.kernel[0] : 1;
  t.kw = w.kernel.back();
  t.bias = input_at(node, 2) != nullptr;
  t.steps = *steps;
  return t;
}

}  // namespace

std::unique_ptr<Kernel> make_conv_transpose(const Node& node, const KernelEnv& env) {
  const std::string at = check_arity(node, env, 2, 3, 1);
  require_float32_static(node, env);
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  ConvShapes s = read_shapes(node, at, "ConvTranspose");
  const int64_t c = s.x[1], m = s.w[1] * s.group;
  if (s.w[0] != c || c % s.group != 0)
    fail(at + ": weights " + dims_string(s.w) + " do not fit input " + dims_string(s.x) + " with group " +
         std::to_string(s.group));
  check_bias(node, at, m);

  Window w = read_window(node, at, s.spatial, Dims(s.w.begin() + 2, s.w.end()));
  Dims out_pad, out_shape;
  read_output_attrs(node, at, s.spatial, out_pad, out_shape);
  const Dims expected = transpose_pads(at, s, m, out_pad, out_shape, w);
  if (expected != s.y)
    fail(at + ": output shape " + dims_string(s.y) + " differs from the computed " + dims_string(expected));

  // oneDNN has no output_padding: it is the same as that much less padding at the end (which may
  // go negative: those outputs then get only the bias).
  Dims pad_r(s.spatial);
  for (size_t i = 0; i < s.spatial; ++i) pad_r[i] = w.pads_end[i] - out_pad[i];
  if (std::optional<TiledDeconv> tiled = as_tiled(node, s, w, pad_r, m)) return make_tiled_deconv(*tiled, at);
  return make_deconvolution(node, env, at, s, w, pad_r, m, transpose_weights_md(s, w, m, c));
}

}  // namespace memplan::rt::dnnl_kernels
