// DeformConv (opset 19): against a plain convolution where every offset is 0, against a direct
// bilinear reference with fractional offsets, groups, offset groups and a mask, and on hostile
// offsets (NaN, far outside) and shapes.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "memplan/error.h"
#include "support/kernel_harness.h"
#include "support/naive_conv.h"
#include "support/numeric.h"

namespace {

using namespace memplan::test::kernel_names;
using memplan::test::Conv2d;
using memplan::test::naive_conv2d;
const RequireClose require_close{abs_rel(1e-5, 1e-5)};
// Sums of 576 float products against the reference's double ones.
const RequireClose require_close_long_sums{abs_rel(1e-4, 1e-4)};

struct Deform {
  Dims xd, wd;
  int64_t group = 1, offset_group = 1, stride = 1, pad = 1, dilation = 1;
  int64_t out(size_t axis) const {
    return (xd[axis + 2] + 2 * pad - ((wd[axis + 2] - 1) * dilation + 1)) / stride + 1;
  }
};

// ONNX's definition, directly: each tap sampled bilinearly at its offset (zeros outside), times
// the mask, times the weight.
Floats reference(const Deform& p, const Floats& x, const Floats& w, const Floats& offset, const Floats* mask,
                 const Floats* bias) {
  const int64_t n = p.xd[0], c = p.xd[1], h = p.xd[2], wi = p.xd[3], m = p.wd[0], kh = p.wd[2], kw = p.wd[3];
  const int64_t oh = p.out(0), ow = p.out(1), cg = c / p.group, mg = m / p.group, k = kh * kw;
  const auto at = [&](int64_t b, int64_t ch, double y, double xx) {
    const auto sample = [&](int64_t yy, int64_t xi) {
      return yy < 0 || yy >= h || xi < 0 || xi >= wi ? 0.0 : x[static_cast<size_t>(((b * c + ch) * h + yy) * wi + xi)];
    };
    const double y0 = std::floor(y), x0 = std::floor(xx), ly = y - y0, lx = xx - x0;
    const auto iy = static_cast<int64_t>(y0), ix = static_cast<int64_t>(x0);
    return (1 - ly) * (1 - lx) * sample(iy, ix) + (1 - ly) * lx * sample(iy, ix + 1) + ly * (1 - lx) * sample(iy + 1, ix) +
           ly * lx * sample(iy + 1, ix + 1);
  };
  Floats y(static_cast<size_t>(n * m * oh * ow));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double acc = bias ? (*bias)[static_cast<size_t>(o)] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t ch = (o / mg) * cg + ci, og = ch / (c / p.offset_group);
            for (int64_t t = 0; t < k; ++t) {
              const auto off = [&](int64_t part) {
                return offset[static_cast<size_t>((((b * p.offset_group + og) * k + t) * 2 + part) * oh * ow + r * ow + q)];
              };
              const double sy = static_cast<double>(r * p.stride - p.pad + (t / kw) * p.dilation) + off(0);
              const double sx = static_cast<double>(q * p.stride - p.pad + (t % kw) * p.dilation) + off(1);
              double v = at(b, ch, sy, sx);
              if (mask) v *= (*mask)[static_cast<size_t>(((b * p.offset_group + og) * k + t) * oh * ow + r * ow + q)];
              acc += v * w[static_cast<size_t>((o * cg + ci) * k + t)];
            }
          }
          y[static_cast<size_t>(((b * m + o) * oh + r) * ow + q)] = static_cast<float>(acc);
        }
  return y;
}

KernelCase deform_case(const Deform& p, const Floats& x, const Floats& w, const Floats& offset, const Floats* bias,
                       const Floats* mask) {
  KernelCase c("DeformConv", 19);
  const int64_t k = p.wd[2] * p.wd[3];
  c.input("X", F32, p.xd, x);
  c.input("W", F32, p.wd, w, true);
  c.input("offset", F32, {p.xd[0], p.offset_group * 2 * k, p.out(0), p.out(1)}, offset);
  if (bias) c.input("B", F32, {p.wd[0]}, *bias, true);
  else if (mask) c.omitted_input();
  if (mask) c.input("mask", F32, {p.xd[0], p.offset_group * k, p.out(0), p.out(1)}, *mask);
  c.output("Y", F32, {p.xd[0], p.wd[0], p.out(0), p.out(1)});
  c.attr("pads", Dims{p.pad, p.pad, p.pad, p.pad});
  c.attr("strides", Dims{p.stride, p.stride});
  c.attr("dilations", Dims{p.dilation, p.dilation});
  c.attr("group", p.group);
  c.attr("offset_group", p.offset_group);
  return c;
}

