// ConvInteger (int32 output, or float32 with the fused dequantizing epilogue of
// ir/fused_dequantize.h) and QLinearConv (requantized 8-bit output) on uint8 / int8, 1-D to 3-D,
// grouped. oneDNN's convolution runs them where it can (dnnl_qconv.cpp says when: int8 with VNNI,
// float32 with exact sums without); the rest here as plain loops with int32 accumulators:
// non-constant weights or weight zero points, QLinearConv's non-constant scales, int32 or 8-bit
// outputs whose float32 sums could pass 2^24. Padding
// reads as the zero point, i.e. contributes nothing. The window geometry is read like Conv's
// (dnnl_common's read_window / resolve_forward_pads).
#include <algorithm>

#include "ir/fused_activation.h"
#include "ir/fused_dequantize.h"
#include "runtime/kernel_registry.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/quantized/conv_compensation.h"
#include "runtime/kernels/quantized/dnnl_qconv.h"
#include "runtime/kernels/quantized/factories.h"
#include "runtime/kernels/quantized/int_conv_loop.h"
#include "runtime/kernels/quantized/quantize_common.h"

namespace memplan::rt::quant {
namespace {

using shape::fail_at;
using shape::unsupported_at;

// The window (conv_compensation.h's geometry), and x's and y's shapes.
struct ConvGeometry : WindowGeometry {
  int rank = 0;  // of x
  std::array<int64_t, kMaxRank> x_dims{}, y_dims{};
};

ConvGeometry conv_geometry(const Node& n, const Value* x, const Value* w, const std::string& at) {
  if (!x->type.is_static() || x->shape_varies || !w->type.is_static() || w->shape_varies)
    unsupported_at(at, "x and w need static shapes");
  const std::vector<int64_t> xd = x->type.static_dims(), wd = w->type.static_dims();
  if (xd.size() < 3 || xd.size() > 5) unsupported_at(at, "rank " + std::to_string(xd.size()) + " (1-D to 3-D only)");
  if (wd.size() != xd.size()) fail_at(at, "x and w differ in rank");
  const size_t sp = xd.size() - 2;
  const int64_t group = n.attr_int("group", 1);
  if (group < 1 || xd[1] % group != 0 || wd[0] % group != 0 || wd[1] * group != xd[1])
    fail_at(at, "w's shape does not fit x's channels with group " + std::to_string(group));
  dnnl_kernels::Window win =
      dnnl_kernels::read_window(n, at, sp, dnnl_kernels::Dims(wd.begin() + 2, wd.end()));
  dnnl_kernels::resolve_forward_pads(win, dnnl_kernels::Dims(xd.begin() + 2, xd.end()));
  std::vector<int64_t> yd{xd[0], wd[0]};
  for (size_t i = 0; i < sp; ++i) {
    const int64_t span = xd[2 + i] + win.pads_begin[i] + win.pads_end[i] - dnnl_kernels::effective_kernel(win, i);
    if (span < 0) fail_at(at, "the kernel is larger than the padded input");
    yd.push_back(span / win.strides[i] + 1);
  }
  ConvGeometry g{window_geometry(xd, yd, group, win.kernel, win.strides, win.dilations, win.pads_begin)};
  g.rank = static_cast<int>(xd.size());
  std::copy(xd.begin(), xd.end(), g.x_dims.begin());
  std::copy(yd.begin(), yd.end(), g.y_dims.begin());
  return g;
}

// Runs the integer convolution (int_conv_loop.h), each row of sums through `epilogue(y_index, m,
// sums, count)`.
template <typename F>
void int_conv(const ConvGeometry& g, const TensorView& x, const TensorView& w, int32_t xzp, const Param& wzp,
              const F& epilogue) {
  IntConvJob job{&g, &x, &w, xzp, &wzp, nullptr, &epilogue};
  job.sink = [](const void* context, uint64_t y_index, int64_t m, const int32_t* sums, int64_t count) {
    (*static_cast<const F*>(context))(y_index, m, sums, count);
  };
  run_int_conv(job);
}

// Input indices: ConvInteger x w x_zp w_zp; QLinearConv x x_scale x_zp w w_scale w_zp y_scale y_zp B.
struct Layout {
  size_t x, w, x_zp, w_zp;
  int x_scale, w_scale, y_scale, y_zp, bias;
};
constexpr Layout kInteger{0, 1, 2, 3, -1, -1, -1, -1, -1};
constexpr Layout kQLinear{0, 3, 2, 5, 1, 4, 6, 7, 8};

class QConvKernel final : public Kernel {
 public:
  QConvKernel(std::string where, Layout l, const ConvGeometry& g, DType out, bool dequantized, bool relu)
      : where_(std::move(where)), l_(l), g_(g), out_(out), dequantized_(dequantized), relu_(relu) {
    quant_range(out, range_);
  }
  // Against oneDNN's int8 convolution with VNNI, 9.5x on an AVX-512 EPYC (a 3x3 ConvInteger of 32
  // channels at 512x512, 2 threads); more against AMX, less against the float32 form without VNNI.
  double expected_slowdown() const override { return 4; }
  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[l_.x];
    const TensorView& w = args.inputs[l_.w];
    if (x.rank != g_.rank || !std::equal(x.dims.begin(), x.dims.begin() + x.rank, g_.x_dims.begin()))
      fail_at(where_, "the run-time shape of x differs from its compile-time shape");
    shape::set_shape(args.outputs[0], g_.rank, g_.y_dims.data(), where_);
    const TensorView& y = args.outputs[0];
    const uint64_t M = static_cast<uint64_t>(g_.M);
    const int32_t xzp = param(args, l_.x_zp, 0, x.dtype, where_, "x_zero_point").zero(0);
    const Param wzp = param(args, l_.w_zp, M, w.dtype, where_, "w_zero_point");
    if (dequantized_) {
      run_dequantized(args, x, w, xzp, wzp);
      return;
    }
    if (l_.y_scale < 0) {
      int32_t* out = y.as<int32_t>();
      int_conv(g_, x, w, xzp, wzp,
               [&](uint64_t at, int64_t, const int32_t* sums, int64_t n) { std::copy(sums, sums + n, out + at); });
      return;
    }
    const Param xs = param(args, static_cast<size_t>(l_.x_scale), 0, DType::Float32, where_, "x_scale");
    const Param ws = param(args, static_cast<size_t>(l_.w_scale), M, DType::Float32, where_, "w_scale");
    const Param ys = param(args, static_cast<size_t>(l_.y_scale), 0, DType::Float32, where_, "y_scale");
    if (!xs.v || !ws.v || !ys.v) fail_at(where_, "a scale is missing");
    const int32_t yzp = param(args, static_cast<size_t>(l_.y_zp), 0, out_, where_, "y_zero_point").zero(0);
    const size_t bk = static_cast<size_t>(l_.bias);
    const bool has_bias = bk < args.inputs.size() && args.inputs[bk].data;
    if (has_bias && (args.inputs[bk].dtype != DType::Int32 || args.inputs[bk].element_count() != M))
      fail_at(where_, "the bias must be int32 with one value per output channel");
    const int32_t* bias = has_bias ? args.inputs[bk].as<const int32_t>() : nullptr;
    int_conv(g_, x, w, xzp, wzp, [&](uint64_t at, int64_t m, const int32_t* sums, int64_t n) {
      const uint64_t c = static_cast<uint64_t>(m);
      const float mult = xs.scale(0) * ws.scale(c) / ys.scale(0);
      const int64_t add = bias ? bias[c] : 0;
      for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(static_cast<int64_t>(sums[i]) + add) * mult;
        qstore(y, at + static_cast<uint64_t>(i), saturate_round(relu_ && v < 0 ? 0.f : v, yzp, range_));
      }
    });
  }

