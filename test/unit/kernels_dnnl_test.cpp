// The oneDNN kernels against hand-computed values and naive reference loops.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "memplan/error.h"
#include "support/kernel_harness.h"
#include "support/naive_conv.h"

namespace {

using namespace memplan::test::kernel_names;
using memplan::test::Conv2d;
using memplan::test::naive_conv2d;

size_t count(const Dims& d) {
  size_t n = 1;
  for (int64_t x : d) n *= static_cast<size_t>(x);
  return n;
}

const RequireClose require_close{scaled(1e-4f)};


// ---- Naive references --------------------------------------------------------------------------

// Batched matmul with numpy broadcasting of the (already padded to equal rank) batch dims.
Floats naive_matmul(const Floats& a, const Dims& ad, const Floats& b, const Dims& bd, Dims& out_dims) {
  const size_t r = ad.size();
  const int64_t m = ad[r - 2], k = ad[r - 1], n = bd[r - 1];
  out_dims.assign(r, 0);
  for (size_t i = 0; i + 2 < r; ++i) out_dims[i] = std::max(ad[i], bd[i]);
  out_dims[r - 2] = m;
  out_dims[r - 1] = n;
  const size_t batches = count(out_dims) / static_cast<size_t>(m * n);
  Floats y(count(out_dims));
  for (size_t bi = 0; bi < batches; ++bi) {
    // Decompose the batch index and map it into each operand.
    size_t rest = bi, a_off = 0, b_off = 0, a_stride = static_cast<size_t>(m * k), b_stride = static_cast<size_t>(k * n);
    for (size_t i = r - 2; i-- > 0;) {
      const size_t idx = rest % static_cast<size_t>(out_dims[i]);
      rest /= static_cast<size_t>(out_dims[i]);
      a_off += (ad[i] == 1 ? 0 : idx) * a_stride;
      b_off += (bd[i] == 1 ? 0 : idx) * b_stride;
      a_stride *= static_cast<size_t>(ad[i]);
      b_stride *= static_cast<size_t>(bd[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q)
          acc += static_cast<double>(a[a_off + static_cast<size_t>(i * k + q)]) * b[b_off + static_cast<size_t>(q * n + j)];
        y[bi * static_cast<size_t>(m * n) + static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
      }
  }
  return y;
}

struct Pool2d {
  Dims kernel, strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
  bool max = true, include_pad = false;
  int64_t lp = 0;  // LpPool's p (max is then false)
};

// onnxruntime's pooling semantics (window clamped to the padded input for include-pad averages:
// the taps, dilations apart, up to the end padding).
Floats naive_pool2d(const Floats& x, const Dims& xd, const Pool2d& p, int64_t oh, int64_t ow) {
  const int64_t planes = xd[0] * xd[1], h = xd[2], w = xd[3];
  Floats y(static_cast<size_t>(planes * oh * ow));
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t y0 = 0; y0 < oh; ++y0)
      for (int64_t x0 = 0; x0 < ow; ++x0) {
        const int64_t hs = y0 * p.strides[0] - p.pads[0], ws = x0 * p.strides[1] - p.pads[1];
        double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t valid = 0;
        for (int64_t ky = 0; ky < p.kernel[0]; ++ky)
          for (int64_t kx = 0; kx < p.kernel[1]; ++kx) {
            const int64_t iy = hs + ky * p.dilations[0], ix = ws + kx * p.dilations[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const float v = x[static_cast<size_t>((pl * h + iy) * w + ix)];
            acc = p.max ? std::max<double>(acc, v) : p.lp ? acc + std::pow(std::abs(v), p.lp) : acc + v;
            ++valid;
          }
        if (p.lp) {
          acc = std::pow(acc, 1.0 / static_cast<double>(p.lp));
        } else if (!p.max) {
          int64_t size = valid;
          if (p.include_pad) {
            const auto taps = [](int64_t start, int64_t k, int64_t d, int64_t end) {
              return 1 + (std::min(start + k * d, end) - start - 1) / d;
            };
            size = taps(hs, p.kernel[0], p.dilations[0], h + p.pads[2]) * taps(ws, p.kernel[1], p.dilations[1], w + p.pads[3]);
          }
          acc = valid ? acc / static_cast<double>(size) : 0.0;
        }
        y[static_cast<size_t>((pl * oh + y0) * ow + x0)] = static_cast<float>(acc);
      }
  return y;
}

// Sets Conv-style attributes.
void conv_attrs(KernelCase& c, const Conv2d& p) {
  c.attr("group", p.group);
  c.attr("strides", p.strides);
  c.attr("dilations", p.dilations);
  c.attr("pads", p.pads);
}

}  // namespace

// ---- Conv --------------------------------------------------------------------------------------

TEST_CASE("Conv: a 2x2 all-ones kernel sums each window", "[kernels][dnnl]") {
  KernelCase c("Conv");
  c.input("X", F32, {1, 1, 3, 3}, Floats{1, 2, 3, 4, 5, 6, 7, 8, 9});
  c.input("W", F32, {1, 1, 2, 2}, Floats{1, 1, 1, 1}, true);
  c.output("Y", F32, {1, 1, 2, 2});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{12, 16, 24, 28});
}

TEST_CASE("Conv matches a naive convolution with groups, dilations, strides and asymmetric pads", "[kernels][dnnl]") {
  struct Case {
    const char* name;
    Dims xd, wd;
    Conv2d p;
    bool bias;
  };
  const std::vector<Case> cases = {
      {"plain", {2, 3, 7, 7}, {5, 3, 3, 2}, {1, {1, 1}, {1, 1}, {1, 0, 1, 1}}, true},
      {"grouped, dilated, strided", {1, 4, 7, 7}, {6, 2, 3, 3}, {2, {2, 2}, {2, 2}, {1, 0, 2, 1}}, true},
      {"depthwise, multiplier 2", {1, 3, 7, 7}, {6, 1, 3, 3}, {3, {1, 1}, {1, 2}, {0, 2, 1, 0}}, true},
      {"depthwise, no bias, stride 3", {1, 3, 7, 7}, {3, 1, 2, 2}, {3, {3, 2}, {1, 1}, {1, 1, 1, 1}}, false},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      const int64_t oh = (t.xd[2] + t.p.pads[0] + t.p.pads[2] - ((t.wd[2] - 1) * t.p.dilations[0] + 1)) / t.p.strides[0] + 1;
      const int64_t ow = (t.xd[3] + t.p.pads[1] + t.p.pads[3] - ((t.wd[3] - 1) * t.p.dilations[1] + 1)) / t.p.strides[1] + 1;
      Floats x = random_floats(count(t.xd), 1), w = random_floats(count(t.wd), 2);
      Floats b = t.bias ? random_floats(static_cast<size_t>(t.wd[0]), 3) : Floats{};
      KernelCase c("Conv");
      c.input("X", F32, t.xd, x);
      c.input("W", F32, t.wd, w, true);
      if (t.bias) c.input("B", F32, {t.wd[0]}, b, true);
      c.output("Y", F32, {t.xd[0], t.wd[0], oh, ow});
      conv_attrs(c, t.p);
      REQUIRE(c.run());
      require_close(c.result_as<float>(0), naive_conv2d(x, t.xd, w, t.wd, b, t.p, oh, ow));
    }
  }
}

