// A 1x1 Conv with a pre-activation (ir/fused_activation.h: DenseNet's batch norm and Relu before
// its bottleneck Conv). The activated input is written into the scratchpad, then convolved by
// oneDNN. Its leaner variants do that a chunk of input channels at a time, each chunk's
// convolution adding into the output (oneDNN's sum post-op), so the scratchpad holds one chunk of
// the activated input, not all of it: where that input sets the arena's peak (the block's
// concatenation is live beside it), kernel selection takes them (pipeline/lean_kernels).
#include <xmmintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ir/fused_activation.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/dnnl/factories.h"

namespace memplan::rt::dnnl_kernels {

namespace {

// y = x * s + b, then max(0, y) with `relu` (a NaN stays NaN), four lanes at a time; `s4`, `b4`
// hold the four lanes' scales and shifts.
inline __m128 activate4(__m128 x, __m128 s4, __m128 b4, bool relu) {
  const __m128 y = _mm_add_ps(_mm_mul_ps(x, s4), b4);
  return relu ? _mm_max_ps(_mm_setzero_ps(), y) : y;  // max returns its second operand on NaN
}

// One channel's `n` floats, plain layout.
void activate_row(const float* x, float* y, size_t n, float s, float b, bool relu) {
  const __m128 s4 = _mm_set1_ps(s), b4 = _mm_set1_ps(b);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, activate4(_mm_loadu_ps(x + i), s4, b4, relu));
  for (; i < n; ++i) {
    const float v = x[i] * s + b;
    y[i] = relu && v < 0.f ? 0.f : v;
  }
}

// `pixels` pixels of one block of `Block` channels, channel-blocked layout (nChw8c / nChw16c).
template <int Block>
void activate_block(const float* x, float* y, size_t pixels, const float* s, const float* b, bool relu) {
  __m128 s4[Block / 4], b4[Block / 4];
  for (int k = 0; k < Block / 4; ++k) {
    s4[k] = _mm_loadu_ps(s + 4 * k);
    b4[k] = _mm_loadu_ps(b + 4 * k);
  }
  for (size_t p = 0; p < pixels; ++p, x += Block, y += Block)
    for (int k = 0; k < Block / 4; ++k) _mm_storeu_ps(y + 4 * k, activate4(_mm_loadu_ps(x + 4 * k), s4[k], b4[k], relu));
}

struct Geometry {
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0;
  int block = 0;      // the input's layout: 0 plain, else channel-blocked (the activated chunks' too)
  int out_block = 0;  // the output's
  int64_t pixels() const { return h * w; }
};

class PreActivatedConv final : public Kernel {
 public:
  // Convolves input channels [first, first + count), activated, into the output.
  struct Part {
    std::unique_ptr<Kernel> conv;
    int64_t first = 0, count = 0;
  };

  PreActivatedConv(PreActivation pre, Geometry geo, std::vector<Part> parts, std::string where)
      : pre_(std::move(pre)), geo_(geo), parts_(std::move(parts)), where_(std::move(where)) {
    int64_t most = 0;
    for (const Part& p : parts_) most = std::max(most, p.count);
    staged_bytes_ = (static_cast<uint64_t>(geo_.n * most * geo_.pixels()) * sizeof(float) + 63) / 64 * 64;
  }

  void run(const KernelArgs& args) override {
    auto* s = dynamic_cast<State*>(args.state);
    if (!s || s->parts.size() != parts_.size()) fail_internal(where_ + ": run without the session's kernel state");
    if (args.inputs.empty() || args.inputs.size() > 3 || args.outputs.size() != 1)
      fail_internal(where_ + ": the executor passed the wrong number of tensors");
    const TensorView& x = args.inputs[0];
    if (x.byte_size() != static_cast<uint64_t>(geo_.n * geo_.c * geo_.pixels()) * sizeof(float))
      fail(where_ + ": the run-time shape of input 0 differs from its compile-time shape");
    if (!args.scratchpad) fail_internal(where_ + ": no scratchpad was given");
    std::array<TensorView, 3> in{};
    std::copy(args.inputs.begin(), args.inputs.end(), in.begin());
    auto* staged = reinterpret_cast<float*>(args.scratchpad);
    for (size_t k = 0; k < parts_.size(); ++k) {
      const Part& p = parts_[k];
      activate(x.as<const float>(), staged, p.first, p.count);
      TensorView& t = in[0];
      t.data = args.scratchpad;
      t.dims = {geo_.n, p.count, geo_.h, geo_.w};
      t.capacity = staged_bytes_;
      p.conv->run({std::span<const TensorView>(in.data(), args.inputs.size()), args.outputs,
                   args.scratchpad + staged_bytes_, s->parts[k].get(), args.stream});
    }
  }

