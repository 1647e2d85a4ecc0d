// ConvInteger and QLinearConv on oneDNN (quantized/dnnl_qconv.cpp) against a plain reference,
// through the kernel registry: u8 and s8 sources, run-time and constant zero points, uint8 weights
// with zero points (shifted to int8, or past int8 on the float32 form), per-channel scales, groups, strides and padding, the fused
// dequantizing epilogue, and the configurations that stay on the loops. With VNNI these run
// oneDNN's int8 convolution, without it (ctest runs this file again under DNNL_MAX_CPU_ISA=AVX2)
// its float32 one: the same exact sums either way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "ir/fused_activation.h"
#include "ir/fused_dequantize.h"
#include "runtime/kernels/dnnl/banded_kernel.h"
#include "runtime/kernels/quantized/dnnl_qconv.h"
#include "support/kernel_harness.h"

using namespace memplan::test::kernel_names;

namespace {

// A 2-D convolution's shapes and integer data.
struct Case {
  int64_t N = 1, C = 4, H = 7, W = 6, M = 6, K = 3, group = 1, stride = 1, pad = 1, dil = 1;
  DType xt = DType::Uint8, wt = DType::Int8;
  std::vector<int> x, w;
  std::vector<int> w_zp;  // one, or M
  int x_zp = 0;
  // Weights minus their zero points kept inside int8 (what oneDNN's int8 path takes); false:
  // uint8 weights anywhere around their zero point (quantize_dynamic's), for the float32 form.
  bool fit_int8 = true;
  int64_t OH() const { return (H + 2 * pad - dil * (K - 1) - 1) / stride + 1; }
  int64_t OW() const { return (W + 2 * pad - dil * (K - 1) - 1) / stride + 1; }

  void fill(unsigned seed) {
    std::mt19937 rng(seed);
    auto lo = [](DType t) { return t == DType::Uint8 ? 0 : -128; };
    std::uniform_int_distribution<int> xd(lo(xt), lo(xt) + 255), wd(lo(wt), lo(wt) + 255);
    x.resize(static_cast<size_t>(N * C * H * W));
    for (int& v : x) v = xd(rng);
    w.resize(static_cast<size_t>(M * (C / group) * K * K));
    for (int& v : w) v = wd(rng);
    // Weights minus their zero points stay inside int8 (what oneDNN's path needs).
    if (wt == DType::Uint8 && fit_int8) for (int& z : w_zp) z = 128;
    const int64_t per = (C / group) * K * K;
    for (size_t i = 0; i < w.size() && !w_zp.empty() && fit_int8; ++i) {
      const int z = w_zp[w_zp.size() == 1 ? 0 : i / static_cast<size_t>(per)];
      w[i] = std::clamp(w[i], z - 128, z + 127);
    }
    x_zp = xd(rng);
  }

  // sum over the window of (x - x_zp) * (w - w_zp[m]); padding contributes nothing.
  std::vector<int32_t> reference() const {
    std::vector<int32_t> y;
    const int64_t cg = C / group, mg = M / group;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t oh = 0; oh < OH(); ++oh)
          for (int64_t ow = 0; ow < OW(); ++ow) {
            int32_t acc = 0;
            const int zw = w_zp.empty() ? 0 : w_zp[w_zp.size() == 1 ? 0 : static_cast<size_t>(m)];
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t kh = 0; kh < K; ++kh)
                for (int64_t kw = 0; kw < K; ++kw) {
                  const int64_t ih = oh * stride - pad + kh * dil, iw = ow * stride - pad + kw * dil;
                  if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
                  const int xv = x[static_cast<size_t>(((n * C + m / mg * cg + c) * H + ih) * W + iw)];
                  const int wv = w[static_cast<size_t>(((m * cg + c) * K + kh) * K + kw)];
                  acc += (xv - x_zp) * (wv - zw);
                }
            y.push_back(acc);
          }
    return y;
  }

  // ConvInteger's inputs; `x_zp_constant` makes the source zero point an initializer.
  void add_inputs(KernelCase& k, bool x_zp_constant) const {
    k.input("x", xt, {N, C, H, W}, x);
    k.input("w", wt, {M, C / group, K, K}, w, true);
    k.input("x_zp", xt, {}, std::vector<int>{x_zp}, x_zp_constant);
    if (w_zp.empty()) k.omitted_input();
    else k.input("w_zp", wt, {static_cast<int64_t>(w_zp.size())}, w_zp, true);
    k.attr("pads", Dims{pad, pad, pad, pad});
    k.attr("strides", Dims{stride, stride});
    k.attr("dilations", Dims{dil, dil});
    k.attr("group", group);
  }
};