TEST_CASE("Conv auto_pad SAME_UPPER puts the odd padding at the end, SAME_LOWER at the start", "[kernels][dnnl]") {
  // in 7, stride 2, kernel 4: out 4, total pad (4-1)*2 + 4 - 7 = 3.
  const Dims xd{1, 2, 7, 7}, wd{3, 2, 4, 4};
  Floats x = random_floats(count(xd), 4), w = random_floats(count(wd), 5);
  for (const std::string mode : {"SAME_UPPER", "SAME_LOWER"}) {
    KernelCase c("Conv");
    c.input("X", F32, xd, x);
    c.input("W", F32, wd, w, true);
    c.output("Y", F32, {1, 3, 4, 4});
    c.attr("strides", Dims{2, 2});
    c.attr("auto_pad", mode);
    REQUIRE(c.run());
    Conv2d p;
    p.strides = {2, 2};
    p.pads = mode == "SAME_UPPER" ? Dims{1, 1, 2, 2} : Dims{2, 2, 1, 1};
    INFO(mode);
    require_close(c.result_as<float>(0), naive_conv2d(x, xd, w, wd, {}, p, 4, 4));
  }
}

TEST_CASE("Conv auto_pad VALID ignores pads", "[kernels][dnnl]") {
  const Dims xd{1, 1, 5, 5}, wd{1, 1, 3, 3};
  Floats x = random_floats(count(xd), 6), w = random_floats(count(wd), 7);
  KernelCase c("Conv");
  c.input("X", F32, xd, x);
  c.input("W", F32, wd, w, true);
  c.output("Y", F32, {1, 1, 3, 3});
  c.attr("auto_pad", std::string("VALID"));
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), naive_conv2d(x, xd, w, wd, {}, Conv2d{}, 3, 3));
}

TEST_CASE("Conv 1-D equals the 2-D convolution of a height-1 image", "[kernels][dnnl]") {
  Floats x = random_floats(2 * 9, 8), w = random_floats(4 * 2 * 3, 9), b = random_floats(4, 10);
  KernelCase c("Conv");
  c.input("X", F32, {1, 2, 9}, x);
  c.input("W", F32, {4, 2, 3}, w, true);
  c.input("B", F32, {4}, b, true);
  c.output("Y", F32, {1, 4, 5});
  c.attr("strides", Dims{2});
  c.attr("pads", Dims{1, 1});
  REQUIRE(c.run());
  Conv2d p;
  p.strides = {1, 2};
  p.pads = {0, 1, 0, 1};
  require_close(c.result_as<float>(0), naive_conv2d(x, {1, 2, 1, 9}, w, {4, 2, 1, 3}, b, p, 1, 5));
}

TEST_CASE("Conv 1-D runs on the kernel oneDNN has for the same window as one row of 2-D", "[kernels][dnnl]") {
  // A Conformer's depthwise 31-tap convolution, 32 channels at 2x50, and one dilated and strided:
  // oneDNN 2.6 has only its GEMM for them as 1-D (30x slower at a Conformer's sizes), a direct
  // kernel as 2-D on AVX-512.
  for (const int64_t stride : {1, 2}) {
    const int64_t c_in = 32, width = 50, taps = 31, dilation = stride, pad = 15 * dilation;
    const int64_t out = (width + 2 * pad - (taps - 1) * dilation - 1) / stride + 1;
    Floats x = random_floats(static_cast<size_t>(2 * c_in * width), 11);
    Floats w = random_floats(static_cast<size_t>(c_in * taps), 12), b = random_floats(static_cast<size_t>(c_in), 13);
    auto run = [&](bool one_d) {
      const auto dims = [&](int64_t n, int64_t c, int64_t wd) { return one_d ? Dims{n, c, wd} : Dims{n, c, 1, wd}; };
      KernelCase c("Conv");
      c.input("X", F32, dims(2, c_in, width), x);
      c.input("W", F32, dims(c_in, 1, taps), w, true);
      c.input("B", F32, {c_in}, b, true);
      c.output("Y", F32, dims(2, c_in, out));
      c.attr("group", c_in);
      c.attr("pads", one_d ? Dims{pad, pad} : Dims{0, pad, 0, pad});
      c.attr("strides", one_d ? Dims{stride} : Dims{1, stride});
      c.attr("dilations", one_d ? Dims{dilation} : Dims{1, dilation});
      REQUIRE(c.run());
      return std::pair{c.result_as<float>(0), c.kernel()->implementation()};
    };
    const auto [y1, impl1] = run(true);
    const auto [y2, impl2] = run(false);
    Conv2d p;
    p.group = c_in;
    p.strides = {1, stride};
    p.dilations = {1, dilation};
    p.pads = {0, pad, 0, pad};
    INFO("stride " << stride << ": 1-D on " << impl1 << ", 2-D on " << impl2);
    require_close(y1, naive_conv2d(x, {2, c_in, 1, width}, w, {c_in, 1, 1, taps}, b, p, 1, out));
    CHECK(impl1 == impl2);
  }
}

TEST_CASE("a depthwise Conv never runs on oneDNN's GEMM: a wide, dilated or strided window runs memplan's loop, "
          "its fused activation included",
          "[kernels][dnnl]") {
  // oneDNN 2.6 runs these on its GEMM at AVX2 (its depthwise kernel takes at most 7 taps a row)
  // and the dilated, strided ones at AVX-512 too.
  struct Case {
    const char* name;
    Dims xd, wd;
    Conv2d p;
    bool swish;  // memplan_fused_activation 3 (Swish), else 2 (Clip to [-0.5, 0.75])
  };
  const std::vector<Case> cases = {
      {"31 taps of one row, dilated and strided, Swish", {2, 24, 1, 90}, {24, 1, 1, 31}, {24, {1, 2}, {1, 2}, {0, 30, 0, 29}}, true},
      {"31 taps of one row, Swish", {1, 16, 1, 64}, {16, 1, 1, 31}, {16, {1, 1}, {1, 1}, {0, 15, 0, 15}}, true},
      {"3x3 dilated and strided, multiplier 2, Clip", {1, 8, 13, 11}, {16, 1, 3, 3}, {8, {2, 2}, {2, 2}, {2, 1, 2, 2}}, false},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      const auto out = [&](int axis) {
        const int64_t span = t.xd[2 + axis] + t.p.pads[axis] + t.p.pads[2 + axis] - ((t.wd[2 + axis] - 1) * t.p.dilations[axis] + 1);
        return span / t.p.strides[axis] + 1;
      };
      const int64_t oh = out(0), ow = out(1);
      Floats x = random_floats(count(t.xd), 21), w = random_floats(count(t.wd), 22);
      Floats b = random_floats(static_cast<size_t>(t.wd[0]), 23);
      KernelCase c("Conv");
      c.input("X", F32, t.xd, x);
      c.input("W", F32, t.wd, w, true);
      c.input("B", F32, {t.wd[0]}, b, true);
      c.output("Y", F32, {t.xd[0], t.wd[0], oh, ow});
      conv_attrs(c, t.p);
      if (t.swish) {
        c.attr("memplan_fused_activation", int64_t{3});
      } else {
        c.attr("memplan_fused_activation", int64_t{2});
        c.attr("memplan_fused_clip", Floats{-0.5f, 0.75f});
      }
      REQUIRE(c.run());
      Floats want = naive_conv2d(x, t.xd, w, t.wd, b, t.p, oh, ow);
      for (float& v : want) v = t.swish ? v / (1 + std::exp(-v)) : std::clamp(v, -0.5f, 0.75f);
      INFO(c.kernel()->implementation());
      require_close(c.result_as<float>(0), want);
      CHECK(c.kernel()->implementation().find("gemm") == std::string::npos);
    }
  }
}