 private:
  // The fused epilogue: y = float(acc) * scale[m] + bias[m], then the Relu.
  void run_dequantized(const KernelArgs& args, const TensorView& x, const TensorView& w, int32_t xzp, const Param& wzp) {
    const uint64_t M = static_cast<uint64_t>(g_.M);
    // The scale broadcasts along the channel axis ([M, 1, 1] from quantize_dynamic's Mul): only
    // its element count matters (the pass checked its shape).
    if (args.inputs.size() <= kDequantScaleInput || !args.inputs[kDequantScaleInput].data)
      fail_at(where_, "the fused scale is missing");
    const TensorView& scale = args.inputs[kDequantScaleInput];
    const uint64_t ns = scale.element_count();
    if (scale.dtype != DType::Float32 || (ns != 1 && ns != M))
      fail_at(where_, "the fused scale must be float32 with 1 or " + std::to_string(M) + " values");
    const Param sc{&scale, ns};
    const Param bs = param(args, kDequantBiasInput, M, DType::Float32, where_, "bias");
    float* out = args.outputs[0].as<float>();
    int_conv(g_, x, w, xzp, wzp, [&](uint64_t at, int64_t m, const int32_t* sums, int64_t n) {
      const uint64_t c = static_cast<uint64_t>(m);
      const float scale = sc.scale(c), shift = bs.v ? bs.scale(c) : 0.f;
      float* y = out + at;
      for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(sums[i]) * scale + shift;
        y[i] = relu_ && v < 0 ? 0.f : v;
      }
    });
  }

  std::string where_;
  Layout l_;
  ConvGeometry g_;
  DType out_;
  QRange range_;
  bool dequantized_, relu_;
};

