// ConvInteger and QLinearConv on oneDNN's int8 convolution: u8 or s8 source with its zero point
// (oneDNN's runtime source zero point), s8 weights reordered once (ONNX's weights minus their
// zero point, per tensor or per output channel, when that fits int8: uint8 weights with zero
// point 128 do), s32 accumulation. The output is
//   ConvInteger             s32, as is;
//   fused ConvInteger       f32 (ir/fused_dequantize.h): float(acc) * scale[m] as output scales
//                           (a constant scale) or a binary post-op (a run-time one, read where it
//                           lies in the arena: oneDNN 2.6 has no CPU convolution with run-time
//                           output scales), + bias[m] and the Relu as post-ops: ONNX Runtime's
//                           Cast, Mul, Add and Relu, one rounding each, so the same bits;
//   QLinearConv             u8 / s8: output scales x_scale * w_scale[m] / y_scale and the
//                           destination zero point, the int32 bias added before scaling (as ONNX).
// oneDNN picks the activation layouts (channels-last for int8): plain tensors are reordered into
// the kernel's scratchpad and out of it on each run (PrimitiveKernel's staged tensors).
//
// A ConvInteger whose weights less their zero point do not fit int8 (uint8 weights about their own
// zero point) runs oneDNN's int8 convolution on weights shifted into int8 and adds back what the
// shift took, exactly (conv_compensation.h), where the activations are plain.
//
// Without VNNI, oneDNN's int8 products saturate; then, and for a QLinearConv whose weights do not
// fit int8, the same sums run as a float32 convolution:
// the source reordered to float32 less its zero point, the weights less theirs as float32, and
// the int32 bias as float32. Each partial sum is then an integer of
// magnitude at most max|x - x_zp| * sum|w - w_zp| + |bias|; where that is at most 2^24 for every
// output channel (checked at load, from the weights) float32 holds each one exactly, so the sums
// are ONNX's int32 ones, bit for bit, and the epilogue runs as post-ops in the order above. Past
// 2^24 a dequantized ConvInteger (float32 output, the value of its sum rounded to float32 anyway)
// keeps the float32 form and rounds its partial sums as a float32 convolution does (IS-Net's
// uint8 weights without VNNI: 130 s an inference on the loops at 1024x1024); for any other output
// the kernel is not made and the loops run.
#include "runtime/kernels/quantized/dnnl_qconv.h"

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "ir/fused_activation.h"
#include "ir/fused_dequantize.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/common/kernel_common.h"
#include "runtime/kernels/dnnl/row_bands.h"
#include "runtime/kernels/quantized/conv_compensation.h"
#include "runtime/kernels/quantized/quantize_common.h"