TEST_CASE("Conv 3-D with a 1x1x1 kernel is a per-voxel channel mix", "[kernels][dnnl]") {
  KernelCase c("Conv");
  c.input("X", F32, {1, 2, 2, 1, 2}, Floats{1, 2, 3, 4, 10, 20, 30, 40});
  c.input("W", F32, {1, 2, 1, 1, 1}, Floats{1, -1}, true);
  c.output("Y", F32, {1, 1, 2, 1, 2});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{-9, -18, -27, -36});
}

TEST_CASE("Conv takes run-time weights and bias in plain layout", "[kernels][dnnl]") {
  const Dims xd{1, 4, 6, 6}, wd{4, 2, 3, 3};
  Floats x = random_floats(count(xd), 11), w = random_floats(count(wd), 12), b = random_floats(4, 13);
  KernelCase c("Conv");
  c.input("X", F32, xd, x);
  c.input("W", F32, wd, w);
  c.input("B", F32, {4}, b);
  c.output("Y", F32, {1, 4, 4, 4});
  c.attr("group", int64_t{2});
  REQUIRE(c.run());
  Conv2d p;
  p.group = 2;
  require_close(c.result_as<float>(0), naive_conv2d(x, xd, w, wd, b, p, 4, 4));
}

TEST_CASE("Conv with a splat weight expands it", "[kernels][dnnl]") {
  KernelCase c("Conv");
  c.input("X", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
  memplan::Value* w = c.input("W", F32, {2, 1, 1, 1}, Floats{0, 0}, true);
  auto splat = std::make_shared<memplan::Tensor>();
  splat->dtype = F32;
  splat->dims = {2, 1, 1, 1};
  splat->splat = true;
  const float half = 0.5f;
  splat->bytes.resize(sizeof(float));
  std::memcpy(splat->bytes.data(), &half, sizeof(float));
  w->constant = splat;
  c.output("Y", F32, {1, 2, 2, 2});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{0.5f, 1, 1.5f, 2, 0.5f, 1, 1.5f, 2});
}

TEST_CASE("Conv fused activations: Relu and Clip", "[kernels][dnnl]") {
  const Dims xd{1, 2, 5, 5}, wd{3, 2, 3, 3};
  Floats x = random_floats(count(xd), 14), w = random_floats(count(wd), 15), b = random_floats(3, 16);
  Conv2d p;
  p.pads = {1, 1, 1, 1};
  const Floats plain = naive_conv2d(x, xd, w, wd, b, p, 5, 5);
  auto make = [&](KernelCase& c) {
    c.input("X", F32, xd, x);
    c.input("W", F32, wd, w, true);
    c.input("B", F32, {3}, b, true);
    c.output("Y", F32, {1, 3, 5, 5});
    conv_attrs(c, p);
  };
  SECTION("Relu") {
    KernelCase c("Conv");
    make(c);
    c.attr("memplan_fused_activation", int64_t{1});
    REQUIRE(c.run());
    Floats want = plain;
    for (float& v : want) v = std::max(v, 0.f);
    require_close(c.result_as<float>(0), want);
  }
  SECTION("Clip") {
    KernelCase c("Conv");
    make(c);
    c.attr("memplan_fused_activation", int64_t{2});
    c.attr("memplan_fused_clip", Floats{-0.5f, 0.75f});
    REQUIRE(c.run());
    Floats want = plain;
    for (float& v : want) v = std::clamp(v, -0.5f, 0.75f);
    require_close(c.result_as<float>(0), want);
  }
  SECTION("Clip without bounds is an attribute error naming the node") {
    KernelCase c("Conv");
    make(c);
    c.attr("memplan_fused_activation", int64_t{2});
    require_error(c, ErrorKind::InvalidInput, {"Conv node 'Conv_under_test'", "memplan_fused_clip"});
  }
  SECTION("an unknown activation code is an attribute error") {
    KernelCase c("Conv");
    make(c);
    c.attr("memplan_fused_activation", int64_t{7});
    require_error(c, ErrorKind::InvalidInput, {"Conv node 'Conv_under_test'", "memplan_fused_activation 7"});
  }
}

TEST_CASE("Conv fused Add: input 3 is added before the activation, in place or copied", "[kernels][dnnl]") {
  const Dims xd{1, 2, 4, 4}, wd{2, 2, 3, 3}, yd{1, 2, 4, 4};
  Floats x = random_floats(count(xd), 17), w = random_floats(count(wd), 18), b = random_floats(2, 19);
  Floats addend = random_floats(count(yd), 20);
  Conv2d p;
  p.pads = {1, 1, 1, 1};
  const Floats conv = naive_conv2d(x, xd, w, wd, b, p, 4, 4);
  Floats sum = conv, sum_relu = conv;
  for (size_t i = 0; i < conv.size(); ++i) {
    sum[i] = conv[i] + addend[i];
    sum_relu[i] = std::max(sum[i], 0.f);
  }
  auto make = [&](KernelCase& c, bool relu) {
    c.input("X", F32, xd, x);
    c.input("W", F32, wd, w, true);
    c.input("B", F32, {2}, b, true);
    c.input("Residual", F32, yd, addend);
    c.output("Y", F32, yd);
    conv_attrs(c, p);
    if (relu) c.attr("memplan_fused_activation", int64_t{1});
  };

  SECTION("separate buffers: the addend is copied into the output first") {
    KernelCase c("Conv");
    make(c, false);
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), sum);
  }
  SECTION("with Relu after the sum") {
    KernelCase c("Conv");
    make(c, true);
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), sum_relu);
  }
  SECTION("the addend shares the output buffer (what the executor does)") {
    KernelCase c("Conv");
    make(c, true);
    REQUIRE(c.run());
    // Run again by hand with input 3 and the output on one buffer.
    Floats xin = x, shared = addend;
    std::vector<memplan::rt::TensorView> in(4), out(1);
    auto view = [](float* data, const Dims& d) {
      memplan::rt::TensorView v;
      v.data = reinterpret_cast<std::byte*>(data);
      v.dtype = F32;
      v.rank = static_cast<int>(d.size());
      for (size_t i = 0; i < d.size(); ++i) v.dims[i] = d[i];
      v.capacity = count(d) * sizeof(float);
      return v;
    };
    Floats wcopy = w, bcopy = b;  // constants: the kernel ignores these views
    in[0] = view(xin.data(), xd);
    in[1] = view(wcopy.data(), wd);
    in[2] = view(bcopy.data(), {2});
    in[3] = view(shared.data(), yd);
    out[0] = view(shared.data(), yd);
    std::vector<std::byte> scratch(c.kernel()->scratchpad_bytes() + 64);
    c.kernel()->run(memplan::rt::KernelArgs{in, out, scratch.data(), c.state()});
    require_close(shared, sum_relu);
  }
  SECTION("an addend that needs broadcasting is refused") {
    KernelCase c("Conv");
    c.input("X", F32, xd, x);
    c.input("W", F32, wd, w, true);
    c.omitted_input();
    c.input("Residual", F32, {1, 2, 1, 1}, Floats{1, 2});
    c.output("Y", F32, yd);
    conv_attrs(c, p);
    require_error(c, ErrorKind::Unsupported, {"Conv node 'Conv_under_test'", "fused Add"});
  }
}

TEST_CASE("Conv refuses non-float32 tensors, naming the node", "[kernels][dnnl]") {
  KernelCase c("Conv");
  c.input("X", DType::Int64, {1, 1, 3, 3}, std::vector<int64_t>(9, 1));
  c.input("W", DType::Int64, {1, 1, 2, 2}, std::vector<int64_t>(4, 1), true);
  c.output("Y", DType::Int64, {1, 1, 2, 2});
  require_error(c, ErrorKind::Unsupported, {"test.onnx", "Conv node 'Conv_under_test'", "int64", "only float32"});
}