// uint8 weights anywhere about `zero_point` (no int8 kernel takes them) over 256 input channels of
// 3x3: a sum may reach 255 * 255 * 2304, past float32's 2^24 integers.
Case wide_uint8_weights(int zero_point, int64_t outputs, int64_t side, unsigned seed) {
  Case c;
  c.wt = DType::Uint8;
  c.C = 256;
  c.M = outputs;
  c.H = c.W = side;
  c.w_zp = {zero_point};
  c.fit_int8 = false;
  c.fill(seed);
  return c;
}

// oneDNN's path stages the plain activations into its scratchpad (channels-last); the loops have none.
bool on_onednn(KernelCase& k) { return k.kernel() && k.kernel()->scratchpad_bytes() > 0; }


}  // namespace

TEST_CASE("ConvInteger on oneDNN matches the reference", "[kernels][quantized]") {
  Case c;
  const int variant = GENERATE(0, 1, 2, 3, 4, 5, 6, 7, 8);
  const bool x_zp_constant = GENERATE(false, true);
  switch (variant) {
    case 0: break;                                                        // u8 x s8, zero point of x only
    case 1: c.xt = DType::Int8; c.w_zp = {0}; break;                      // s8 source
    case 2: c.wt = DType::Uint8; c.w_zp = {128}; break;                   // u8 weights around 128
    case 3: c.group = 2; c.stride = 2; c.w_zp = {3, -2, 0, 1, 5, -7}; break;  // per-channel weight zero points
    case 4: c.C = 6; c.M = 6; c.group = 6; c.N = 2; break;               // depthwise, batch 2
    case 5: c.C = 32; c.M = 32; c.group = 32; c.H = c.W = 9; break;      // depthwise, blocked channels
    case 6: c.C = 32; c.M = 48; c.K = 1; c.pad = 0; break;               // 1x1, blocked channels
    case 7: c.C = 16; c.M = 96; c.K = 1; c.pad = 0; c.H = c.W = 28; break;
    case 8: c.wt = DType::Uint8; c.w_zp = {40}; c.fit_int8 = false; break;  // u8 weights from -40 to 215 about it
  }
  c.fill(static_cast<unsigned>(variant * 2 + 1));
  INFO("variant " << variant << ", constant x_zp " << x_zp_constant);
  KernelCase k("ConvInteger", 10);
  c.add_inputs(k, x_zp_constant);
  k.output("y", DType::Int32, {c.N, c.M, c.OH(), c.OW()});
  REQUIRE(k.run());
  CHECK(on_onednn(k));
  CHECK(k.result_as<int32_t>(0) == c.reference());
  // Its leaner variants, for where the staged copies set the arena's peak: bands of output rows
  // where the copies pass 64 KB (variant 7), then the loops, which stage nothing; the same sums.
  int variants = 0;
  while (k.run_leaner()) {
    ++variants;
    CHECK(k.result_as<int32_t>(0) == c.reference());
  }
  CHECK(variants >= 1);
  CHECK_FALSE(on_onednn(k));
}

TEST_CASE("memplan's integer convolution loop gives the exact sums over rows wider than its tile, strided and dilated, "
          "for channel counts its blocks of four do not divide", "[kernels][quantized]") {
  // The loop (int_conv_loop.h) sums 256 columns at a time for 4 output channels at a time, on
  // every thread: these rows cross tiles, and 7 or 3 channels a group leave a partial block.
  Case c;
  const int variant = GENERATE(0, 1, 2, 3);
  switch (variant) {
    case 0: c.W = 600; c.H = 3; c.M = 7; break;                                   // three tiles, a partial block
    case 1: c.W = 530; c.H = 4; c.stride = 2; c.dil = 2; c.pad = 2; c.xt = DType::Int8; c.w_zp = {0}; break;
    case 2: c.W = 300; c.H = 5; c.C = 6; c.M = 6; c.group = 2; c.K = 5; c.pad = 2; c.w_zp = {1, -3, 2, 0, 4, -1}; break;
    case 3: c.W = 257; c.H = 3; c.C = 3; c.M = 3; c.group = 3; c.pad = 0; c.N = 2; break;  // depthwise, no padding
  }
  c.fill(static_cast<unsigned>(variant + 40));
  INFO("variant " << variant);
  KernelCase k("ConvInteger", 10);
  c.add_inputs(k, false);
  k.output("y", DType::Int32, {c.N, c.M, c.OH(), c.OW()});
  REQUIRE(k.run());
  while (k.run_leaner()) {
  }
  CHECK(k.kernel()->implementation() == "memplan");
  CHECK(k.kernel()->scratchpad_bytes() == 0);
  CHECK(k.result_as<int32_t>(0) == c.reference());
}