std::unique_ptr<Kernel> make_qconv(const Node& n, const KernelEnv& env, Layout l, size_t min_in, size_t max_in) {
  const std::string at = check_arity(n, env, min_in, max_in);
  quant_type(n.inputs[l.x], at, "x");
  quant_type(n.inputs[l.w], at, "w");
  const ConvGeometry g = conv_geometry(n, n.inputs[l.x], n.inputs[l.w], at);
  // Every accumulator sums C/group * kernel products of at most 255 * 255.
  const int64_t terms = g.C / g.group * g.k[0] * g.k[1] * g.k[2];
  if (terms > (int64_t{1} << 15)) unsupported_at(at, std::to_string(terms) + " products per output could overflow int32");
  DType out = DType::Int32;
  const bool dequantized = l.y_zp < 0 && n.attr_int(kDequantizedAttr, 0) != 0;
  const std::optional<FusedActivation> act = fused_activation(n);
  if (!act || (*act != FusedActivation::None && ((!dequantized && l.y_zp < 0) || *act != FusedActivation::Relu)))
    unsupported_at(at, "a fused activation other than Relu (of a dequantized ConvInteger or a QLinearConv)");
  if (dequantized) {
    if (n.outputs[0]->type.dtype != DType::Float32) fail_at(at, "the dequantized output must be float32");
    out = DType::Float32;
  } else if (l.y_zp >= 0) {
    out = quant_type(shape::required_input(n, static_cast<size_t>(l.y_zp), at), at, "y_zero_point");
    if (n.outputs[0]->type.dtype != out) fail_at(at, "the output type differs from y_zero_point's");
  } else if (n.outputs[0]->type.dtype != DType::Int32) {
    fail_at(at, "the output must be int32");
  }
  const bool plain = n.inputs[l.x]->channel_block == 0 && n.outputs[0]->channel_block == 0;
  auto loops = [&] { return std::make_unique<QConvKernel>(at, l, g, out, dequantized, *act == FusedActivation::Relu); };
  // oneDNN's kernel stages plain tensors into channels-last (or float32) copies in its
  // scratchpad; its bands stage a band at a time, the loops nothing. Kernel selection takes them
  // where those copies set the arena's peak and the time allows (pipeline/lean_kernels; --prefer
  // memory whatever the time).
  if (std::unique_ptr<Kernel> k = l.y_zp >= 0 ? make_dnnl_qlinear_conv(n, env, plain ? loops() : nullptr)
                                              : make_dnnl_conv_integer(n, env, plain ? loops() : nullptr))
    return k;
  // passes/int8_layouts chooses other layouts only where oneDNN's kernel runs: the loops index NCHW.
  if (!plain) fail_internal(at + ": its activations are not plain, but oneDNN has no kernel for it");
  return loops();
}

}  // namespace

std::unique_ptr<Kernel> make_conv_integer(const Node& n, const KernelEnv& env) {
  return make_qconv(n, env, kInteger, 2, n.attr_int(kDequantizedAttr, 0) != 0 ? kDequantBiasInput + 1 : 4);
}
std::unique_ptr<Kernel> make_qlinear_conv(const Node& n, const KernelEnv& env) { return make_qconv(n, env, kQLinear, 8, 9); }

}  // namespace memplan::rt::quant