TEST_CASE("Conv with an output shape that does not match the attributes is an error", "[kernels][dnnl]") {
  KernelCase c("Conv");
  c.input("X", F32, {1, 1, 5, 5}, Floats(25, 1.f));
  c.input("W", F32, {1, 1, 3, 3}, Floats(9, 1.f), true);
  c.output("Y", F32, {1, 1, 5, 5});
  require_error(c, ErrorKind::InvalidInput, {"Conv node 'Conv_under_test'", "[1, 1, 3, 3]"});
}

// ---- ConvTranspose -----------------------------------------------------------------------------

TEST_CASE("ConvTranspose: a 2x2 all-ones kernel spreads each input", "[kernels][dnnl]") {
  KernelCase c("ConvTranspose");
  c.input("X", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
  c.input("W", F32, {1, 1, 2, 2}, Floats{1, 1, 1, 1}, true);
  c.output("Y", F32, {1, 1, 3, 3});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{1, 3, 2, 4, 10, 6, 3, 7, 4});
}

TEST_CASE("ConvTranspose matches a naive scatter: groups, strides, dilations, pads, output_padding", "[kernels][dnnl]") {
  struct Case {
    const char* name;
    Dims xd, wd;
    Conv2d p;
    Dims out_pad;
    bool bias;
  };
  const std::vector<Case> cases = {
      {"stride 2, output_padding 1", {1, 2, 3, 3}, {2, 3, 3, 3}, {1, {2, 2}, {1, 1}, {0, 0, 0, 0}}, {1, 1}, true},
      {"groups 2, dilation 2, pads", {2, 4, 3, 4}, {4, 1, 2, 3}, {2, {2, 1}, {2, 1}, {1, 0, 0, 1}}, {1, 0}, true},
      {"output_padding past the end padding", {1, 1, 2, 2}, {1, 2, 3, 3}, {1, {3, 3}, {1, 1}, {1, 1, 0, 0}}, {2, 1}, false},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      const int64_t m = t.wd[1] * t.p.group;
      int64_t out[2];
      for (int i = 0; i < 2; ++i)
        out[i] = t.p.strides[i] * (t.xd[2 + i] - 1) + t.out_pad[i] + (t.wd[2 + i] - 1) * t.p.dilations[i] + 1 -
                 t.p.pads[i] - t.p.pads[2 + i];
      Floats x = random_floats(count(t.xd), 21), w = random_floats(count(t.wd), 22);
      Floats b = t.bias ? random_floats(static_cast<size_t>(m), 23) : Floats{};
      KernelCase c("ConvTranspose");
      c.input("X", F32, t.xd, x);
      c.input("W", F32, t.wd, w, true);
      if (t.bias) c.input("B", F32, {m}, b, true);
      c.output("Y", F32, {t.xd[0], m, out[0], out[1]});
      conv_attrs(c, t.p);
      c.attr("output_padding", t.out_pad);
      REQUIRE(c.run());
      require_close(c.result_as<float>(0), naive_conv_transpose2d(x, t.xd, w, t.wd, b, t.p, out[0], out[1]));
    }
  }
}

TEST_CASE("ConvTranspose output_shape and auto_pad derive the pads (ONNX spec rule)", "[kernels][dnnl]") {
  // in 3, stride 2, kernel 3: full size 7. Target 6 -> total padding 1.
  const Dims xd{1, 1, 3, 3}, wd{1, 1, 3, 3};
  Floats x = random_floats(count(xd), 24), w = random_floats(count(wd), 25);
  Conv2d p;
  p.strides = {2, 2};
  SECTION("output_shape, NOTSET: the odd padding goes to the start") {
    KernelCase c("ConvTranspose");
    c.input("X", F32, xd, x);
    c.input("W", F32, wd, w, true);
    c.output("Y", F32, {1, 1, 6, 6});
    c.attr("strides", Dims{2, 2});
    c.attr("output_shape", Dims{6, 6});
    REQUIRE(c.run());
    p.pads = {1, 1, 0, 0};
    require_close(c.result_as<float>(0), naive_conv_transpose2d(x, xd, w, wd, {}, p, 6, 6));
  }
  SECTION("auto_pad SAME_UPPER: output = input * stride, the odd padding at the end") {
    KernelCase c("ConvTranspose");
    c.input("X", F32, xd, x);
    c.input("W", F32, wd, w, true);
    c.output("Y", F32, {1, 1, 6, 6});
    c.attr("strides", Dims{2, 2});
    c.attr("auto_pad", std::string("SAME_UPPER"));
    REQUIRE(c.run());
    p.pads = {0, 0, 1, 1};
    require_close(c.result_as<float>(0), naive_conv_transpose2d(x, xd, w, wd, {}, p, 6, 6));
  }
}

TEST_CASE("ConvTranspose takes run-time weights", "[kernels][dnnl]") {
  const Dims xd{1, 2, 3, 3}, wd{2, 2, 2, 2};
  Floats x = random_floats(count(xd), 26), w = random_floats(count(wd), 27);
  KernelCase c("ConvTranspose");
  c.input("X", F32, xd, x);
  c.input("W", F32, wd, w);
  c.output("Y", F32, {1, 2, 6, 6});
  c.attr("strides", Dims{2, 2});
  REQUIRE(c.run());
  Conv2d p;
  p.strides = {2, 2};
  require_close(c.result_as<float>(0), naive_conv_transpose2d(x, xd, w, wd, {}, p, 6, 6));
}

// ---- Gemm and MatMul ---------------------------------------------------------------------------

TEST_CASE("Gemm: hand-computed product plus a row-vector C", "[kernels][dnnl]") {
  KernelCase c("Gemm");
  c.input("A", F32, {2, 3}, Floats{1, 2, 3, 4, 5, 6});
  c.input("B", F32, {3, 2}, Floats{1, 0, 0, 1, 1, 1}, true);
  c.input("C", F32, {2}, Floats{10, 20}, true);
  c.output("Y", F32, {2, 2});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{14, 25, 20, 31});
}

TEST_CASE("Gemm transA, transB, alpha, beta and every C broadcast", "[kernels][dnnl]") {
  const int64_t m = 3, k = 5, n = 4;
  struct Case {
    const char* name;
    bool ta, tb;
    float alpha, beta;
    Dims cd;  // empty: no C
    bool c_const, b_const;
  };
  const std::vector<Case> cases = {
      {"transA, constant C [N]", true, false, 1.f, 1.f, {n}, true, true},
      {"transB, alpha 2, beta 0.5, C [M, 1]", false, true, 2.f, 0.5f, {m, 1}, true, true},
      {"both transposed, scalar C", true, true, 0.5f, 3.f, {}, true, false},
      {"run-time C [M, N], beta -2", false, false, 1.5f, -2.f, {m, n}, false, false},
      {"run-time C [1, N], run-time B", false, true, 1.f, 0.25f, {1, n}, false, false},
      {"no C", false, false, -1.f, 1.f, {0}, false, true},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      Floats a = random_floats(static_cast<size_t>(m * k), 30), b = random_floats(static_cast<size_t>(k * n), 31);
      const bool has_c = t.cd != Dims{0};
      Floats cv = random_floats(has_c ? count(t.cd) : 0, 32);
      KernelCase c("Gemm");
      c.input("A", F32, t.ta ? Dims{k, m} : Dims{m, k}, a);
      c.input("B", F32, t.tb ? Dims{n, k} : Dims{k, n}, b, t.b_const);
      if (has_c) c.input("C", F32, t.cd, cv, t.c_const);
      c.output("Y", F32, {m, n});
      c.attr("transA", int64_t{t.ta});
      c.attr("transB", int64_t{t.tb});
      c.attr("alpha", t.alpha);
      c.attr("beta", t.beta);
      REQUIRE(c.run());
      Floats want(static_cast<size_t>(m * n));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t q = 0; q < k; ++q)
            acc += static_cast<double>(a[static_cast<size_t>(t.ta ? q * m + i : i * k + q)]) *
                   b[static_cast<size_t>(t.tb ? j * k + q : q * n + j)];
          double cval = 0;
          if (has_c) {
            Dims c2 = t.cd;
            while (c2.size() < 2) c2.insert(c2.begin(), 1);
            cval = cv[static_cast<size_t>((c2[0] == 1 ? 0 : i) * c2[1] + (c2[1] == 1 ? 0 : j))];
          }
          want[static_cast<size_t>(i * n + j)] = static_cast<float>(t.alpha * acc + t.beta * cval);
        }
      require_close(c.result_as<float>(0), want);
    }
  }
}