TEST_CASE("an int8 convolution whose staged copies pass 64 KB runs in bands of output rows, with the same results",
          "[kernels][quantized]") {
  Case c;
  c.C = 16;
  c.M = 32;
  c.H = 64;
  c.W = 56;
  c.w_zp = {0};
  c.stride = GENERATE(1, 2);
  const bool qlinear = GENERATE(false, true);
  c.fill(static_cast<unsigned>(c.stride) + 20);
  INFO("stride " << c.stride << ", QLinearConv " << qlinear);
  KernelCase k(qlinear ? "QLinearConv" : "ConvInteger", 10);
  Floats w_scale(static_cast<size_t>(c.M));
  for (size_t m = 0; m < w_scale.size(); ++m) w_scale[m] = 0.001f * static_cast<float>(m + 1);
  if (qlinear) {  // x x_scale x_zp w w_scale w_zp y_scale y_zp (and no B): nine inputs
    k.input("x", c.xt, {c.N, c.C, c.H, c.W}, c.x);
    k.input("x_scale", F32, {}, Floats{0.05f}, true);
    k.input("x_zp", c.xt, {}, std::vector<int>{c.x_zp}, true);
    k.input("w", c.wt, {c.M, c.C, c.K, c.K}, c.w, true);
    k.input("w_scale", F32, {c.M}, w_scale, true);
    k.input("w_zp", c.wt, {1}, c.w_zp, true);
    k.input("y_scale", F32, {}, Floats{0.9f}, true);
    k.input("y_zp", DType::Uint8, {}, std::vector<int>{7}, true);
    k.input("B", DType::Int32, {c.M}, std::vector<int>(static_cast<size_t>(c.M), 25), true);
    k.attr("pads", Dims{1, 1, 1, 1});
    k.attr("strides", Dims{c.stride, c.stride});
    k.output("y", DType::Uint8, {c.N, c.M, c.OH(), c.OW()});
  } else {
    c.add_inputs(k, false);
    k.output("y", DType::Int32, {c.N, c.M, c.OH(), c.OW()});
  }
  REQUIRE(k.run());
  const auto bytes = [&] { return qlinear ? std::vector<int32_t>() : k.result_as<int32_t>(0); };
  const std::vector<uint8_t> whole_u8 = qlinear ? k.result_as<uint8_t>(0) : std::vector<uint8_t>();
  const std::vector<int32_t> whole = bytes();
  if (!qlinear) CHECK(whole == c.reference());
  uint64_t last = k.kernel()->scratchpad_bytes();
  REQUIRE(last > 64 * 1024);
  int banded = 0;
  while (k.run_leaner()) {
    // Each variant needs less scratchpad than the one before and computes the same outputs: the
    // bands the whole convolution's bits; the loops the same sums, requantized by a float
    // multiplication of their own (an output within an ulp of a .5 may round the other way).
    CHECK(k.kernel()->scratchpad_bytes() < last);
    last = k.kernel()->scratchpad_bytes();
    const bool band = dynamic_cast<memplan::rt::dnnl_kernels::BandedKernel*>(k.kernel()) != nullptr;
    banded += band;
    if (!qlinear) {
      CHECK(bytes() == whole);
      continue;
    }
    const std::vector<uint8_t> got = k.result_as<uint8_t>(0);
    size_t differ = 0, far = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      differ += got[i] != whole_u8[i];
      far += std::abs(got[i] - whole_u8[i]) > 1;
    }
    CHECK(far == 0);
    CHECK(differ <= (band ? 0 : got.size() / 100));
  }
  CHECK(banded >= 2);  // two bands, four, ..., a row each
  CHECK(last == 0);    // the loops
}