namespace memplan::rt::quant {
namespace {

using dnnl_kernels::Dims;
using dnnl_kernels::product;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Input indices. ConvInteger: x w x_zp w_zp; QLinearConv: x x_scale x_zp w w_scale w_zp y_scale y_zp B.
struct Layout {
  size_t x, w, x_zp, w_zp;
  bool qlinear;
};
constexpr Layout kInteger{0, 1, 2, 3, false};
constexpr Layout kQLinear{0, 3, 2, 5, true};

bool layout_fits(const Value* v) {
  const int b = v->channel_block;
  return b == 0 || (v->type.dims.size() == 4 && (b == Value::kChannelsLast || b == 8 || b == 16));
}

}  // namespace

// u8 x s8 products summed in pairs saturate at 16 bits without VNNI (vpmaddubsw): only VNNI's
// vpdpbusd gives ONNX's exact int32 sums.
bool int8_products_exact() {
  return dnnl_runs_isa(dnnl_cpu_isa_avx512_core_vnni) || dnnl_runs_isa(dnnl_cpu_isa_avx2_vnni);
}

namespace {

const Value* present(const Node& n, size_t i) { return input_at(n, i); }

// One value or `count` values of a constant, as floats; empty when it is neither.
std::vector<float> constant_values(const Value* v, uint64_t count) {
  if (!v || !v->constant) return {};
  const uint64_t k = v->constant->element_count();
  if (k != 1 && k != count) return {};
  std::vector<float> out(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<float>(v->constant->float_at(k == 1 ? 0 : i));
  return out;
}

// What a ConvInteger on shifted weights adds after oneDNN's convolution (conv_compensation.h).
struct ShiftedWeights {
  WindowGeometry geometry;
  std::vector<int32_t> shift;  // d - w_zp: 1 or M values
  bool signed_source = false;
  int32_t src_zp = 0;           // when the zero point is a constant (or absent)
  bool dequantized = false;     // ir/fused_dequantize.h's epilogue follows
  std::vector<float> scale;     // its constant scale (empty: the run-time input)
  std::vector<float> bias;      // its bias (empty: none)
  bool relu = false;
};

class Int8ConvKernel final : public dnnl_kernels::PrimitiveKernel {
 public:
  // `zp_input` >= 0: the source zero point is that (non-constant) input, read on each run.
  Int8ConvKernel(const Node& node, const KernelEnv& env, int zp_input)
      : PrimitiveKernel(node, env), zp_input_(zp_input) {}

  void set_shifted(ShiftedWeights s) { shifted_ = std::move(s); }

  bool reads_at_run_time(size_t input) const override {
    return PrimitiveKernel::reads_at_run_time(input) || (zp_input_ >= 0 && input == static_cast<size_t>(zp_input_)) ||
           (input == l_x() && shifted_) || (input == kDequantScaleInput && shifted_ && shifted_->dequantized && shifted_->scale.empty());
  }
  uint64_t scratchpad_bytes() const override {
    if (!shifted_) return PrimitiveKernel::scratchpad_bytes();
    return window_sums_offset() + window_sums_scratch(shifted_->geometry) * sizeof(int32_t);
  }

 protected:
  // The zero point's type is checked here; the staged reorder turns it into oneDNN's int32.
  void before_execute(const KernelArgs& args) override {
    if (zp_input_ < 0) return;
    const TensorView& z = args.inputs[static_cast<size_t>(zp_input_)];
    if (z.element_count() != 1 || (z.dtype != DType::Uint8 && z.dtype != DType::Int8))
      fail(where() + ": x_zero_point must be one uint8 or int8 value");
  }

  // The shifted weights' correction and the epilogue, on the plain output oneDNN's sums were put in.
  void after_execute(const KernelArgs& args) override {
    if (!shifted_) return;
    const ShiftedWeights& s = *shifted_;
    const int32_t zp = zp_input_ >= 0 ? qint_at(args.inputs[static_cast<size_t>(zp_input_)], 0) : s.src_zp;
    auto* sums = reinterpret_cast<int32_t*>(args.scratchpad + window_sums_offset());
    window_sums(s.geometry, args.inputs[l_x()].data, s.signed_source, zp, sums);
    ConvEpilogue e{s.shift.data(), s.shift.size() > 1, s.dequantized, s.scale.data(), s.scale.size() > 1,
                   s.bias.empty() ? nullptr : s.bias.data(), s.relu};
    if (s.dequantized && s.scale.empty()) {
      const TensorView& scale = args.inputs[kDequantScaleInput];
      const uint64_t count = scale.element_count();
      if (scale.dtype != DType::Float32 || (count != 1 && count != static_cast<uint64_t>(s.geometry.M)))
        fail(where() + ": the fused scale must be float32 with 1 or " + std::to_string(s.geometry.M) + " values");
      e.scale = scale.as<const float>();
      e.per_channel_scale = count > 1;
    }
    finish_shifted_conv(s.geometry, sums, e, args.outputs[0].data);
  }

 private:
  static size_t l_x() { return 0; }  // ConvInteger's source (the only op on shifted weights)
  uint64_t window_sums_offset() const { return (PrimitiveKernel::scratchpad_bytes() + 63) / 64 * 64; }

  int zp_input_;
  std::optional<ShiftedWeights> shifted_;
};

class Builder {
 public:
  Builder(const Node& n, const KernelEnv& env, Layout l) : n_(n), env_(env), l_(l), at_(where(n, env)) {}

  // The kernel, and its chain of leaner variants where oneDNN stages plain activations into
  // channels-last (or float32) copies in its scratchpad: bands of output rows (row_bands.h), whose
  // copies hold a band, then `leanest` (the caller's loops, which need none).
  std::unique_ptr<Kernel> build(std::unique_ptr<Kernel> leanest) {
    std::optional<dnnl::convolution_forward::primitive_desc> pd = describe();
    if (!pd) return nullptr;
    std::unique_ptr<Kernel> k = bind(*pd);
    if (x_layout_ != 0 || y_layout_ != 0 || k->scratchpad_bytes() == 0) return k;
    LeanerChain chain(*k);
    for (std::unique_ptr<dnnl_kernels::BandedKernel>& b : bands(k->scratchpad_bytes())) chain.append(std::move(b));
    chain.append(std::move(leanest));
    return k;
  }

  // The primitive the kernel would run, without reordering its weights; none: the loops.
  std::optional<dnnl::convolution_forward::primitive_desc> describe() {
    if (!env_.dnnl || !read_shapes() || !read_weights() || !read_output()) return std::nullopt;
    shifted_ = int8_products_exact() && !weights_fit_int8_ && !l_.qlinear && x_layout_ == 0 && y_layout_ == 0;
    float_ = !int8_products_exact() || (!weights_fit_int8_ && !shifted_);
    // Past 2^24 the float32 sums round; a dequantized ConvInteger's output is the float32 value of
    // its sum anyway (ONNX Runtime's Cast), so it keeps the float32 form, rounding as a float
    // convolution does. An int32 or 8-bit output must be exact: the loops.
    if (float_ && !float_sums_exact() && !dequantized_) return std::nullopt;
    attr_ = make_attr();
    const dnnl::primitive_attr& attr = attr_;
    // The activations' own layouts where the pass chose them (the kernel it expects reads them
    // as they are), else oneDNN's choice, staged; the latter if oneDNN has no kernel for the former.
    std::optional<dnnl::convolution_forward::primitive_desc> pd;
    if (x_layout_ != 0 || y_layout_ != 0) pd = make_pd(attr, true);
    return pd ? pd : make_pd(attr, false);
  }

 private:
  // The convolution in bands of output rows, after the whole kernel needing `have` scratchpad
  // bytes: 2-D, plain activations, and not the shifted form (whose correction reads the whole
  // input). Each band stages only its rows.
  std::vector<std::unique_ptr<dnnl_kernels::BandedKernel>> bands(uint64_t have) {
    if (xd_.size() != 4 || shifted_) return {};
    const Dims whole_x = xd_, whole_y = yd_;
    const dnnl_kernels::Window whole = win_;
    const dnnl_kernels::RowBanding r{whole_x, whole_y, src_dt_, dst_type(), whole.strides[0], whole.pads_begin[0],
                                     dnnl_kernels::effective_kernel(whole, 0), -1, at_, env_.dnnl->engine};
    // The builder describes one band at a time meanwhile.
    const auto describe_band = [&](const dnnl_kernels::BandViews& b) {
      xd_[2] = b.shape.in_rows;
      yd_[2] = b.shape.out_rows;
      win_.pads_begin[0] = b.shape.pad_top;
      win_.pads_end[0] = b.shape.pad_bottom;
      x_user_ = b.x;
      y_user_ = b.y;
      return make_pd(attr_, false);
    };
    std::vector<std::unique_ptr<dnnl_kernels::BandedKernel>> out = dnnl_kernels::row_band_variants(
        r, have,
        [&](const dnnl_kernels::BandViews& b) -> uint64_t {
          const auto pd = describe_band(b);
          return pd ? staged_cost(*pd) : std::numeric_limits<uint64_t>::max();  // none: fits no budget
        },
        [&](const dnnl_kernels::BandViews& b, bool) -> std::unique_ptr<Kernel> {
          const auto pd = describe_band(b);
          return pd ? bind(*pd) : nullptr;
        });
    xd_ = whole_x;
    yd_ = whole_y;
    win_ = whole;
    x_user_.reset();
    y_user_.reset();
    return out;
  }

  // Scratchpad bytes of a kernel on `pd`: oneDNN's own and the staged copies of the activations.
  uint64_t staged_cost(const dnnl::convolution_forward::primitive_desc& pd) const {
    uint64_t bytes = pd.scratchpad_desc().get_size();
    const bool shifted_src = float_ && (runtime_src_zp_ || const_src_zp_ != 0);
    if (shifted_src || !(x_user_md() == pd.src_desc())) bytes += pd.src_desc().get_size();
    if (!(y_user_md() == pd.dst_desc())) bytes += pd.dst_desc().get_size();
    return bytes;
  }

  // The activations as the kernel sees them: the whole tensors in their layouts, or a band's rows.
  dnnl::memory::desc x_user_md() const { return x_user_ ? *x_user_ : dnnl_kernels::layout_md(xd_, src_dt_, x_layout_); }
  dnnl::memory::desc y_user_md() const { return y_user_ ? *y_user_ : dnnl_kernels::layout_md(yd_, dst_type(), y_layout_); }

  bool read_shapes() {
    const Value* x = present(n_, l_.x);
    const Value* w = present(n_, l_.w);
    const Value* y = output_at(n_, 0);
    if (!x || !w || !y || !x->type.is_static() || x->shape_varies || !y->type.is_static() || y->shape_varies ||
        !w->constant || !layout_fits(x) || !layout_fits(y))
      return false;
    x_layout_ = x->channel_block;
    y_layout_ = y->channel_block;
    src_dt_ = elt::dnnl_type(x->type.dtype);
    if (src_dt_ != dt::u8 && src_dt_ != dt::s8) return false;
    xd_ = x->type.static_dims();
    yd_ = y->type.static_dims();
    wd_ = w->constant->dims;
    if (xd_.size() < 3 || xd_.size() > 5 || wd_.size() != xd_.size() || yd_.size() != xd_.size()) return false;
    const size_t sp = xd_.size() - 2;
    group_ = n_.attr_int("group", 1);
    m_ = wd_[0];
    // (No channels, or no elements anywhere: the loops' factory handles it.)
    if (m_ < 1 || product(xd_) == 0 || product(yd_) == 0 || product(wd_) == 0) return false;
    if (group_ < 1 || xd_[1] % group_ != 0 || m_ % group_ != 0 || wd_[1] * group_ != xd_[1] || yd_[1] != m_)
      return false;  // the loops' factory reports the error
    win_ = dnnl_kernels::read_window(n_, at_, sp, Dims(wd_.begin() + 2, wd_.end()));
    dnnl_kernels::resolve_forward_pads(win_, Dims(xd_.begin() + 2, xd_.end()));
    for (size_t i = 0; i < sp; ++i) {
      const int64_t span = xd_[2 + i] + win_.pads_begin[i] + win_.pads_end[i] - dnnl_kernels::effective_kernel(win_, i);
      if (span < 0 || span / win_.strides[i] + 1 != yd_[2 + i]) return false;
    }
    return true;
  }

  // ONNX's weights minus their zero point in oneDNN's [g,] o, i, k... order (the same bytes as
  // ONNX's [M, C/g, k...]): int8 where every one fits (uint8 weights with zero point 128, int8
  // ones with 0), else from -255 to 255 for the float32 form (ONNX Runtime's quantize_dynamic
  // with uint8 weights and their own zero point: IS-Net's background remover).
  bool read_weights() {
    const Tensor& w = *present(n_, l_.w)->constant;
    if (w.dtype != DType::Uint8 && w.dtype != DType::Int8) return false;
    const Value* zp = present(n_, l_.w_zp);
    std::vector<int64_t> zeros(1, 0);
    if (zp) {
      if (!zp->constant || (zp->constant->element_count() != 1 && static_cast<int64_t>(zp->constant->element_count()) != m_))
        return false;
      zeros = zp->constant->to_ints();
    }
    const uint64_t count = w.element_count(), per = count / static_cast<uint64_t>(m_);
    weights_.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      const int64_t v = w.int_at(i) - zeros[zeros.size() == 1 ? 0 : i / per];
      if (v < -255 || v > 255) return false;  // a zero point outside the weights' type
      weights_fit_int8_ = weights_fit_int8_ && v >= -128 && v <= 127;
      weights_[i] = static_cast<int16_t>(v);
    }
    // The shift that puts them in int8 when they do not fit: w - d, with d = 128 for uint8 weights.
    const int64_t d = w.dtype == DType::Uint8 ? 128 : 0;
    shift_.clear();
    for (const int64_t z : zeros) shift_.push_back(static_cast<int32_t>(d - z));
    wdims_ = group_ > 1 ? Dims{group_, m_ / group_, wd_[1]} : Dims{m_, wd_[1]};
    wdims_.insert(wdims_.end(), wd_.begin() + 2, wd_.end());
    return true;
  }

  bool read_output() {
    const Value* x_zp = present(n_, l_.x_zp);
    if (x_zp) {
      if (x_zp->type.dtype != present(n_, l_.x)->type.dtype) return false;
      if (x_zp->constant) {
        if (x_zp->constant->element_count() != 1) return false;
        const_src_zp_ = static_cast<int32_t>(x_zp->constant->int_at(0));
      } else {
        runtime_src_zp_ = true;
      }
    }
    const DType out = output_at(n_, 0)->type.dtype;
    if (!l_.qlinear) {
      dequantized_ = n_.attr_int(kDequantizedAttr, 0) != 0;
      if (!dequantized_) return out == DType::Int32 && !has_fused_activation(n_);
      if (out != DType::Float32) return false;
      const Value* sc = present(n_, kDequantScaleInput);
      if (!sc || sc->type.dtype != DType::Float32 || !sc->type.is_static() || sc->shape_varies) return false;
      if (sc->constant) {
        w_scale_ = constant_values(sc, static_cast<uint64_t>(m_));
        if (w_scale_.empty()) return false;
      } else {
        runtime_scale_ = static_cast<int64_t>(product(sc->type.static_dims()));
        if (runtime_scale_ != 1 && runtime_scale_ != m_) return false;
      }
      const Value* b = present(n_, kDequantBiasInput);
      if (b) bias_ = constant_values(b, static_cast<uint64_t>(m_));
      const std::optional<FusedActivation> act = fused_activation(n_);
      relu_ = act == FusedActivation::Relu;
      return (!b || !bias_.empty()) && (act == FusedActivation::None || relu_);
    }
    // QLinearConv: every scale, the output zero point and the bias must be constants.
    dst_dt_ = elt::dnnl_type(out);
    if (dst_dt_ != dt::u8 && dst_dt_ != dt::s8) return false;
    const std::optional<FusedActivation> act = fused_activation(n_);
    relu_ = act == FusedActivation::Relu;  // (passes/fuse_quantized's QDQ fusion)
    if (act != FusedActivation::None && !relu_) return false;
    const std::vector<float> xs = constant_values(present(n_, 1), 1), ws = constant_values(present(n_, 4), static_cast<uint64_t>(m_)),
                             ys = constant_values(present(n_, 6), 1);
    const Value* yzp = present(n_, 7);
    if (xs.empty() || ws.empty() || ys.empty() || !yzp || !yzp->constant || yzp->constant->element_count() != 1 ||
        yzp->type.dtype != out)
      return false;
    dst_zp_ = static_cast<int32_t>(yzp->constant->int_at(0));
    oscales_.resize(static_cast<size_t>(m_));
    for (size_t c = 0; c < oscales_.size(); ++c) oscales_[c] = xs[0] * ws[c] / ys[0];
    const Value* b = present(n_, 8);
    if (b) {
      if (!b->constant || b->constant->dtype != DType::Int32 || static_cast<int64_t>(b->constant->element_count()) != m_)
        return false;
      const std::vector<int64_t> v = b->constant->to_ints();
      qbias_.assign(v.begin(), v.end());
    }
    return true;
  }

  // Every partial sum of the float32 convolution is an integer no larger than
  // max|x - x_zp| * sum|w - w_zp| + |bias| of its output channel: exact while that is <= 2^24.
  bool float_sums_exact() const {
    const int64_t lo = src_dt_ == dt::u8 ? 0 : -128, hi = lo + 255;
    const int64_t x_max = runtime_src_zp_ ? 255 : std::max<int64_t>(const_src_zp_ - lo, hi - const_src_zp_);
    const size_t per = weights_.size() / static_cast<size_t>(m_);
    for (size_t m = 0; m < static_cast<size_t>(m_); ++m) {
      int64_t sum = 0;
      for (size_t k = 0; k < per; ++k) sum += std::abs(static_cast<int64_t>(weights_[m * per + k]));
      const int64_t bias = qbias_.empty() ? 0 : std::abs(static_cast<int64_t>(qbias_[m]));
      if (x_max * sum + bias > (int64_t{1} << 24)) return false;
    }
    return true;
  }

  // A binary post-op whose operand is a constant (`values`) or, with `runtime` > 0, the fused
  // scale input of that many values, read where it lies in the arena.
  void append_binary(dnnl::post_ops& po, dnnl::algorithm alg, std::vector<float> values, int64_t runtime = 0) {
    const int64_t count = runtime > 0 ? runtime : static_cast<int64_t>(values.size());
    binaries_.push_back({po.len(), std::move(values), runtime});
    po.append_binary(alg, channel_md(count));
  }

  dnnl::primitive_attr make_attr() {
    dnnl::primitive_attr attr = dnnl_kernels::user_scratchpad_attr();
    dnnl::post_ops po;
    const auto relu = [&po] { po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); };
    // oneDNN 2.6 has no output scales on a float32 convolution: the float form multiplies in a
    // binary post-op, the same single rounding.
    if (!float_ && (runtime_src_zp_ || const_src_zp_ != 0)) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    if (l_.qlinear) {
      bool same = true;
      for (float s : oscales_) same = same && s == oscales_[0];
      if (same) oscales_.resize(1);
      if (float_) append_binary(po, dnnl::algorithm::binary_mul, oscales_);
      else attr.set_output_scales(oscales_.size() == 1 ? 0 : 2, oscales_);
      // Before the destination zero point is added: Relu of the real value.
      if (relu_) relu();
      // The float form adds the zero point before the output's reorder rounds and saturates, as
      // oneDNN's int8 convolution does.
      if (dst_zp_ != 0 && float_) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f, static_cast<float>(dst_zp_));
      if (dst_zp_ != 0 && !float_) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    } else if (dequantized_ && !shifted_) {  // (the shifted form's epilogue is its own loop)
      if (!w_scale_.empty() && float_) append_binary(po, dnnl::algorithm::binary_mul, w_scale_);
      else if (!w_scale_.empty()) attr.set_output_scales(w_scale_.size() == 1 ? 0 : 2, w_scale_);
      if (runtime_scale_ > 0) append_binary(po, dnnl::algorithm::binary_mul, {}, runtime_scale_);
      if (!bias_.empty()) append_binary(po, dnnl::algorithm::binary_add, bias_);
      if (relu_) relu();
    }
    attr.set_post_ops(po);
    return attr;
  }