TEST_CASE("Gemm and MatMul with a few rows against a large constant B read it in place, to the product's numbers",
          "[kernels][dnnl]") {
  // B of 700 x 400 floats (1.1 MB): at most 4 rows of A run linalg/weights_gemv.h on the model's
  // own B (no reordered copy); 5 rows run oneDNN's kernel on its blocked copy.
  const int64_t k = 700, n = 400;
  const int64_t m = GENERATE(int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5});
  const bool tb = GENERATE(false, true);
  const int c_kind = GENERATE(0, 1, 2);  // none, C [N] constant, C [M, 1] at run time
  INFO(m << " rows, transB " << tb << ", C kind " << c_kind);
  Floats a = random_floats(static_cast<size_t>(m * k), 40), b = random_floats(static_cast<size_t>(k * n), 41);
  const Dims cd = c_kind == 1 ? Dims{n} : Dims{m, 1};
  Floats cv = random_floats(c_kind ? count(cd) : 0, 42);
  KernelCase c("Gemm");
  c.input("A", F32, {m, k}, a);
  c.input("B", F32, tb ? Dims{n, k} : Dims{k, n}, b, true);
  if (c_kind) c.input("C", F32, cd, cv, c_kind == 1);
  c.output("Y", F32, {m, n});
  c.attr("transB", int64_t{tb});
  c.attr("alpha", 0.5f);
  c.attr("beta", 2.f);
  REQUIRE(c.run());
  CHECK((c.kernel()->implementation() == "memplan weights-in-place gemv") == (m <= 4));
  Floats want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q)
        acc += static_cast<double>(a[static_cast<size_t>(i * k + q)]) * b[static_cast<size_t>(tb ? j * k + q : q * n + j)];
      const double cval = c_kind == 1 ? cv[static_cast<size_t>(j)] : c_kind == 2 ? cv[static_cast<size_t>(i)] : 0;
      want[static_cast<size_t>(i * n + j)] = static_cast<float>(0.5 * acc + 2.0 * cval);
    }
  require_close(c.result_as<float>(0), want);

  KernelCase mm("MatMul");
  mm.input("A", F32, {1, m, k}, a);
  mm.input("B", F32, {k, n}, tb ? Floats(b.size(), 0.25f) : b, true);
  mm.output("Y", F32, {1, m, n});
  REQUIRE(mm.run());
  CHECK((mm.kernel()->implementation() == "memplan weights-in-place gemv") == (m <= 4));
  if (!tb) {
    Floats plain(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += static_cast<double>(a[static_cast<size_t>(i * k + q)]) * b[static_cast<size_t>(q * n + j)];
        plain[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
      }
    require_close(mm.result_as<float>(0), plain);
  }
}

TEST_CASE("MatMul broadcasts batch dims and follows numpy for 1-D operands", "[kernels][dnnl]") {
  struct Case {
    const char* name;
    Dims ad, bd, yd;
    bool b_const;
  };
  const std::vector<Case> cases = {
      {"2-D, constant B", {3, 4}, {4, 5}, {3, 5}, true},
      {"batched both sides", {2, 3, 4}, {2, 4, 5}, {2, 3, 5}, false},
      {"A batch broadcast over B's", {2, 1, 3, 4}, {3, 4, 5}, {2, 3, 3, 5}, false},
      {"B 2-D broadcast over A's batch, constant", {2, 3, 3, 4}, {4, 5}, {2, 3, 3, 5}, true},
      {"a transformer's [seq, 1, d] by a 2-D B: A's batch folds into rows", {5, 1, 4}, {4, 6}, {5, 1, 6}, false},
      {"B with batch dims of 1 only, over A's batch", {3, 2, 4}, {1, 4, 5}, {3, 2, 5}, true},
      {"1-D A", {4}, {2, 4, 5}, {2, 5}, false},
      {"1-D B", {2, 3, 4}, {4}, {2, 3}, true},
      {"both 1-D: a scalar", {4}, {4}, {}, false},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      Floats a = random_floats(count(t.ad), 40), b = random_floats(count(t.bd), 41);
      KernelCase c("MatMul");
      c.input("A", F32, t.ad, a);
      c.input("B", F32, t.bd, b, t.b_const);
      c.output("Y", F32, t.yd);
      REQUIRE(c.run());
      Dims ad = t.ad, bd = t.bd, out;
      if (ad.size() == 1) ad.insert(ad.begin(), 1);
      if (bd.size() == 1) bd.push_back(1);
      while (ad.size() < bd.size()) ad.insert(ad.begin(), 1);
      while (bd.size() < ad.size()) bd.insert(bd.begin(), 1);
      require_close(c.result_as<float>(0), naive_matmul(a, ad, b, bd, out));
    }
  }
}

TEST_CASE("MatMul refuses float64 and batch dims that do not broadcast", "[kernels][dnnl]") {
  SECTION("float64") {
    KernelCase c("MatMul");
    c.input("A", DType::Float64, {2, 2}, Floats{1, 2, 3, 4});
    c.input("B", DType::Float64, {2, 2}, Floats{1, 2, 3, 4});
    c.output("Y", DType::Float64, {2, 2});
    require_error(c, ErrorKind::Unsupported, {"MatMul node 'MatMul_under_test'", "float64", "only float32"});
  }
  SECTION("batch 2 against 3") {
    KernelCase c("MatMul");
    c.input("A", F32, {2, 2, 2}, Floats(8, 1.f));
    c.input("B", F32, {3, 2, 2}, Floats(12, 1.f));
    c.output("Y", F32, {3, 2, 2});
    require_error(c, ErrorKind::InvalidInput, {"MatMul node 'MatMul_under_test'", "broadcast"});
  }
}

// ---- BatchNormalization ------------------------------------------------------------------------

TEST_CASE("BatchNormalization (inference) normalizes per channel", "[kernels][dnnl]") {
  const Dims xd{2, 3, 2, 2};
  Floats x = random_floats(count(xd), 50);
  const Floats scale{1.f, 2.f, -0.5f}, bias{0.f, 1.f, 2.f}, mean{0.1f, -0.2f, 0.3f}, var{1.f, 0.25f, 4.f};
  const float eps = 1e-3f;
  for (bool constant : {true, false}) {
    KernelCase c("BatchNormalization", 15);
    c.input("X", F32, xd, x);
    c.input("scale", F32, {3}, scale, constant);
    c.input("B", F32, {3}, bias, constant);
    c.input("mean", F32, {3}, mean, constant);
    c.input("var", F32, {3}, var, constant);
    c.output("Y", F32, xd);
    c.attr("epsilon", eps);
    REQUIRE(c.run());
    Floats want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t ch = (i / 4) % 3;
      want[i] = scale[ch] * (x[i] - mean[ch]) / std::sqrt(var[ch] + eps) + bias[ch];
    }
    INFO("constant parameters: " << constant);
    require_close(c.result_as<float>(0), want);
  }
}