  std::unique_ptr<KernelState> make_state() const override {
    auto s = std::make_unique<State>();
    for (const Part& p : parts_) s->parts.push_back(p.conv->make_state());
    return s;
  }

  std::string implementation() const override {
    std::string out = "memplan pre-activation, " + std::to_string(parts_.size()) + " part(s)";
    return parts_.empty() ? out : out + ": " + parts_.front().conv->implementation();
  }

  uint64_t scratchpad_bytes() const override {
    uint64_t most = 0;
    for (const Part& p : parts_) most = std::max(most, p.conv->scratchpad_bytes());
    return staged_bytes_ + most;
  }

  bool reads_at_run_time(size_t input) const override {
    return input == 0 || std::any_of(parts_.begin(), parts_.end(), [&](const Part& p) { return p.conv->reads_at_run_time(input); });
  }

 private:
  struct State final : KernelState {
    std::vector<std::unique_ptr<KernelState>> parts;
  };

  // Input channels [first, first + count) of x, activated, into `y` (an [n, count, h, w] tensor in
  // the input's layout).
  void activate(const float* x, float* y, int64_t first, int64_t count) const {
    const auto pixels = static_cast<size_t>(geo_.pixels());
    const int b = geo_.block;
    for (int64_t n = 0; n < geo_.n; ++n) {
      if (b == 0) {
        for (int64_t c = first; c < first + count; ++c)
          activate_row(x + (n * geo_.c + c) * geo_.pixels(), y + (n * count + c - first) * geo_.pixels(), pixels,
                       pre_.scale[static_cast<size_t>(c)], pre_.shift[static_cast<size_t>(c)], pre_.relu);
        continue;
      }
      for (int64_t cb = first / b; cb < (first + count) / b; ++cb) {
        const float* src = x + (n * (geo_.c / b) + cb) * geo_.pixels() * b;
        float* dst = y + (n * (count / b) + cb - first / b) * geo_.pixels() * b;
        const float* s = pre_.scale.data() + cb * b;
        const float* sh = pre_.shift.data() + cb * b;
        if (b == 16) activate_block<16>(src, dst, pixels, s, sh, pre_.relu);
        else activate_block<8>(src, dst, pixels, s, sh, pre_.relu);
      }
    }
  }

  PreActivation pre_;
  Geometry geo_;
  std::vector<Part> parts_;
  std::string where_;
  uint64_t staged_bytes_ = 0;
};

// Makes the kernel in chunks of `chunk` input channels (all of them: one part).
class PreActivatedConvBuilder {
 public:
  PreActivatedConvBuilder(const Node& node, const KernelEnv& env) : node_(node), env_(env), at_(where(node, env)) {}