  // An operand of a binary post-op with `count` values (1 or M) along the channel axis: [1, count, 1...].
  // Described channels-last (the same bytes as row-major for [1, count, 1...]): oneDNN 2.6's int8
  // brgemm convolutions take a per-channel binary operand only so, else its reference kernel runs
  // (mobilenet_v2_qdq's classifier as a 1x1 ConvInteger: 5.3 ms against 0.1 ms).
  dnnl::memory::desc channel_md(int64_t count) const {
    static constexpr tag last[] = {tag::acb, tag::acdb, tag::acdeb};
    Dims d(yd_.size(), 1);
    d[1] = count;
    return dnnl::memory::desc(d, dt::f32, last[d.size() - 3]);
  }

  // The output's type in ONNX; the primitive's tensors are float32 in the float form.
  // The shifted form's primitive writes int32 sums into the output's bytes, which its loops finish.
  dt dst_type() const { return l_.qlinear ? dst_dt_ : dequantized_ && !shifted_ ? dt::f32 : dt::s32; }
  dt sum_type(dt int8_form) const { return float_ ? dt::f32 : int8_form; }

  // `own_layouts`: the source and destination in the activations' layouts (not plain ones), so
  // that they need no staging, and not by oneDNN's reference (C++) kernels; else oneDNN's choice.
  std::optional<dnnl::convolution_forward::primitive_desc> make_pd(const dnnl::primitive_attr& attr,
                                                                   bool own_layouts) const {
    using fwd = dnnl::convolution_forward;
    const auto any = tag::any;
    dnnl::memory::desc src(xd_, sum_type(src_dt_), any), wei(wdims_, sum_type(dt::s8), any),
        dst(yd_, sum_type(dst_type()), any);
    if (own_layouts && x_layout_ != 0) src = dnnl_kernels::layout_md(xd_, sum_type(src_dt_), x_layout_);
    if (own_layouts && y_layout_ != 0) dst = dnnl_kernels::layout_md(yd_, sum_type(dst_type()), y_layout_);
    const auto usable = [own_layouts](fwd::primitive_desc pd) -> std::optional<fwd::primitive_desc> {
      if (own_layouts && std::string(pd.impl_info_str()).find("ref") != std::string::npos) return std::nullopt;
      return pd;
    };
    const Dims dil = dnnl_kernels::dnnl_dilations(win_);
    try {
      if (!qbias_.empty()) {
        fwd::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei,
                    dnnl::memory::desc({m_}, sum_type(dt::s32), tag::a), dst, win_.strides, dil, win_.pads_begin, win_.pads_end);
        return usable(fwd::primitive_desc(d, attr, env_.dnnl->engine));
      }
      fwd::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei, dst, win_.strides,
                  dil, win_.pads_begin, win_.pads_end);
      return usable(fwd::primitive_desc(d, attr, env_.dnnl->engine));
    } catch (const dnnl::error&) {
      return std::nullopt;  // no implementation: the loops
    }
  }

  std::unique_ptr<Kernel> bind(const dnnl::convolution_forward::primitive_desc& pd) {
    auto k = std::make_unique<Int8ConvKernel>(n_, env_, runtime_src_zp_ ? static_cast<int>(l_.x_zp) : -1);
    k->set_primitive(pd);
    auto& ctx = k->ctx();
    const dnnl::memory::desc one_s32({1}, dt::s32, tag::a), zp_user({1}, src_dt_, tag::a);
    const int zp_input = runtime_src_zp_ ? static_cast<int>(l_.x_zp) : -1;
    if (float_ && (runtime_src_zp_ || const_src_zp_ != 0)) {
      // Staged as float32, less the source zero point.
      k->bind_input_shifted(DNNL_ARG_SRC, l_.x, x_user_md(), pd.src_desc(), const_src_zp_, zp_input);
    } else {
      k->bind_input_staged(DNNL_ARG_SRC, l_.x, x_user_md(), pd.src_desc());
    }
    if (float_) {
      const std::vector<float> w(weights_.begin(), weights_.end());
      k->bind_memory(DNNL_ARG_WEIGHTS, dnnl_kernels::reordered_memory(w.data(), w.size() * sizeof(float),
                                                                      dnnl_kernels::layout_md(wdims_, dt::f32, 0), pd.weights_desc(),
                                                                      ctx, at_ + ": weights"));
    } else {
      std::vector<int8_t> w(weights_.size());
      const size_t per = weights_.size() / static_cast<size_t>(m_);
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = static_cast<int8_t>(weights_[i] - (shifted_ ? shift_[shift_.size() == 1 ? 0 : i / per] : 0));
      k->bind_memory(DNNL_ARG_WEIGHTS, dnnl_kernels::reordered_memory(w.data(), w.size(),
                                                                      dnnl_kernels::layout_md(wdims_, dt::s8, 0), pd.weights_desc(),
                                                                      ctx, at_ + ": int8 weights"));
      // A run-time zero point (an 8-bit tensor) is reordered to the int32 oneDNN reads, each run,
      // into the session's scratchpad: nothing of the shared kernel is written while it runs.
      if (runtime_src_zp_)
        k->bind_input_staged(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, l_.x_zp, zp_user, one_s32);
      else if (const_src_zp_ != 0)
        k->bind_memory(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                       dnnl_kernels::reordered_memory(&const_src_zp_, sizeof(int32_t), one_s32, one_s32, ctx, at_));
    }
    if (l_.qlinear) {
      if (!qbias_.empty()) {
        const std::vector<float> as_float(qbias_.begin(), qbias_.end());
        const void* bias = float_ ? static_cast<const void*>(as_float.data()) : qbias_.data();
        k->bind_memory(DNNL_ARG_BIAS, dnnl_kernels::reordered_memory(bias, qbias_.size() * 4,  // int32 or float
                                                                     pd.bias_desc(), pd.bias_desc(), ctx, at_));
      }
      if (dst_zp_ != 0 && !float_)
        k->bind_memory(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
                       dnnl_kernels::reordered_memory(&dst_zp_, sizeof(int32_t), one_s32, one_s32, ctx, at_));
    }
    for (const Binary& b : binaries_) {
      const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(b.index) | DNNL_ARG_SRC_1;
      // A run-time scale, a tensor of the arena, is read where it lies.
      if (b.runtime > 0) {
        k->bind_input(arg, kDequantScaleInput, channel_md(b.runtime));
        continue;
      }
      const dnnl::memory::desc md = channel_md(static_cast<int64_t>(b.values.size()));
      k->bind_memory(arg, dnnl_kernels::reordered_memory(b.values.data(), b.values.size() * sizeof(float), md, md, ctx, at_));
    }
    k->bind_output_staged(DNNL_ARG_DST, 0, y_user_md(), pd.dst_desc());
    if (shifted_) k->set_shifted(shifted_weights());
    return k;
  }

  ShiftedWeights shifted_weights() const {
    ShiftedWeights s;
    s.geometry = window_geometry(xd_, yd_, group_, win_.kernel, win_.strides, win_.dilations, win_.pads_begin);
    s.shift = shift_;
    s.signed_source = src_dt_ == dt::s8;
    s.src_zp = const_src_zp_;
    s.dequantized = dequantized_;
    s.scale = w_scale_;
    s.bias = bias_;
    s.relu = relu_;
    return s;
  }

  const Node& n_;
  const KernelEnv& env_;
  const Layout l_;
  const std::string at_;
  Dims xd_, yd_, wd_, wdims_;
  int64_t group_ = 1, m_ = 0;
  dnnl_kernels::Window win_;
  dt src_dt_ = dt::u8, dst_dt_ = dt::u8;
  std::vector<int16_t> weights_;
  bool weights_fit_int8_ = true;
  std::vector<int32_t> shift_;  // d - w_zp (1 or M values): weights - shift fit int8
  bool shifted_ = false;        // the int8 convolution on shifted weights, finished by conv_compensation
  bool runtime_src_zp_ = false, dequantized_ = false, relu_ = false;
  int64_t runtime_scale_ = 0;  // values of a run-time scale (0: the scale is a constant)
  int32_t const_src_zp_ = 0, dst_zp_ = 0;
  std::vector<float> w_scale_, bias_, oscales_;
  std::vector<int32_t> qbias_;
  bool float_ = false;  // the sums in float32 (no VNNI, or weights that do not fit int8)
  int x_layout_ = 0, y_layout_ = 0;  // Value::channel_block of the source and the output
  dnnl::primitive_attr attr_;         // describe()'s, shared by the bands
  std::optional<dnnl::memory::desc> x_user_, y_user_;  // a band's rows (bands()), else the whole tensors
  struct Binary {
    int index;                  // in the post-op chain
    std::vector<float> values;  // a constant operand
    int64_t runtime;            // > 0: the run-time scale input, of this many values
  };
  std::vector<Binary> binaries_;
};

}  // namespace

std::unique_ptr<Kernel> make_dnnl_conv_integer(const Node& n, const KernelEnv& env, std::unique_ptr<Kernel> leanest) {
  return Builder(n, env, kInteger).build(std::move(leanest));
}
std::unique_ptr<Kernel> make_dnnl_qlinear_conv(const Node& n, const KernelEnv& env, std::unique_ptr<Kernel> leanest) {
  return Builder(n, env, kQLinear).build(std::move(leanest));
}
bool dnnl_runs_qlinear_conv(const Node& n, const KernelEnv& env) { return Builder(n, env, kQLinear).describe().has_value(); }

}  // namespace memplan::rt::quant