TEST_CASE("BatchNormalization on [N, C] and in training", "[kernels][dnnl]") {
  SECTION("2-D input") {
    KernelCase c("BatchNormalization");
    c.input("X", F32, {2, 2}, Floats{1, 2, 3, 4});
    c.input("scale", F32, {2}, Floats{1, 1}, true);
    c.input("B", F32, {2}, Floats{0, 10}, true);
    c.input("mean", F32, {2}, Floats{1, 2}, true);
    c.input("var", F32, {2}, Floats{4, 1}, true);
    c.output("Y", F32, {2, 2});
    c.attr("epsilon", 0.f);
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), Floats{0, 10, 1, 12});
  }
  SECTION("training before opset 14 (statistics outputs) is unsupported") {
    // (training_mode = 1 from opset 14 on is the plain kernel of norm_kernels.cpp.)
    KernelCase c("BatchNormalization", 9);
    c.input("X", F32, {2, 2}, Floats{1, 2, 3, 4});
    for (const char* n : {"scale", "B", "mean", "var"}) c.input(n, F32, {2}, Floats{1, 1}, true);
    c.output("Y", F32, {2, 2});
    c.output("running_mean", F32, {2});
    require_error(c, ErrorKind::Unsupported, {"BatchNormalization node 'BatchNormalization_under_test'", "training-mode outputs"});
  }
}

// ---- Pooling -----------------------------------------------------------------------------------

TEST_CASE("MaxPool: hand-computed 2x2 stride 2", "[kernels][dnnl]") {
  KernelCase c("MaxPool");
  c.input("X", F32, {1, 1, 4, 4}, Floats{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  c.output("Y", F32, {1, 1, 2, 2});
  c.attr("kernel_shape", Dims{2, 2});
  c.attr("strides", Dims{2, 2});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{6, 8, 14, 16});
}

TEST_CASE("Pooling matches a naive reference: pads, ceil_mode, dilations, count_include_pad", "[kernels][dnnl]") {
  struct Case {
    const char* name;
    const char* op;
    Dims xd;
    Pool2d p;
    bool ceil_mode;
    Dims yd;
  };
  auto pool = [](Dims k, Dims s, Dims d, Dims pads, bool max, bool include, int64_t lp = 0) {
    Pool2d p;
    p.lp = lp;
    p.kernel = k;
    p.strides = s;
    p.dilations = d;
    p.pads = pads;
    p.max = max;
    p.include_pad = include;
    return p;
  };
  const std::vector<Case> cases = {
      {"max, pads", "MaxPool", {1, 2, 5, 5}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, false), false, {1, 2, 3, 3}},
      {"max, ceil_mode", "MaxPool", {1, 2, 6, 6}, pool({3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true, false), true, {1, 2, 3, 3}},
      {"max, dilations", "MaxPool", {1, 1, 7, 7}, pool({2, 3}, {1, 2}, {2, 2}, {0, 1, 1, 0}, true, false), false, {1, 1, 6, 2}},
      {"avg, exclude pad", "AveragePool", {2, 1, 5, 5}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, false), false, {2, 1, 3, 3}},
      {"avg, include pad", "AveragePool", {2, 1, 5, 5}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, true), false, {2, 1, 3, 3}},
      {"avg, ceil_mode, exclude pad", "AveragePool", {1, 2, 6, 6}, pool({3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false, false), true, {1, 2, 3, 3}},
      {"avg, ceil_mode, include pad", "AveragePool", {1, 2, 7, 7}, pool({3, 3}, {2, 2}, {1, 1}, {1, 0, 0, 1}, false, true), true, {1, 2, 4, 4}},
      // 16 channels: below AVX-512, pooled channel-blocked (and the include-pad rescaling after it)
      {"avg, ceil_mode, include pad, 16 channels", "AveragePool", {1, 16, 7, 7}, pool({3, 3}, {2, 2}, {1, 1}, {1, 0, 0, 1}, false, true), true, {1, 16, 4, 4}},
      {"max, pads, 16 channels", "MaxPool", {1, 16, 5, 5}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, false), false, {1, 16, 3, 3}},
      // memplan's window loop (ir/window_pool.h): dilated averages, every LpPool.
      {"avg, dilations, exclude pad", "AveragePool", {1, 3, 8, 8}, pool({3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, false, false), false, {1, 3, 8, 8}},
      {"avg, dilations, ceil_mode, include pad", "AveragePool", {1, 3, 8, 8}, pool({3, 3}, {2, 2}, {2, 2}, {2, 2, 2, 2}, false, true), true, {1, 3, 5, 5}},
      {"avg, dilations, windows wholly in the padding", "AveragePool", {1, 1, 3, 3}, pool({2, 2}, {1, 1}, {3, 3}, {4, 4, 0, 0}, false, true), false, {1, 1, 4, 4}},
      {"lp 2, ceil_mode", "LpPool", {1, 2, 6, 6}, pool({3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false, false, 2), true, {1, 2, 3, 3}},
      {"lp 3, dilations, pads", "LpPool", {1, 2, 6, 6}, pool({2, 2}, {1, 1}, {2, 2}, {1, 1, 1, 1}, false, false, 3), false, {1, 2, 6, 6}},
      {"lp 1, strides", "LpPool", {2, 1, 5, 7}, pool({2, 3}, {1, 2}, {1, 1}, {0, 1, 0, 1}, false, false, 1), false, {2, 1, 4, 4}},
  };
  for (const Case& t : cases) {
    SECTION(t.name) {
      Floats x = random_floats(count(t.xd), 60);
      KernelCase c(t.op);
      c.input("X", F32, t.xd, x);
      c.output("Y", F32, t.yd);
      c.attr("kernel_shape", t.p.kernel);
      c.attr("strides", t.p.strides);
      c.attr("pads", t.p.pads);
      if (t.p.dilations != Dims{1, 1} || t.p.max) c.attr("dilations", t.p.dilations);
      if (t.p.lp) c.attr("p", t.p.lp);
      else if (!t.p.max) c.attr("count_include_pad", int64_t{t.p.include_pad});
      c.attr("ceil_mode", int64_t{t.ceil_mode});
      REQUIRE(c.run());
      require_close(c.result_as<float>(0), naive_pool2d(x, t.xd, t.p, t.yd[2], t.yd[3]));
      const bool loop = t.p.lp || t.p.dilations != Dims{1, 1};
      CHECK((c.kernel()->implementation() == "memplan:window_pool") == loop);
    }
  }
}

TEST_CASE("memplan's window loop pools 1-D and 3-D inputs as the 2-D pool of the same lines", "[kernels][dnnl]") {
  // A dilated average and an LpPool of 1-D lines [1, 2, 11], as [1, 2, 1, 11] and [1, 2, 1, 1, 11].
  const Floats x = random_floats(22, 61);
  for (const char* op : {"AveragePool", "LpPool", "MaxPool"}) {
    INFO(op);
    std::vector<Floats> got;
    for (const Dims& xd : {Dims{1, 2, 11}, Dims{1, 2, 1, 11}, Dims{1, 2, 1, 1, 11}}) {
      const size_t lead = xd.size() - 3;  // the spatial axes of size 1 before the line
      auto window = [&](Dims last) {
        Dims v(lead, last.size() == 2 ? 0 : 1);
        if (last.size() == 2) {  // pads: begins, then ends
          Dims pads(lead, 0);
          pads.push_back(last[0]);
          pads.insert(pads.end(), lead, 0);
          pads.push_back(last[1]);
          return pads;
        }
        v.push_back(last[0]);
        return v;
      };
      KernelCase c(op);
      c.input("X", F32, xd, x);
      Dims yd = xd;
      yd.back() = 6;  // (11 + 1 + 2 - 5) / 2 + 1 with the ceiling
      c.output("Y", F32, yd);
      c.attr("kernel_shape", window({3}));
      c.attr("dilations", window({2}));
      c.attr("strides", window({2}));
      c.attr("pads", window({1, 2}));
      c.attr("ceil_mode", int64_t{1});
      if (std::string(op) == "LpPool") c.attr("p", int64_t{3});
      if (std::string(op) == "AveragePool") c.attr("count_include_pad", int64_t{1});
      REQUIRE(c.run());
      CHECK(c.kernel()->implementation() == "memplan:window_pool");
      got.push_back(c.result_as<float>(0));
    }
    CHECK(got[0] == got[1]);
    CHECK(got[0] == got[2]);
  }
}

// squeezenet's first MaxPool (64 channels, 3x3, stride 2, no padding) on a side x side input,
// run once; `want` is the naive pooling's values.
struct SqueezenetMaxPool {
  Dims xd, yd;
  Floats x, want;
  KernelCase c{"MaxPool"};
  SqueezenetMaxPool(int64_t side, uint32_t seed)
      : xd{1, 64, side, side}, yd{1, 64, (side - 3) / 2 + 1, (side - 3) / 2 + 1}, x(random_floats(count(xd), seed)) {
    Pool2d p;
    p.kernel = {3, 3};
    p.strides = {2, 2};
    p.dilations = {1, 1};
    p.pads = {0, 0, 0, 0};
    p.max = true;
    want = naive_pool2d(x, xd, p, yd[2], yd[3]);
    c.input("X", F32, xd, x);
    c.output("Y", F32, yd);
    c.attr("kernel_shape", p.kernel);
    c.attr("strides", p.strides);
  }
  // Whether the kernel stages both tensors (below AVX-512).
  bool staged() { return c.kernel()->scratchpad_bytes() >= (count(xd) + count(yd)) * sizeof(float); }
};

TEST_CASE("a plain pooling oneDNN has no jit kernel for runs channel-blocked, with the same values", "[kernels][dnnl][isa]") {
  // Below AVX-512 (ctest runs this again under DNNL_MAX_CPU_ISA=AVX2) oneDNN pools plain NCHW only
  // in C++, about 20 times slower.
  SqueezenetMaxPool t(15, 61);
  REQUIRE(t.c.run());
  require_close(t.c.result_as<float>(0), t.want);
  // What oneDNN offers for the plain tensors: staged copies exactly where that is not jit code.
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  auto plain = [](const Dims& d) { return dnnl::memory::desc(d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw); };
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, plain(t.xd),
                                   plain(t.yd), {2, 2}, {3, 3}, {0, 0}, {0, 0}, {0, 0});
  dnnl::primitive_attr user;
  user.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::pooling_v2_forward::primitive_desc pd(d, user, eng);
  const bool plain_is_jit = std::string(pd.impl_info_str()).rfind("jit", 0) == 0;
  INFO("oneDNN's plain pooling is jit code: " << plain_is_jit);
  if (plain_is_jit) CHECK(t.c.kernel()->scratchpad_bytes() == pd.scratchpad_desc().get_size());
  else CHECK(t.staged());
}