  // Validates the node; false when it has no elements to compute.
  bool check() {
    check_arity(node_, env_, 2, 3, 1);
    require_float32_static(node_, env_);
    if (empty_output(node_)) return false;
    const Value* x = input_at(node_, 0);
    const Value* w = input_at(node_, 1);
    const Value* y = output_at(node_, 0);
    const Dims xd = dims_of(x), wd = dims_of(w), yd = dims_of(y);
    if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || !w->is_constant() || wd[1] != xd[1] || wd[2] != 1 ||
        wd[3] != 1 || yd != Dims{xd[0], wd[0], xd[2], xd[3]} || node_.attr_int("group", 1) != 1)
      fail(at_ + ": a pre-activated Conv must be a 1x1 convolution of constant weights, not " + dims_string(xd) +
           " by " + dims_string(wd) + " into " + dims_string(yd));
    const Window win = read_window(node_, at_, 2, {1, 1});
    for (size_t i = 0; i < 2; ++i)
      if (win.strides[i] != 1 || win.dilations[i] != 1 || win.pads_begin[i] != 0 || win.pads_end[i] != 0)
        fail(at_ + ": a pre-activated Conv reads each pixel once: no strides, dilations or pads");
    pre_ = *pre_activation(node_);
    if (pre_.scale.size() != static_cast<size_t>(xd[1]) || pre_.shift.size() != static_cast<size_t>(xd[1]))
      fail(at_ + ": " + kPreScaleAttr + " and " + kPreShiftAttr + " must have one value per input channel (" +
           std::to_string(xd[1]) + ")");
    if (x->channel_block < 0 || y->channel_block < 0)
      fail_unsupported(at_ + ": a pre-activated Conv on a channels-last tensor is not supported");
    geo_ = {xd[0], xd[1], xd[2], xd[3], wd[0], x->channel_block, y->channel_block};
    const Value* b = input_at(node_, 2);
    if (b && dims_of(b) != Dims{geo_.m})
      fail(at_ + ": bias '" + b->name + "' has shape " + dims_string(dims_of(b)) + ", expected [" +
           std::to_string(geo_.m) + "]");
    weights_ = w->constant;
    if (b && b->is_constant()) bias_ = std::make_shared<const std::vector<float>>(tensor_floats(*b->constant, at_ + ": bias"));
    return true;
  }

  // The kernel in chunks of `chunk` input channels, with its leaner variants made on demand: a
  // quarter of the channels per chunk, then a sixteenth (at least a channel block each).
  std::unique_ptr<Kernel> build(int64_t chunk) const {
    const std::vector<float> w = plain_weights();
    std::vector<PreActivatedConv::Part> parts;
    std::optional<dnnl::memory> whole;  // the one part's reordered weights, where there is one part
    for (int64_t first = 0; first < geo_.c; first += chunk) {
      const int64_t count = std::min(chunk, geo_.c - first);
      auto [conv, weights] = part(w, first, count, first == 0, first + count == geo_.c, chunk < geo_.c);
      if (!conv) return nullptr;
      if (count == geo_.c) whole = weights;
      parts.push_back({std::move(conv), first, count});
    }
    auto k = std::make_unique<PreActivatedConv>(pre_, geo_, std::move(parts), at_);
    const int64_t unit = std::max(geo_.block, 1);
    const int64_t next = chunk == geo_.c ? round_up(geo_.c / 4, unit) : round_up(geo_.c / 16, unit);
    if (next < chunk) {
      // The builder is copied into the closure: the variant is made after this call returns, when
      // the model has released its constant (the closure held it, and the weights were in memory
      // twice until the variants were settled: 16 MB of DenseNet-121's 32). It reads them back
      // from the whole kernel's copy instead.
      PreActivatedConvBuilder b = *this;
      if (whole) {
        b.weights_ = nullptr;
        b.whole_weights_ = whole;
      }
      k->set_leaner([b = std::move(b), next] { return b.build(next); });
    }
    return k;
  }

 private:
  static int64_t round_up(int64_t v, int64_t unit) { return std::max(unit, (v + unit - 1) / unit * unit); }

  // The weights as [m, c] floats: the model's constant, or the whole kernel's reordered copy read
  // back (a variant's builder).
  std::vector<float> plain_weights() const {
    if (!whole_weights_) return tensor_floats(*weights_, at_ + ": weights");
    std::vector<float> w(static_cast<size_t>(geo_.m * geo_.c));
    dnnl::memory whole = *whole_weights_, plain(plain_md({geo_.m, geo_.c, 1, 1}), env_.dnnl->engine, w.data());
    dnnl::reorder(whole, plain).execute(env_.dnnl->stream, whole, plain);
    env_.dnnl->stream.wait();
    return w;
  }