TEST_CASE("ConvInteger with the fused dequantizing epilogue gives the unfused nodes' bits", "[kernels][quantized]") {
  Case c;
  c.fill(11);
  const bool relu = GENERATE(false, true);
  const bool per_channel = GENERATE(false, true);
  const bool constant_scale = GENERATE(false, true);
  const Floats scale = per_channel ? Floats{0.5f, 0.0025f, 0.02f, 0.01f, 0.00125f, 0.04f} : Floats{0.0031f};
  const Floats bias{1.f, -2.f, 3.f, -4.f, 5.f, -600.f};
  for (const bool loops : {false, true}) {
    INFO("relu " << relu << ", per-channel " << per_channel << ", constant scale " << constant_scale << ", loops " << loops);
    KernelCase k("ConvInteger", 10);
    c.add_inputs(k, false);
    // quantize_dynamic's scale is [M, 1, 1] (Mul(x_scale, w_scale)).
    k.input("scale", F32, per_channel ? Dims{c.M, 1, 1} : Dims{}, scale, constant_scale);
    k.input("bias", F32, {c.M}, bias, true);
    k.attr(memplan::kDequantizedAttr, int64_t{1});
    if (relu) k.attr(memplan::kFusedActivationAttr, static_cast<int64_t>(memplan::FusedActivation::Relu));
    // Non-constant weights keep the loops: both paths must agree.
    if (loops) k.node().inputs[1]->constant = nullptr;
    k.output("y", F32, {c.N, c.M, c.OH(), c.OW()});
    REQUIRE(k.run());
    CHECK(on_onednn(k) == !loops);
    // oneDNN's kernel has the loops as its leaner variant (they stage nothing): the same bits.
    if (!loops) {
      REQUIRE(k.run_leaner());
      CHECK_FALSE(on_onednn(k));
    }
    const std::vector<int32_t> acc = c.reference();
    const std::vector<float> got = k.result_as<float>(0);
    const size_t plane = static_cast<size_t>(c.OH() * c.OW());
    size_t differ = 0;
    for (size_t i = 0; i < acc.size(); ++i) {
      const size_t m = i / plane % static_cast<size_t>(c.M);
      // Cast, Mul, Add, Relu: one float rounding each.
      float want = static_cast<float>(acc[i]) * scale[per_channel ? m : 0];
      want = want + bias[m];
      if (relu) want = std::max(want, 0.f);
      differ += got[i] != want;
    }
    CHECK(differ == 0);
  }
}

TEST_CASE("QLinearConv on oneDNN requantizes like ONNX", "[kernels][quantized]") {
  Case c;
  c.w_zp = {0};
  const DType out = GENERATE(DType::Uint8, DType::Int8);
  c.fill(5);
  const Floats w_scale{0.02f, 0.01f, 0.03f, 0.015f, 0.005f, 0.04f};
  const float x_scale = 0.05f, y_scale = 0.7f;
  const int y_zp = out == DType::Uint8 ? 100 : -3;
  const std::vector<int> bias{100, -200, 300, 0, 50, -1000};
  KernelCase k("QLinearConv", 10);
  k.input("x", c.xt, {c.N, c.C, c.H, c.W}, c.x);
  k.input("x_scale", F32, {}, Floats{x_scale}, true);
  k.input("x_zp", c.xt, {}, std::vector<int>{c.x_zp}, true);
  k.input("w", c.wt, {c.M, c.C, c.K, c.K}, c.w, true);
  k.input("w_scale", F32, {c.M}, w_scale, true);
  k.input("w_zp", c.wt, {1}, c.w_zp, true);
  k.input("y_scale", F32, {}, Floats{y_scale}, true);
  k.input("y_zp", out, {}, std::vector<int>{y_zp}, true);
  k.input("B", DType::Int32, {c.M}, bias, true);
  k.attr("pads", Dims{1, 1, 1, 1});
  k.output("y", out, {c.N, c.M, c.OH(), c.OW()});
  const bool loops = GENERATE(false, true);  // oneDNN's kernel, or its leaner variant, the loops
  INFO("loops " << loops);
  REQUIRE(k.run());
  CHECK(on_onednn(k));
  if (loops) {
    REQUIRE(k.run_leaner());
    CHECK_FALSE(on_onednn(k));
  }
  const std::vector<int32_t> acc = c.reference();
  const size_t plane = static_cast<size_t>(c.OH() * c.OW());
  const int lo = out == DType::Uint8 ? 0 : -128;
  size_t off_by_one = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t m = i / plane;
    const float mult = x_scale * w_scale[m] / y_scale;
    const int want = std::clamp(static_cast<int>(std::nearbyint(static_cast<float>(acc[i] + bias[m]) * mult)) + y_zp, lo, lo + 255);
    const int got = out == DType::Uint8 ? k.result_as<uint8_t>(0)[i] : k.result_as<int8_t>(0)[i];
    // The scale is one float multiplication either way; a product within an ulp of a .5 may round
    // the other way, nothing more.
    REQUIRE(std::abs(got - want) <= 1);
    off_by_one += got != want;
  }
  CHECK(off_by_one <= acc.size() / 100);
}