TEST_CASE("a staged pooling has chunks of its channels as leaner variants, with the same values", "[kernels][dnnl][isa]") {
  // Below AVX-512 (ctest runs this again under DNNL_MAX_CPU_ISA=AVX2) a plain MaxPool is pooled
  // channel-blocked through staged copies; each chunk of channels stages only its own.
  SqueezenetMaxPool t(39, 62);
  REQUIRE(t.c.run());
  require_close(t.c.result_as<float>(0), t.want);
  const bool staged = t.staged();
  uint64_t last = t.c.kernel()->scratchpad_bytes();
  int variants = 0;
  while (t.c.run_leaner()) {
    ++variants;
    CHECK(t.c.kernel()->scratchpad_bytes() < last);
    last = t.c.kernel()->scratchpad_bytes();
    require_close(t.c.result_as<float>(0), t.want);
  }
  INFO("staged " << staged);
  // Staged: 2, 4 and 8 chunks of the 8 channel blocks (down to 64 KB), then the plain kernel.
  CHECK(variants == (staged ? 4 : 0));
  CHECK(last == (staged ? 0 : t.c.kernel()->scratchpad_bytes()));
}

TEST_CASE("MaxPool auto_pad SAME_UPPER", "[kernels][dnnl]") {
  // in 5, stride 2, kernel 2: out 3, total pad 1 at the end.
  Floats x = random_floats(25, 61);
  KernelCase c("MaxPool");
  c.input("X", F32, {1, 1, 5, 5}, x);
  c.output("Y", F32, {1, 1, 3, 3});
  c.attr("kernel_shape", Dims{2, 2});
  c.attr("strides", Dims{2, 2});
  c.attr("auto_pad", std::string("SAME_UPPER"));
  REQUIRE(c.run());
  Pool2d p;
  p.kernel = {2, 2};
  p.strides = {2, 2};
  p.pads = {0, 0, 1, 1};
  require_close(c.result_as<float>(0), naive_pool2d(x, {1, 1, 5, 5}, p, 3, 3));
}

TEST_CASE("MaxPool with the Indices output runs the plain kernel", "[kernels][dnnl]") {  // more in kernels_index_test.cpp
  KernelCase c("MaxPool");
  c.input("X", F32, {1, 1, 4, 4}, Floats{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  c.output("Y", F32, {1, 1, 2, 2});
  c.output("Indices", DType::Int64, {1, 1, 2, 2});
  c.attr("kernel_shape", Dims{2, 2});
  c.attr("strides", Dims{2, 2});
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == Floats{5, 7, 13, 15});
  CHECK(c.result_as<int64_t>(1) == std::vector<int64_t>{5, 7, 13, 15});
}

TEST_CASE("GlobalMaxPool and GlobalAveragePool reduce every spatial position", "[kernels][dnnl]") {
  const Floats x{1, 5, -2, 4, 0, 0, 3, 9, 10, 20, 30, 40};  // [1, 3, 2, 2]
  SECTION("max") {
    KernelCase c("GlobalMaxPool");
    c.input("X", F32, {1, 3, 2, 2}, x);
    c.output("Y", F32, {1, 3, 1, 1});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{5, 9, 40});
  }
  SECTION("average, 3-D") {
    KernelCase c("GlobalAveragePool");
    c.input("X", F32, {1, 3, 2, 1, 2}, x);
    c.output("Y", F32, {1, 3, 1, 1, 1});
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), Floats{2, 3, 25});
  }
}

// ---- LRN ---------------------------------------------------------------------------------------