size_t count(const Dims& d) {
  size_t n = 1;
  for (int64_t v : d) n *= static_cast<size_t>(v);
  return n;
}

}  // namespace

TEST_CASE("DeformConv with zero offsets is the plain convolution", "[kernels][deform]") {
  Deform p{{2, 4, 7, 6}, {6, 2, 3, 3}};
  p.group = 2;
  p.stride = 2;
  const Floats x = random_floats(count(p.xd), 1), w = random_floats(count(p.wd), 2), b = random_floats(6, 3);
  const Floats offset(static_cast<size_t>(2 * 2 * 9 * p.out(0) * p.out(1)), 0.f);
  KernelCase c = deform_case(p, x, w, offset, &b, nullptr);
  REQUIRE(c.run());
  Conv2d conv;
  conv.group = 2;
  conv.strides = {2, 2};
  conv.pads = {1, 1, 1, 1};
  require_close(c.result_as<float>(0), naive_conv2d(x, p.xd, w, p.wd, b, conv, p.out(0), p.out(1)));
}

TEST_CASE("DeformConv samples each tap bilinearly at its offset, per offset group, times the mask", "[kernels][deform]") {
  // Offsets in [-2.5, 2.5]: fractional, and some samples land outside the image (zeros there).
  // 40 output pixels and 16 * 9 column rows: the samples fit one tile.
  Deform p{{1, 16, 5, 8}, {6, 8, 3, 3}};
  p.group = 2;
  p.offset_group = 4;
  p.dilation = 2;
  p.pad = 2;
  const int64_t k = 9, pixels = p.out(0) * p.out(1);
  const Floats x = random_floats(count(p.xd), 4), w = random_floats(count(p.wd), 5);
  const Floats offset = random_floats(static_cast<size_t>(4 * 2 * k * pixels), 6, -2.5f, 2.5f);
  const Floats mask = random_floats(static_cast<size_t>(4 * k * pixels), 7, 0.f, 1.f);
  SECTION("with a mask, no bias") {
    KernelCase c = deform_case(p, x, w, offset, nullptr, &mask);
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), reference(p, x, w, offset, &mask, nullptr));
  }
  SECTION("offsets only, over several tiles of output pixels") {
    Deform big{{1, 64, 40, 40}, {8, 64, 3, 3}};  // 64 * 9 rows: 113 pixels a tile, 1600 pixels
    const Floats bx = random_floats(count(big.xd), 8), bw = random_floats(count(big.wd), 9);
    const Floats boff = random_floats(static_cast<size_t>(2 * 9 * 1600), 10, -3.f, 3.f);
    KernelCase c = deform_case(big, bx, bw, boff, nullptr, nullptr);
    REQUIRE(c.run());
    CHECK(c.kernel()->scratchpad_bytes() <= 256 * 1024);
    require_close_long_sums(c.result_as<float>(0), reference(big, bx, bw, boff, nullptr, nullptr));
  }
}

TEST_CASE("DeformConv reads a NaN or far-away offset as a sample outside the image, and refuses mismatched shapes",
          "[kernels][deform]") {
  Deform p{{1, 1, 3, 3}, {1, 1, 1, 1}};
  p.pad = 0;
  const Floats x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1};
  Floats offset(18, 0.f);
  offset[0] = std::numeric_limits<float>::quiet_NaN();  // pixel 0's height offset
  offset[9 + 1] = 1e30f;                                  // pixel 1's width offset
  offset[2] = 0.5f;                                       // pixel 2: halfway down, between 3 and 6
  KernelCase c = deform_case(p, x, w, offset, nullptr, nullptr);
  REQUIRE(c.run());
  const Floats y = c.result_as<float>(0);
  CHECK(y[0] == 0.f);
  CHECK(y[1] == 0.f);
  CHECK(y[2] == 4.5f);
  CHECK(y[3] == 4.f);

  KernelCase bad("DeformConv", 19);
  bad.input("X", F32, {1, 1, 3, 3}, x);
  bad.input("W", F32, {1, 1, 1, 1}, w, true);
  bad.input("offset", F32, {1, 4, 3, 3}, Floats(36, 0.f));
  bad.output("Y", F32, {1, 1, 3, 3});
  CHECK_THROWS_WITH(bad.run(), Catch::Contains("DeformConv node") && Catch::Contains("offset [1, 4, 3, 3] must be [1, 2, 3, 3]"));
}