TEST_CASE("uint8 weights about their own zero point run oneDNN's int8 convolution on shifted weights, exact",
          "[kernels][quantized]") {
  // quantize_dynamic's uint8 weights: w - w_zp from -255 to 255. With VNNI oneDNN sums x' (w - 128)
  // and the kernel adds (128 - w_zp) times the window sums of x'; without it the float32 form
  // (sums below 2^24 here) or, past 2^24 with an int32 output, the loops. The same int32 sums
  // (and the unfused nodes' float bits) every way.
  const int variant = GENERATE(range(0, 7));
  Case c;
  c.wt = DType::Uint8;
  c.fit_int8 = false;
  c.w_zp = {37};
  bool dequantized = false;
  switch (variant) {
    case 0: break;
    case 1: c.w_zp = {0, 255, 128, 3, 77, 200}; break;                      // per channel, the extremes
    case 2: c.group = 2; c.stride = 2; c.dil = 2; c.H = 9; c.W = 8; break;  // groups, strides, dilations
    case 3: c.xt = DType::Int8; c.N = 2; c.pad = 0; c.K = 1; break;           // s8 source, batch 2, 1x1
    case 4: c.C = 6; c.M = 6; c.group = 6; break;                           // depthwise
    case 5: c = wide_uint8_weights(0, 2, 4, 3); break;                      // sums past 2^24
    case 6: dequantized = true; c.w_zp = {9, 250, 128, 3, 77, 200}; break;  // the fused epilogue
  }
  c.fill(static_cast<unsigned>(100 + variant));
  const bool x_zp_constant = variant % 2 == 1;
  INFO("variant " << variant);
  KernelCase k("ConvInteger", 10);
  c.add_inputs(k, x_zp_constant);
  const Floats scale{0.5f, 0.0025f, 0.02f, 0.01f, 0.00125f, 0.04f}, bias{1.f, -2.f, 3.f, -4.f, 5.f, -600.f};
  if (dequantized) {
    k.input("scale", F32, {c.M, 1, 1}, scale);  // a run-time per-channel scale, as quantize_dynamic's
    k.input("bias", F32, {c.M}, bias, true);
    k.attr(memplan::kDequantizedAttr, int64_t{1});
    k.attr(memplan::kFusedActivationAttr, static_cast<int64_t>(memplan::FusedActivation::Relu));
  }
  k.output("y", dequantized ? F32 : DType::Int32, {c.N, c.M, c.OH(), c.OW()});
  REQUIRE(k.run());
  if (memplan::rt::quant::int8_products_exact()) CHECK(on_onednn(k));
  const std::vector<int32_t> acc = c.reference();
  if (!dequantized) {
    CHECK(k.result_as<int32_t>(0) == acc);
    return;
  }
  const std::vector<float> got = k.result_as<float>(0);
  const size_t plane = static_cast<size_t>(c.OH() * c.OW());
  size_t differ = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t m = i / plane % static_cast<size_t>(c.M);
    float want = static_cast<float>(acc[i]) * scale[m];
    want = std::max(want + bias[m], 0.f);
    differ += got[i] != want;
  }
  CHECK(differ == 0);
}