TEST_CASE("LRN matches the ONNX formula", "[kernels][dnnl]") {
  const Dims xd{2, 7, 3, 2};
  Floats x = random_floats(count(xd), 70);
  for (int64_t size : {1, 3, 5}) {
    const float alpha = 0.3f, beta = 0.6f, bias = 1.5f;
    KernelCase c("LRN");
    c.input("X", F32, xd, x);
    c.output("Y", F32, xd);
    c.attr("size", size);
    c.attr("alpha", alpha);
    c.attr("beta", beta);
    c.attr("bias", bias);
    REQUIRE(c.run());
    Floats want(x.size());
    const int64_t ch = xd[1], plane = xd[2] * xd[3];
    for (int64_t n = 0; n < xd[0]; ++n)
      for (int64_t k = 0; k < ch; ++k)
        for (int64_t s = 0; s < plane; ++s) {
          double sq = 0;
          for (int64_t j = std::max<int64_t>(0, k - (size - 1) / 2); j <= std::min(ch - 1, k + size / 2); ++j) {
            const float v = x[static_cast<size_t>((n * ch + j) * plane + s)];
            sq += static_cast<double>(v) * v;
          }
          const size_t i = static_cast<size_t>((n * ch + k) * plane + s);
          want[i] = static_cast<float>(x[i] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
    INFO("size " << size);
    require_close(c.result_as<float>(0), want);
  }
}

TEST_CASE("LRN with an even size is unsupported", "[kernels][dnnl]") {
  KernelCase c("LRN");
  c.input("X", F32, {1, 4, 1, 1}, Floats{1, 2, 3, 4});
  c.output("Y", F32, {1, 4, 1, 1});
  c.attr("size", int64_t{4});
  require_error(c, ErrorKind::Unsupported, {"LRN node 'LRN_under_test'", "even size"});
}

// ---- Softmax and LogSoftmax --------------------------------------------------------------------

namespace {

// Softmax over [outer, mid, inner] along mid.
Floats naive_softmax(const Floats& x, int64_t outer, int64_t mid, int64_t inner, bool log) {
  Floats y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t m) { return static_cast<size_t>((o * mid + m) * inner + i); };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t m = 0; m < mid; ++m) mx = std::max<double>(mx, x[at(m)]);
      for (int64_t m = 0; m < mid; ++m) sum += std::exp(x[at(m)] - mx);
      for (int64_t m = 0; m < mid; ++m)
        y[at(m)] = static_cast<float>(log ? x[at(m)] - mx - std::log(sum) : std::exp(x[at(m)] - mx) / sum);
    }
  return y;
}

}  // namespace

TEST_CASE("Softmax: opset 13 normalizes one axis, opset 11 the flattened tail", "[kernels][dnnl]") {
  const Dims xd{2, 3, 4};
  Floats x = random_floats(count(xd), 80);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    const bool log = std::string(op) == "LogSoftmax";
    SECTION(std::string(op) + " opset 13, axis 1") {
      KernelCase c(op, 13);
      c.input("X", F32, xd, x);
      c.output("Y", F32, xd);
      c.attr("axis", int64_t{1});
      REQUIRE(c.run());
      require_close(c.result_as<float>(0), naive_softmax(x, 2, 3, 4, log));
    }
    SECTION(std::string(op) + " opset 11, axis 1: rows of 12") {
      KernelCase c(op, 11);
      c.input("X", F32, xd, x);
      c.output("Y", F32, xd);
      c.attr("axis", int64_t{1});
      REQUIRE(c.run());
      require_close(c.result_as<float>(0), naive_softmax(x, 2, 12, 1, log));
    }
    SECTION(std::string(op) + " defaults: opset 13 axis -1, opset 11 axis 1") {
      KernelCase c13(op, 13), c11(op, 11);
      for (KernelCase* c : {&c13, &c11}) {
        c->input("X", F32, xd, x);
        c->output("Y", F32, xd);
        REQUIRE(c->run());
      }
      require_close(c13.result_as<float>(0), naive_softmax(x, 6, 4, 1, log));
      require_close(c11.result_as<float>(0), naive_softmax(x, 2, 12, 1, log));
    }
  }
}

TEST_CASE("Softmax: rows of up to 4 floats run in memplan's own loop, longer ones on oneDNN, with the same answers",
          "[kernels][dnnl]") {
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t width : {1, 2, 3, 4, 5}) {
      INFO(op << " over rows of " << width);
      const bool log = std::string(op) == "LogSoftmax";
      const Dims xd{3, 37, width};
      Floats x = random_floats(count(xd), 81, -8.f, 8.f);
      x[0] = 1000.f;  // no overflow: each row's largest value is subtracted first
      if (width > 1) x[1] = -1000.f;
      KernelCase c(op, 13);
      c.input("X", F32, xd, x);
      c.output("Y", F32, xd);
      REQUIRE(c.run());
      CHECK((c.kernel()->implementation().find("memplan") != std::string::npos) == (width <= 4));
      require_close(c.result_as<float>(0), naive_softmax(x, 3 * 37, width, 1, log));
    }
}

TEST_CASE("Softmax along an axis that is not the last runs memplan's strided loop, not oneDNN's reference kernel",
          "[kernels][dnnl]") {
  // [2, 21, 5, 31] along the 21 classes: 155 columns a slice, so blocks of 64 columns and a
  // shorter last one.
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    INFO(op);
    const Dims xd{2, 21, 5, 31};
    Floats x = random_floats(count(xd), 82, -20.f, 20.f);
    KernelCase c(op, 13);
    c.input("X", F32, xd, x);
    c.output("Y", F32, xd);
    c.attr("axis", int64_t{1});
    REQUIRE(c.run());
    CHECK(c.kernel()->implementation() == "memplan strided softmax");
    require_close(c.result_as<float>(0), naive_softmax(x, 2, 21, 5 * 31, std::string(op) == "LogSoftmax"));
  }
}

TEST_CASE("Softmax: hand-computed row and an out-of-range axis", "[kernels][dnnl]") {
  SECTION("equal inputs share the mass") {
    KernelCase c("Softmax", 13);
    c.input("X", F32, {1, 4}, Floats{3, 3, 3, 3});
    c.output("Y", F32, {1, 4});
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), Floats{0.25f, 0.25f, 0.25f, 0.25f});
  }
  SECTION("axis 3 of a rank-3 tensor") {
    KernelCase c("Softmax", 13);
    c.input("X", F32, {1, 2, 2}, Floats{1, 2, 3, 4});
    c.output("Y", F32, {1, 2, 2});
    c.attr("axis", int64_t{3});
    require_error(c, ErrorKind::InvalidInput, {"Softmax node 'Softmax_under_test'", "axis 3"});
  }
}

TEST_CASE("oneDNN kernels report their scratchpad and refuse dynamic shapes", "[kernels][dnnl]") {
  SECTION("scratchpad_bytes is what the primitive asks for") {
    KernelCase c("Conv");
    c.input("X", F32, {1, 16, 14, 14}, random_floats(16 * 14 * 14, 90));
    c.input("W", F32, {16, 16, 3, 3}, random_floats(16 * 16 * 9, 91), true);
    c.output("Y", F32, {1, 16, 12, 12});
    REQUIRE(c.run());
    // Whatever implementation oneDNN picked, the kernel ran with the planner-sized buffer.
    CHECK(c.kernel()->scratchpad_bytes() < (uint64_t{1} << 30));
  }
  SECTION("an input of unknown size") {
    KernelCase c("Softmax");
    memplan::Value* x = c.input("X", F32, {1, 4}, Floats{1, 2, 3, 4});
    x->type.dims[0].value = -1;
    x->type.dims[0].symbol = std::string(1, 'N');  // not = "N": GCC 12's -Wrestrict false positive at -O3
    c.output("Y", F32, {1, 4});
    require_error(c, ErrorKind::Unsupported, {"Softmax node 'Softmax_under_test'", "static shapes"});
  }
}
