// The window sums and the epilogue that let a ConvInteger with weights outside int8 run oneDNN's
// int8 convolution (runtime/kernels/quantized/conv_compensation.h), against brute force over 1-D
// to 3-D windows with strides, dilations, padding, groups and batches.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/kernels/quantized/conv_compensation.h"

using memplan::rt::quant::ConvEpilogue;
using memplan::rt::quant::WindowGeometry;

namespace {

// sum over the group's channels and the window at each output position of (x - zp).
std::vector<int32_t> brute_window_sums(const WindowGeometry& g, const std::vector<int>& x, int zp) {
  std::vector<int32_t> out;
  const int64_t cg = g.C / g.group;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp)
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            int32_t s = 0;
            for (int64_t c = grp * cg; c < (grp + 1) * cg; ++c)
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t i[3] = {od * g.stride[0] - g.pad[0] + kd * g.dil[0], oh * g.stride[1] - g.pad[1] + kh * g.dil[1],
                                          ow * g.stride[2] - g.pad[2] + kw * g.dil[2]};
                    bool inside = true;
                    for (int a = 0; a < 3; ++a) inside = inside && i[a] >= 0 && i[a] < g.in[a];
                    if (inside) s += x[static_cast<size_t>((((n * g.C + c) * g.in[0] + i[0]) * g.in[1] + i[1]) * g.in[2] + i[2])] - zp;
                  }
            out.push_back(s);
          }
  return out;
}

// Output size along an axis, as ONNX's Conv gives it with symmetric padding.
int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pad) { return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1; }

}  // namespace

TEST_CASE("window sums add the source less its zero point over each output's receptive field", "[quantized][compensation]") {
  SECTION("a hand-checked 1-D case: two channels, kernel 2, padding 1") {
    // x = [[1, 2, 3], [4, 5, 6]], zp 1: channel sums less 2 * 1 = [3, 5, 7]; windows over
    // [pad, 3, 5, 7, pad] of 2: [3, 8, 12, 7].
    WindowGeometry g;
    g.C = 2;
    g.in = {1, 1, 3};
    g.k = {1, 1, 2};
    g.pad = {0, 0, 1};
    g.out = {1, 1, 4};
    const std::vector<uint8_t> x{1, 2, 3, 4, 5, 6};
    std::vector<int32_t> scratch(memplan::rt::quant::window_sums_scratch(g));
    memplan::rt::quant::window_sums(g, x.data(), false, 1, scratch.data());
    CHECK(std::vector<int32_t>(scratch.begin(), scratch.begin() + 4) == std::vector<int32_t>{3, 8, 12, 7});
  }
  SECTION("random geometries against brute force, on one and two threads") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 60; ++trial) {
      auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
      WindowGeometry g;
      g.N = pick(1, 2);
      g.group = pick(1, 3);
      g.C = g.group * pick(1, 3);
      const int dims = pick(1, 3);
      bool empty = false;
      for (int a = 3 - dims; a < 3; ++a) {
        g.in[a] = pick(1, 9);
        g.k[a] = pick(1, 3);
        g.stride[a] = pick(1, 3);
        g.dil[a] = pick(1, 3);
        g.pad[a] = pick(0, 2);
        g.out[a] = out_size(g.in[a], g.k[a], g.stride[a], g.dil[a], g.pad[a]);
        empty = empty || g.out[a] < 1;
      }
      if (empty) continue;
      const bool is_signed = pick(0, 1) == 1;
      const int lo = is_signed ? -128 : 0, zp = pick(lo, lo + 255);
      std::vector<int> x(static_cast<size_t>(g.N * g.C * g.in_size()));
      for (int& v : x) v = pick(lo, lo + 255);
      std::vector<uint8_t> bytes(x.size());
      for (size_t i = 0; i < x.size(); ++i) bytes[i] = static_cast<uint8_t>(x[i]);  // int8 as its bytes
      const std::vector<int32_t> want = brute_window_sums(g, x, zp);
      for (const int threads : {1, 2}) {
        omp_set_num_threads(threads);
        std::vector<int32_t> scratch(memplan::rt::quant::window_sums_scratch(g), -1);
        memplan::rt::quant::window_sums(g, bytes.data(), is_signed, zp, scratch.data());
        INFO("trial " << trial << ", threads " << threads);
        CHECK(std::vector<int32_t>(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(want.size())) == want);
      }
    }
    omp_set_num_threads(1);
  }
}

TEST_CASE("the shifted convolution's epilogue adds the shift's share, then Cast, Mul, Add and Relu in place",
          "[quantized][compensation]") {
  // Two output channels of two positions, one group: y = acc + shift[m] * sums[p].
  WindowGeometry g;
  g.M = 2;
  g.out = {1, 1, 2};
  const std::vector<int32_t> sums{10, -3};
  const int32_t shift[] = {2, -5};
  const std::vector<int32_t> acc{1, 2, 3, 4};
  SECTION("int32 output") {
    std::vector<int32_t> y = acc;
    ConvEpilogue e;
    e.shift = shift;
    e.per_channel_shift = true;
    memplan::rt::quant::finish_shifted_conv(g, sums.data(), e, y.data());
    CHECK(y == std::vector<int32_t>{1 + 20, 2 - 6, 3 - 50, 4 + 15});
  }
  SECTION("float32 output with a per-channel scale, a bias and Relu") {
    std::vector<int32_t> y = acc;
    const float scale[] = {0.5f, 0.25f}, bias[] = {-10.f, 1.f};
    ConvEpilogue e;
    e.shift = shift;
    e.per_channel_shift = true;
    e.to_float = true;
    e.scale = scale;
    e.per_channel_scale = true;
    e.bias = bias;
    e.relu = true;
    memplan::rt::quant::finish_shifted_conv(g, sums.data(), e, y.data());
    std::vector<float> got(4);
    std::memcpy(got.data(), y.data(), sizeof(float) * 4);
    // (21 * 0.5 - 10, -4 * 0.5 - 10, -47 * 0.25 + 1, 19 * 0.25 + 1), then Relu.
    CHECK(got == std::vector<float>{0.5f, 0.f, 0.f, 5.75f});
  }
}