TEST_CASE("1-D and 3-D ConvIntegers with uint8 weights past int8 give ONNX's sums", "[kernels][quantized]") {
  // x [1, 3, D, H, W] (D, H = 1 in 1-D), w [4, 3, k...] about zero point 200, stride 2, dilation
  // 2, padding 2: the shifted form's window geometry padded in front to three dims.
  const int rank = GENERATE(1, 3);
  const std::array<int64_t, 3> in = rank == 1 ? std::array<int64_t, 3>{1, 1, 13} : std::array<int64_t, 3>{5, 6, 7};
  const std::array<int64_t, 3> k = rank == 1 ? std::array<int64_t, 3>{1, 1, 3} : std::array<int64_t, 3>{2, 3, 3};
  const int64_t C = 3, M = 4, s = 2, d = 2, p = 2, x_zp = 77, w_zp = 200;
  std::array<int64_t, 3> out{};
  for (int a = 0; a < 3; ++a) out[a] = 3 - a > rank ? 1 : (in[a] + 2 * p - d * (k[a] - 1) - 1) / s + 1;
  std::mt19937 rng(static_cast<unsigned>(rank));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<int> x(static_cast<size_t>(C * in[0] * in[1] * in[2])), w(static_cast<size_t>(M * C * k[0] * k[1] * k[2]));
  for (int& v : x) v = byte(rng);
  for (int& v : w) v = byte(rng);
  Dims xd{1, C}, wd{M, C}, yd{1, M}, pads, strides, dilations;
  for (int a = 3 - rank; a < 3; ++a) {
    xd.push_back(in[a]);
    wd.push_back(k[a]);
    yd.push_back(out[a]);
    strides.push_back(s);
    dilations.push_back(d);
    pads.push_back(p);
  }
  pads.insert(pads.end(), pads.begin(), pads.end());
  KernelCase kc("ConvInteger", 10);
  kc.input("x", DType::Uint8, xd, x);
  kc.input("w", DType::Uint8, wd, w, true);
  kc.input("x_zp", DType::Uint8, {}, std::vector<int>{static_cast<int>(x_zp)});
  kc.input("w_zp", DType::Uint8, {}, std::vector<int>{static_cast<int>(w_zp)}, true);
  kc.attr("pads", pads);
  kc.attr("strides", strides);
  kc.attr("dilations", dilations);
  kc.output("y", DType::Int32, yd);
  REQUIRE(kc.run());
  if (memplan::rt::quant::int8_products_exact()) CHECK(on_onednn(kc));
  std::vector<int32_t> want;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          int32_t acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t k0 = 0; k0 < k[0]; ++k0)
              for (int64_t k1 = 0; k1 < k[1]; ++k1)
                for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                  const int64_t pd = rank == 3 ? p : 0, sd = rank == 3 ? s : 1, dd = rank == 3 ? d : 1;
                  const int64_t i0 = o0 * sd - pd + k0 * dd, i1 = o1 * sd - pd + k1 * dd, i2 = o2 * s - p + k2 * d;
                  if (i0 < 0 || i1 < 0 || i2 < 0 || i0 >= in[0] || i1 >= in[1] || i2 >= in[2]) continue;
                  const int xv = x[static_cast<size_t>(((c * in[0] + i0) * in[1] + i1) * in[2] + i2)];
                  const int wv = w[static_cast<size_t>((((m * C + c) * k[0] + k0) * k[1] + k1) * k[2] + k2)];
                  acc += (xv - static_cast<int>(x_zp)) * (wv - static_cast<int>(w_zp));
                }
          want.push_back(acc);
        }
  CHECK(kc.result_as<int32_t>(0) == want);
}

TEST_CASE("ConvInteger configurations oneDNN cannot run exactly stay on the loops", "[kernels][quantized]") {
  SECTION("a fused activation other than Relu is refused in one line") {
    Case c;
    c.fill(3);
    KernelCase k("ConvInteger", 10);
    c.add_inputs(k, false);
    k.input("x_scale", F32, {}, Floats{1.f});
    k.input("w_scale", F32, {1}, Floats{1.f}, true);
    k.attr(memplan::kDequantizedAttr, int64_t{1});
    k.attr(memplan::kFusedActivationAttr, static_cast<int64_t>(memplan::FusedActivation::Swish));
    k.output("y", F32, {c.N, c.M, c.OH(), c.OW()});
    require_error(k, ErrorKind::Unsupported, {"ConvInteger node", "fused activation"});
  }
}