  // One chunk's convolution and its reordered weights: `first_part` adds the bias, `last_part`
  // applies the Conv's fused activation; every part after the first adds into the output. A null
  // kernel when oneDNN has only its reference kernel for a chunk (the whole kernel still takes
  // that). `w`: all the weights, [m, c].
  std::pair<std::unique_ptr<Kernel>, dnnl::memory> part(const std::vector<float>& w, int64_t first, int64_t count,
                                                        bool first_part, bool last_part, bool chunked) const {
    const Dims src{geo_.n, count, geo_.h, geo_.w}, wdims{geo_.m, count, 1, 1}, dst{geo_.n, geo_.m, geo_.h, geo_.w};
    const dnnl::memory::desc src_md = blocked_md(src, geo_.block), dst_md = blocked_md(dst, geo_.out_block);
    dnnl::post_ops po;
    if (!first_part) po.append_sum(1.f);
    if (last_part) append_activation(po, node_, at_);
    dnnl::primitive_attr attr = user_scratchpad_attr();
    attr.set_post_ops(po);
    const Value* b = input_at(node_, 2);
    const bool with_bias = first_part && b;
    auto pd = make_pd(at_, [&] {
      using fwd = dnnl::convolution_forward;
      const auto kind = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_direct;
      if (with_bias)
        return fwd::primitive_desc(fwd::desc(kind, alg, src_md, any_md(wdims), plain_md({geo_.m}), dst_md, {1, 1},
                                             {0, 0}, {0, 0}, {0, 0}),
                                   attr, env_.dnnl->engine);
      return fwd::primitive_desc(fwd::desc(kind, alg, src_md, any_md(wdims), dst_md, {1, 1}, {0, 0}, {0, 0}, {0, 0}),
                                 attr, env_.dnnl->engine);
    });
    const bool ref = std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
    // A later chunk adds into what the earlier ones wrote: the output must be written in place.
    if (chunked && (ref || !(pd.dst_desc() == dst_md))) return {};
    auto k = std::make_unique<PrimitiveKernel>(node_, env_);
    k->set_primitive(pd);
    k->bind_input_staged(DNNL_ARG_SRC, 0, src_md, pd.src_desc());
    // This chunk's columns of the [m, c, 1, 1] weights.
    const std::vector<float> slice = channel_slice(w, geo_.m, geo_.c, 1, first, count);
    const dnnl::memory weights = reordered_memory(slice.data(), slice.size() * sizeof(float), plain_md(wdims),
                                                  pd.weights_desc(), k->ctx(), at_ + ": weights");
    k->bind_memory(DNNL_ARG_WEIGHTS, weights);
    if (with_bias) {
      if (bias_) {
        k->bind_memory(DNNL_ARG_BIAS, reordered_memory(bias_->data(), bias_->size() * sizeof(float), plain_md({geo_.m}),
                                                       pd.query_md(dnnl::query::weights_md, 1), k->ctx(), at_ + ": bias"));
      } else {
        k->bind_input(DNNL_ARG_BIAS, 2, plain_md({geo_.m}));
      }
    }
    k->bind_output_staged(DNNL_ARG_DST, 0, dst_md, pd.dst_desc());
    return {std::move(k), weights};
  }

  const Node& node_;
  KernelEnv env_;  // a copy: leaner variants are made after the factory returns
  std::string at_;
  PreActivation pre_;
  Geometry geo_;
  // The weights: the model's constant (the first build), or the whole kernel's reordered copy (its
  // variants'); the bias's values (null: none, or a run-time input).
  std::shared_ptr<const Tensor> weights_;
  std::optional<dnnl::memory> whole_weights_;
  std::shared_ptr<const std::vector<float>> bias_;
};

}  // namespace

std::unique_ptr<Kernel> make_pre_activated_conv(const Node& node, const KernelEnv& env) {
  PreActivatedConvBuilder b(node, env);
  if (!b.check()) return std::make_unique<NoopKernel>();
  return b.build(dims_of(input_at(node, 0))[1]);
}

}  // namespace memplan::rt::dnnl_kernels