TEST_CASE("without VNNI, a ConvInteger whose float32 sums could pass 2^24 stays on the loops, exact", "[kernels][quantized]") {
  // 256 channels of 3x3 weights at +-127 and a run-time zero point: a sum may reach
  // 255 * 127 * 2304 = 74.6 million, past float32's 2^24 integers; 32 channels stay below.
  for (const int64_t channels : {int64_t{32}, int64_t{256}}) {
    Case c;
    c.C = channels;
    c.M = 2;
    c.H = c.W = 4;
    c.fill(17);
    for (size_t i = 0; i < c.w.size(); ++i) c.w[i] = i % 2 ? 127 : -127;
    INFO(channels << " channels");
    KernelCase k("ConvInteger", 10);
    c.add_inputs(k, false);
    k.output("y", DType::Int32, {c.N, c.M, c.OH(), c.OW()});
    REQUIRE(k.run());
    const bool exact_in_float = channels == 32;
    CHECK(on_onednn(k) == (memplan::rt::quant::int8_products_exact() || exact_in_float));
    CHECK(k.result_as<int32_t>(0) == c.reference());
  }
}

TEST_CASE("a dequantized ConvInteger whose float32 sums could pass 2^24 runs oneDNN's int8 form exactly with VNNI, else its "
          "float32 form, rounding as a float convolution", "[kernels][quantized]") {
  // uint8 weights about a zero point of 30 (no int8 kernel) over 256 channels of 3x3: the
  // output is float(sum) * scale, which a float32 convolution gives to within its rounding.
  Case c = wide_uint8_weights(30, 4, 5, 23);
  KernelCase k("ConvInteger", 10);
  c.add_inputs(k, false);
  k.input("scale", F32, {}, Floats{0.5f}, true);  // ir/fused_dequantize.h's input 4; no bias
  k.attr(memplan::kDequantizedAttr, int64_t{1});
  k.output("y", F32, {c.N, c.M, c.OH(), c.OW()});
  REQUIRE(k.run());
  CHECK(on_onednn(k));
  const std::vector<int32_t> acc = c.reference();
  const std::vector<float> y = k.result_as<float>(0);
  REQUIRE(y.size() == acc.size());
  // With VNNI the shifted int8 form: ONNX's int32 sum, then one rounding.
  const bool exact = memplan::rt::quant::int8_products_exact();
  size_t differ = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double want = static_cast<double>(acc[i]) * 0.5;
    CHECK(std::abs(y[i] - want) <= 1e-6 * 255.0 * 255.0 * 2304.0 * 0.5);
    differ += y[i] != static_cast<float>(acc[i]) * 0.5f;
  }
  if (exact) CHECK(differ == 0);
}

TEST_CASE("MatMulInteger's row-wise loops match the reference", "[kernels][quantized]") {
  // A [2, M, K] (per-row zero points) times B [K, N] broadcast over the batch (per-column ones),
  // every mix of uint8 and int8.
  const DType at = GENERATE(DType::Uint8, DType::Int8), bt = GENERATE(DType::Uint8, DType::Int8);
  constexpr int64_t B = 2, M = 3, K = 37, N = 5;
  std::mt19937 rng(17);
  auto draw = [&](DType t, size_t n) {
    std::uniform_int_distribution<int> d(t == DType::Uint8 ? 0 : -128, t == DType::Uint8 ? 255 : 127);
    std::vector<int> v(n);
    for (int& x : v) x = d(rng);
    return v;
  };
  const std::vector<int> a = draw(at, B * M * K), b = draw(bt, K * N), azp = draw(at, M), bzp = draw(bt, N);
  KernelCase k("MatMulInteger", 10);
  k.input("A", at, {B, M, K}, a);
  k.input("B", bt, {K, N}, b, true);
  k.input("a_zp", at, {M}, azp);
  k.input("b_zp", bt, {N}, bzp, true);
  k.output("Y", DType::Int32, {B, M, N});
  REQUIRE(k.run());
  std::vector<int32_t> want;
  for (int64_t p = 0; p < B; ++p)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int32_t acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += (a[static_cast<size_t>((p * M + m) * K + q)] - azp[static_cast<size_t>(m)]) *
                 (b[static_cast<size_t>(q * N + n)] - bzp[static_cast<size_t>(n)]);
        want.push_back(acc);
      }
  CHECK(k.result_as<int32_t>(0) == want);
}
