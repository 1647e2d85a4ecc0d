// Resize (cubic, run-time scales/sizes/roi, tf_crop_and_resize, n-linear) and the recurrent ops
// (RNN, run-time weights, layout 1, LSTM peepholes) on tiny hand-built cases. Expected Resize values
// come from ONNX's reference implementation (onnx/backend/test/case/node/resize.py); the
// recurrent ones from the ONNX equations written out below.
#include <omp.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <cstdint>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "support/kernel_harness.h"

namespace {

using namespace memplan::test::kernel_names;
using Ints = std::vector<int64_t>;

const RequireClose require_close{scaled(1e-5f)};

// Resize-13 of x with scales (or sizes when scales is empty); `roi` only when non-empty.
// `runtime` makes scales, sizes and roi run-time inputs. The output buffer holds `capacity`.
struct ResizeCase {
  std::string mode = "nearest", coord = "half_pixel";
  Ints x_dims;
  Floats x;
  Floats scales;
  Ints sizes;
  Floats roi;
  bool runtime = false;
  Ints capacity;
};

KernelCase& build(KernelCase& k, const ResizeCase& c) {
  k.input("x", F32, c.x_dims, c.x);
  if (c.roi.empty()) k.omitted_input();
  else k.input("roi", F32, {static_cast<int64_t>(c.roi.size())}, c.roi, !c.runtime);
  if (c.scales.empty()) k.omitted_input();
  else k.input("scales", F32, {static_cast<int64_t>(c.scales.size())}, c.scales, !c.runtime);
  if (!c.sizes.empty()) k.input("sizes", DType::Int64, {static_cast<int64_t>(c.sizes.size())}, c.sizes, !c.runtime);
  k.attr("mode", c.mode);
  k.attr("coordinate_transformation_mode", c.coord);
  k.output("y", F32, c.capacity);
  return k;
}

}  // namespace

TEST_CASE("Resize cubic matches ONNX's reference", "[kernels][resize-rnn]") {
  SECTION("half_pixel, A = -0.75") {
    KernelCase k("Resize", 13);
    build(k, {"cubic", "half_pixel", {1, 4}, {1, 2, 4, 8}, {1, 2}, {}, {}, false, {1, 8}});
    REQUIRE(k.run());
    require_close(k.result_as<float>(0),
                  {0.89453125f, 1.15625f, 1.5625f, 2.41796875f, 3.16015625f, 5.1171875f, 7.1640625f, 8.421875f});
  }
  SECTION("A = -0.5 with exclude_outside renormalizes the weights inside the input") {
    KernelCase k("Resize", 13);
    build(k, {"cubic", "half_pixel", {1, 4}, {1, 2, 4, 8}, {1, 2}, {}, {}, false, {1, 8}});
    k.attr("cubic_coeff_a", -0.5f);
    k.attr("exclude_outside", int64_t{1});
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), {0.91176471f, 1.14598540f, 1.64122137f, 2.3828125f, 3.3359375f, 5.02290076f,
                                          7.28467153f, 8.35294118f});
  }
  SECTION("align_corners downsampling lands on the corners") {
    KernelCase k("Resize", 13);
    build(k, {"cubic", "align_corners", {1, 4}, {1, 2, 4, 8}, {1, 0.5f}, {}, {}, false, {1, 2}});
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), {1, 8});
  }
}

TEST_CASE("Resize with antialias widens the filter when shrinking, moves taps past an edge onto it, and normalizes",
          "[kernels][resize-rnn]") {
  // 8 values shrunk by 2, linear, half_pixel: each output reads the triangle stretched to 4 inputs
  // either side of its centre (1, 3, 5, 7), weights 0.25, 0.75, 0.75, 0.25 over 2. Output 0's tap
  // at -1 moves onto input 0, output 3's at 8 onto input 7.
  const Floats x{0, 1, 2, 3, 4, 5, 6, 7};
  SECTION("linear") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "half_pixel", {1, 1, 1, 8}, x, {1, 1, 1, 0.5f}, {}, {}, false, {1, 1, 1, 4}});
    k.attr("antialias", int64_t{1});
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), {0.625, 2.5, 4.5, 6.375});
  }
  SECTION("linear, exclude_outside: the taps past an edge are dropped and the rest renormalized") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "half_pixel", {1, 1, 1, 8}, x, {1, 1, 1, 0.5f}, {}, {}, false, {1, 1, 1, 4}});
    k.attr("antialias", int64_t{1});
    k.attr("exclude_outside", int64_t{1});
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), {1.25 / 1.75, 2.5, 4.5, (5 * 0.25 + 6 * 0.75 + 7 * 0.75) / 1.75});
  }
  SECTION("without antialias the same resize reads two inputs an output") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "half_pixel", {1, 1, 1, 8}, x, {1, 1, 1, 0.5f}, {}, {}, false, {1, 1, 1, 4}});
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), {0.5, 2.5, 4.5, 6.5});
  }
  SECTION("a shrink wider than the filter's taps is refused at run time, naming the node") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "half_pixel", {1, 1, 1, 200}, Floats(200, 1.f), {1, 1, 1, 0.01f}, {}, {}, false, {1, 1, 1, 2}});
    k.attr("antialias", int64_t{1});
    CHECK_THROWS_WITH(k.run(), Catch::Contains("Resize") && Catch::Contains("taps an output"));
  }
}

TEST_CASE("Resize with scales and sizes computed at run time sets the output shape", "[kernels][resize-rnn]") {
  SECTION("sizes, bilinear") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "half_pixel", {1, 1, 2, 2}, {1, 2, 3, 4}, {}, {1, 1, 3, 3}, {}, true, {1, 1, 4, 4}});
    REQUIRE(k.run());
    CHECK(dims_of(k.result(0)) == Ints{1, 1, 3, 3});
    require_close(k.result_as<float>(0), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
  }
  SECTION("scales, nearest; the output length is floor(in * scale)") {
    KernelCase k("Resize", 13);
    build(k, {"nearest", "asymmetric", {1, 3}, {1, 2, 3}, {1, 1.5f}, {}, {}, true, {1, 6}});
    REQUIRE(k.run());
    CHECK(dims_of(k.result(0)) == Ints{1, 4});
    CHECK(k.result_as<float>(0) == Floats{1, 2, 2, 3});
  }
  SECTION("Upsample-9 with run-time scales") {
    KernelCase k("Upsample", 9);
    k.input("x", F32, {1, 2}, Floats{1, 2});
    k.input("scales", F32, {2}, Floats{1, 3});
    k.output("y", F32, {1, 8});
    REQUIRE(k.run());
    CHECK(dims_of(k.result(0)) == Ints{1, 6});
    CHECK(k.result_as<float>(0) == Floats{1, 1, 1, 2, 2, 2});
  }
  SECTION("an output past the buffer is an error naming the node") {
    KernelCase k("Resize", 13);
    build(k, {"nearest", "asymmetric", {1, 2}, {1, 2}, {}, {1, 5}, {}, true, {1, 4}});
    require_error(k, ErrorKind::InvalidInput, {"Resize node", "needs 20 bytes", "holds 16"});
  }
  SECTION("negative sizes are an error") {
    KernelCase k("Resize", 13);
    build(k, {"nearest", "asymmetric", {1, 2}, {1, 2}, {}, {1, -3}, {}, true, {1, 4}});
    require_error(k, ErrorKind::InvalidInput, {"Resize node", "sizes must not be negative"});
  }
  SECTION("scales of the wrong count are an error") {
    KernelCase k("Resize", 13);
    build(k, {"nearest", "asymmetric", {1, 2}, {1, 2}, {2}, {}, {}, true, {1, 4}});
    require_error(k, ErrorKind::InvalidInput, {"Resize node", "1 scales for an input of rank 2"});
  }
  SECTION("a zero scale is an error") {
    KernelCase k("Resize", 13);
    build(k, {"nearest", "asymmetric", {1, 2}, {1, 2}, {1, 0}, {}, {}, true, {1, 4}});
    require_error(k, ErrorKind::InvalidInput, {"Resize node", "scales must be positive"});
  }
}

TEST_CASE("Resize tf_crop_and_resize reads the roi and extrapolates outside it", "[kernels][resize-rnn]") {
  const bool runtime = GENERATE(false, true);
  INFO((runtime ? "run-time" : "constant") << " roi and sizes");
  SECTION("linear") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "tf_crop_and_resize", {4}, {1, 2, 3, 4}, {}, {3}, {0.5f, 1.5f}, runtime, {3}});
    k.attr("extrapolation_value", -1.f);
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), {2.5f, 4, -1});
  }
  SECTION("nearest") {
    KernelCase k("Resize", 13);
    build(k, {"nearest", "tf_crop_and_resize", {4}, {1, 2, 3, 4}, {}, {3}, {0, 0.5f}, runtime, {3}});
    REQUIRE(k.run());
    CHECK(k.result_as<float>(0) == Floats{1, 2, 2});
  }
  SECTION("a roi of the wrong length is an error") {
    KernelCase k("Resize", 13);
    build(k, {"linear", "tf_crop_and_resize", {4}, {1, 2, 3, 4}, {}, {3}, {0, 0.5f, 1}, runtime, {3}});
    require_error(k, ErrorKind::InvalidInput, {"Resize node", "roi of 2 values, got 3"});
  }
}

TEST_CASE("Resize linear interpolates every resized dimension", "[kernels][resize-rnn]") {
  KernelCase k("Resize", 13);
  Floats x(8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  build(k, {"linear", "align_corners", {2, 2, 2}, x, {1.5f, 1, 1}, {}, {}, false, {3, 2, 2}});
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), {0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7});
}

namespace {

// ONNX's linear Resize of a [planes, ih, iw] stack to [planes, oh, ow] in double, in the order the
// kernel sums (rows' taps outside, columns' inside): the kernel's fast paths must give these bits.
Floats linear_reference(const Floats& x, int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                        const std::string& coord) {
  auto taps = [&](int64_t o, int64_t in, int64_t out) {
    const double scale = static_cast<double>(out) / static_cast<double>(in);
    double s = (static_cast<double>(o) + 0.5) / scale - 0.5;
    if (coord == "align_corners") s = static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1);
    const double base = std::floor(s), frac = s - base;
    const int64_t i0 = std::clamp<int64_t>(static_cast<int64_t>(base), 0, in - 1);
    const int64_t i1 = std::clamp<int64_t>(static_cast<int64_t>(base) + 1, 0, in - 1);
    return std::tuple{i0, i1, 1 - frac, frac};
  };
  Floats y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t c = 0; c < ow; ++c) {
        const auto [r0, r1, wr0, wr1] = taps(r, ih, oh);
        const auto [c0, c1, wc0, wc1] = taps(c, iw, ow);
        auto at = [&](int64_t i, int64_t j) { return static_cast<double>(x[static_cast<size_t>((p * ih + i) * iw + j)]); };
        double sum = 0;
        sum += wr0 * wc0 * at(r0, c0);
        sum += wr0 * wc1 * at(r0, c1);
        sum += wr1 * wc0 * at(r1, c0);
        sum += wr1 * wc1 * at(r1, c1);
        y.push_back(static_cast<float>(sum));
      }
  return y;
}

}  // namespace

TEST_CASE("Resize linear by 2 (a decoder's upsampling) gives ONNX's formula bit for bit", "[kernels][resize-rnn]") {
  const std::string coord = GENERATE(std::string("half_pixel"), std::string("align_corners"));
  const int64_t planes = 3, ih = 5, iw = 9;
  Floats x(static_cast<size_t>(planes * ih * iw));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.7f) * 10.f + 0.1f * static_cast<float>(i);
  INFO(coord);  // half_pixel takes the doubling path; align_corners's taps do not repeat, the general one
  KernelCase k("Resize", 13);
  build(k, {"linear", coord, {1, planes, ih, iw}, x, {1, 1, 2, 2}, {}, {}, false, {1, planes, 2 * ih, 2 * iw}});
  REQUIRE(k.run());
  CHECK(k.result_as<float>(0) == linear_reference(x, planes, ih, iw, 2 * ih, 2 * iw, coord));
}

namespace {

float sigmoid(float v) { return 1.f / (1.f + std::exp(-v)); }

// [a, b, c] -> [b, a, c] (layout 0 <-> layout 1 for X, states), repeated `outer` times.
Floats swap01(const Floats& v, int64_t outer, int64_t a, int64_t b, int64_t c) {
  Floats r(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        for (int64_t k = 0; k < c; ++k)
          r[static_cast<size_t>(((o * b + j) * a + i) * c + k)] = v[static_cast<size_t>(((o * a + i) * b + j) * c + k)];
  return r;
}

}  // namespace

TEST_CASE("RNN follows the ONNX equations with weights computed at run time", "[kernels][resize-rnn]") {
  // T = 2, N = 1, I = 1, H = 1: h_t = f(W x_t + R h_{t-1} + Wb + Rb).
  const bool constant = GENERATE(false, true);
  const std::string act = GENERATE(std::string("Tanh"), std::string("Relu"), std::string("Sigmoid"));
  INFO((constant ? "constant" : "run-time") << " weights, " << act);
  auto f = [&](float v) { return act == "Tanh" ? std::tanh(v) : act == "Relu" ? std::max(v, 0.f) : sigmoid(v); };
  KernelCase k("RNN", 14);
  k.input("X", F32, {2, 1, 1}, Floats{1, -2});
  k.input("W", F32, {1, 1, 1}, Floats{0.5f}, constant);
  k.input("R", F32, {1, 1, 1}, Floats{0.25f}, constant);
  k.input("B", F32, {1, 2}, Floats{0.1f, 0.2f}, constant);
  k.omitted_input();
  k.input("initial_h", F32, {1, 1, 1}, Floats{0.4f});
  k.attr("hidden_size", int64_t{1});
  k.node().attributes.push_back(memplan::Attribute{});
  k.node().attributes.back().name = "activations";
  k.node().attributes.back().kind = memplan::Attribute::Kind::Strings;
  k.node().attributes.back().strings = {act};
  k.output("Y", F32, {2, 1, 1, 1});
  k.output("Y_h", F32, {1, 1, 1});
  REQUIRE(k.run());
  const float h1 = f(0.5f * 1 + 0.25f * 0.4f + 0.3f);
  const float h2 = f(0.5f * -2 + 0.25f * h1 + 0.3f);
  require_close(k.result_as<float>(0), {h1, h2});
  require_close(k.result_as<float>(1), {h2});
}

TEST_CASE("LSTM peepholes follow the ONNX equations", "[kernels][resize-rnn]") {
  // One step, one unit. ONNX orders W/R rows i o f c and P i o f.
  const bool constant = GENERATE(false, true);
  KernelCase k("LSTM", 14);
  k.input("X", F32, {1, 1, 1}, Floats{1});
  k.input("W", F32, {1, 4, 1}, Floats{0.1f, 0.2f, 0.3f, 0.4f}, constant);
  k.input("R", F32, {1, 4, 1}, Floats{0.5f, 0.6f, 0.7f, 0.8f}, constant);
  k.omitted_input();  // B
  k.omitted_input();  // sequence_lens
  k.input("initial_h", F32, {1, 1, 1}, Floats{0.5f});
  k.input("initial_c", F32, {1, 1, 1}, Floats{-0.4f});
  k.input("P", F32, {1, 3}, Floats{0.9f, -0.6f, 0.3f}, constant);
  k.attr("hidden_size", int64_t{1});
  k.output("Y", F32, {1, 1, 1, 1});
  k.output("Y_h", F32, {1, 1, 1});
  k.output("Y_c", F32, {1, 1, 1});
  REQUIRE(k.run());
  const float h0 = 0.5f, c0 = -0.4f;
  const float i = sigmoid(0.1f + 0.5f * h0 + 0.9f * c0);
  const float fg = sigmoid(0.3f + 0.7f * h0 + 0.3f * c0);
  const float g = std::tanh(0.4f + 0.8f * h0);
  const float c = fg * c0 + i * g;
  const float o = sigmoid(0.2f + 0.6f * h0 - 0.6f * c);
  const float h = o * std::tanh(c);
  require_close(k.result_as<float>(0), {h});
  require_close(k.result_as<float>(1), {h});
  require_close(k.result_as<float>(2), {c});
}

TEST_CASE("layout 1 (batch first) gives layout 0's results transposed", "[kernels][resize-rnn]") {
  const std::string op = GENERATE(std::string("RNN"), std::string("GRU"), std::string("LSTM"));
  const std::string direction = GENERATE(std::string("forward"), std::string("bidirectional"));
  INFO(op << ", " << direction);
  const int64_t T = 3, N = 2, I = 3, H = 4, D = direction == "bidirectional" ? 2 : 1;
  const int64_t G = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const bool lstm = op == "LSTM";
  const auto values = [](int64_t n, uint32_t seed) { return random_floats(static_cast<size_t>(n), seed, -0.6f, 0.6f); };
  const Floats X = values(T * N * I, 1), W = values(D * G * H * I, 2), R = values(D * G * H * H, 3),
               B = values(D * 2 * G * H, 4), h0 = values(D * N * H, 5), c0 = values(D * N * H, 6);
  // Layout 0 with constant weights, layout 1 with run-time weights: both paths agree.
  auto make = [&](KernelCase& k, bool batch_first) {
    k.input("X", F32, batch_first ? Ints{N, T, I} : Ints{T, N, I}, batch_first ? swap01(X, 1, T, N, I) : X);
    k.input("W", F32, {D, G * H, I}, W, !batch_first);
    k.input("R", F32, {D, G * H, H}, R, !batch_first);
    k.input("B", F32, {D, 2 * G * H}, B, !batch_first);
    k.omitted_input();
    const Ints state = batch_first ? Ints{N, D, H} : Ints{D, N, H};
    k.input("initial_h", F32, state, batch_first ? swap01(h0, 1, D, N, H) : h0);
    if (lstm) k.input("initial_c", F32, state, batch_first ? swap01(c0, 1, D, N, H) : c0);
    k.attr("hidden_size", H);
    k.attr("direction", direction);
    k.attr("layout", int64_t{batch_first ? 1 : 0});
    k.output("Y", F32, batch_first ? Ints{N, T, D, H} : Ints{T, D, N, H});
    k.output("Y_h", F32, state);
    if (lstm) k.output("Y_c", F32, state);
  };
  KernelCase seq(op, 14), batch(op, 14);
  make(seq, false);
  make(batch, true);
  REQUIRE(seq.run());
  REQUIRE(batch.run());
  // [T, D, N, H] -> [N, T, D, H]: swap T and (D, N) then D and N... done as two swaps.
  const Floats y_tn = swap01(seq.result_as<float>(0), 1, T, D * N, H);  // [D*N, T, H] as [D, N, T, H]
  Floats want_y(y_tn.size());
  for (int64_t d = 0; d < D; ++d)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
          want_y[static_cast<size_t>(((n * T + t) * D + d) * H + h)] = y_tn[static_cast<size_t>(((d * N + n) * T + t) * H + h)];
  require_close(batch.result_as<float>(0), want_y);
  require_close(batch.result_as<float>(1), swap01(seq.result_as<float>(1), 1, D, N, H));
  if (lstm) require_close(batch.result_as<float>(2), swap01(seq.result_as<float>(2), 1, D, N, H));
}

TEST_CASE("recurrent ops refuse what oneDNN cannot run", "[kernels][resize-rnn]") {
  auto rnn = [](KernelCase& k) {
    k.input("X", F32, {2, 1, 1}, Floats{1, 2});
    k.input("W", F32, {1, 1, 1}, Floats{0.5f});
    k.input("R", F32, {1, 1, 1}, Floats{0.5f});
    k.attr("hidden_size", int64_t{1});
    k.output("Y", F32, {2, 1, 1, 1});
  };
  auto activations = [](KernelCase& k, std::vector<std::string> names) {
    k.node().attributes.push_back(memplan::Attribute{});
    k.node().attributes.back().name = "activations";
    k.node().attributes.back().kind = memplan::Attribute::Kind::Strings;
    k.node().attributes.back().strings = std::move(names);
  };
  SECTION("an activation oneDNN lacks") {
    KernelCase k("RNN", 14);
    rnn(k);
    activations(k, {"LeakyRelu"});
    require_error(k, ErrorKind::Unsupported, {"RNN node", "activation 'LeakyRelu'"});
  }
  SECTION("different activations per direction") {
    KernelCase k("RNN", 14);
    rnn(k);
    k.attr("direction", std::string("bidirectional"));
    activations(k, {"Tanh", "Relu"});
    require_error(k, ErrorKind::Unsupported, {"RNN node", "different activations"});
  }
  SECTION("a run-time sequence shorter than X") {
    KernelCase k("RNN", 14);
    k.input("X", F32, {2, 1, 1}, Floats{1, 2});
    k.input("W", F32, {1, 1, 1}, Floats{0.5f});
    k.input("R", F32, {1, 1, 1}, Floats{0.5f});
    k.omitted_input();
    k.input("sequence_lens", DType::Int32, {1}, std::vector<int32_t>{1});
    k.output("Y", F32, {2, 1, 1, 1});
    require_error(k, ErrorKind::Unsupported, {"RNN node", "sequence_lens[0] is 1"});
  }
  SECTION("weights of the wrong shape") {
    KernelCase k("RNN", 14);
    k.input("X", F32, {2, 1, 1}, Floats{1, 2});
    k.input("W", F32, {1, 1, 1}, Floats{0.5f});
    k.input("R", F32, {1, 1, 2}, Floats{0.5f, 0.5f});
    k.output("Y", F32, {2, 1, 1, 1});
    require_error(k, ErrorKind::InvalidInput, {"RNN node", "input 'R' has shape [1, 1, 2], expected [1, 1, 1]"});
  }
}

// ---- Quantization ----

TEST_CASE("QuantizeLinear rounds half to even and saturates", "[kernels][resize-rnn]") {
  SECTION("uint8, per tensor") {
    KernelCase k("QuantizeLinear", 13);
    k.input("x", F32, {7}, Floats{0, 2, 3, 5, -3, 1000, -1000});
    k.input("scale", F32, {}, Floats{2});
    k.input("zp", DType::Uint8, {}, std::vector<int>{128});
    k.output("y", DType::Uint8, {7});
    REQUIRE(k.run());
    CHECK(k.result_as<uint8_t>(0) == std::vector<uint8_t>{128, 129, 130, 130, 126, 255, 0});
  }
  SECTION("int8 per channel along axis 1") {
    KernelCase k("QuantizeLinear", 13);
    k.input("x", F32, {1, 2, 2}, Floats{1, -300, 30, 40});
    k.input("scale", F32, {2}, Floats{1, 10}, true);
    k.input("zp", DType::Int8, {2}, std::vector<int>{0, -5}, true);
    k.output("y", DType::Int8, {1, 2, 2});
    REQUIRE(k.run());
    CHECK(k.result_as<int8_t>(0) == std::vector<int8_t>{1, -128, -2, -1});
  }
  SECTION("a scale per channel of the wrong count is an error") {
    KernelCase k("QuantizeLinear", 13);
    k.input("x", F32, {1, 2, 2}, Floats{1, 2, 3, 4});
    k.input("scale", F32, {3}, Floats{1, 1, 1});
    k.output("y", DType::Uint8, {1, 2, 2});
    require_error(k, ErrorKind::InvalidInput, {"QuantizeLinear node", "the scale has 3 values"});
  }
}

TEST_CASE("DequantizeLinear and DynamicQuantizeLinear", "[kernels][resize-rnn]") {
  SECTION("uint8") {
    KernelCase k("DequantizeLinear", 13);
    k.input("x", DType::Uint8, {4}, std::vector<int>{0, 3, 128, 255});
    k.input("scale", F32, {}, Floats{2});
    k.input("zp", DType::Uint8, {}, std::vector<int>{128});
    k.output("y", F32, {4});
    REQUIRE(k.run());
    CHECK(k.result_as<float>(0) == Floats{-256, -250, 0, 254});
  }
  SECTION("int32 needs a zero point of 0") {
    KernelCase k("DequantizeLinear", 13);
    k.input("x", DType::Int32, {1}, std::vector<int>{7});
    k.input("scale", F32, {}, Floats{2});
    k.input("zp", DType::Int32, {}, std::vector<int>{1});
    k.output("y", F32, {1});
    require_error(k, ErrorKind::InvalidInput, {"DequantizeLinear node", "zero point of 0"});
  }
  SECTION("dynamic: the range [min(x, 0), max(x, 0)] spans uint8") {
    KernelCase k("DynamicQuantizeLinear", 11);
    k.input("x", F32, {6}, Floats{0, 2, -3, -2.5f, 1.34f, 0.5f});
    k.output("y", DType::Uint8, {6});
    k.output("y_scale", F32, {});
    k.output("y_zero_point", DType::Uint8, {});
    REQUIRE(k.run());
    CHECK(k.result_as<uint8_t>(0) == std::vector<uint8_t>{153, 255, 0, 26, 221, 179});
    require_close(k.result_as<float>(1), {5.f / 255});
    CHECK(k.result_as<uint8_t>(2) == std::vector<uint8_t>{153});
  }
  SECTION("dynamic: a large input quantized on two threads gives one thread's bytes and range") {
    Floats x(4 * 128 * 128);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.001f) * 3.f;
    x[50000] = 9.f;  // the largest value, in the second thread's half
    const float lo = std::min(0.f, *std::min_element(x.begin(), x.end()));
    std::vector<std::vector<uint8_t>> bytes;
    for (int threads : {1, 2}) {
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
      KernelCase k("DynamicQuantizeLinear", 11);
      k.input("x", F32, {4, 128, 128}, x);
      k.output("y", DType::Uint8, {4, 128, 128});
      k.output("y_scale", F32, {});
      k.output("y_zero_point", DType::Uint8, {});
      const bool ran = k.run();
      omp_set_num_threads(before);
      REQUIRE(ran);
      CHECK(k.result_as<float>(1) == std::vector<float>{(9.f - lo) / 255.f});
      bytes.push_back(k.result_as<uint8_t>(0));
      bytes.back().push_back(k.result_as<uint8_t>(2)[0]);
    }
    CHECK(bytes[0] == bytes[1]);
  }
}

TEST_CASE("MatMulInteger and QLinearMatMul", "[kernels][resize-rnn]") {
  SECTION("zero points per tensor for A and per column for B") {
    KernelCase k("MatMulInteger", 10);
    k.input("A", DType::Uint8, {2, 2}, std::vector<int>{1, 2, 3, 4});
    k.input("B", DType::Uint8, {2, 2}, std::vector<int>{5, 6, 7, 8});
    k.input("a_zp", DType::Uint8, {}, std::vector<int>{1});
    k.input("b_zp", DType::Uint8, {2}, std::vector<int>{0, 1});
    k.output("Y", DType::Int32, {2, 2});
    REQUIRE(k.run());
    CHECK(k.result_as<int32_t>(0) == std::vector<int32_t>{7, 7, 31, 31});
  }
  SECTION("requantized, batched over a broadcast B") {
    KernelCase k("QLinearMatMul", 10);
    k.input("a", DType::Uint8, {2, 1, 2}, std::vector<int>{10, 20, 100, 200});
    k.input("a_scale", F32, {}, Floats{0.5f});
    k.input("a_zp", DType::Uint8, {}, std::vector<int>{0});
    k.input("b", DType::Uint8, {2, 1}, std::vector<int>{2, 4});
    k.input("b_scale", F32, {}, Floats{1});
    k.input("b_zp", DType::Uint8, {}, std::vector<int>{0});
    k.input("y_scale", F32, {}, Floats{2});
    k.input("y_zp", DType::Int8, {}, std::vector<int>{1});
    k.output("y", DType::Int8, {2, 1, 1});
    REQUIRE(k.run());
    // 10*2 + 20*4 = 100 -> 100 * 0.5 / 2 + 1 = 26; 1000 -> 251 saturates at 127.
    CHECK(k.result_as<int8_t>(0) == std::vector<int8_t>{26, 127});
  }
  SECTION("a zero point of another type than its operand is an error") {
    KernelCase k("MatMulInteger", 10);
    k.input("A", DType::Uint8, {1, 1}, std::vector<int>{1});
    k.input("B", DType::Uint8, {1, 1}, std::vector<int>{1});
    k.input("a_zp", DType::Int8, {}, std::vector<int>{1});
    k.output("Y", DType::Int32, {1, 1});
    require_error(k, ErrorKind::InvalidInput, {"MatMulInteger node", "a_zero_point is int8, expected uint8"});
  }
}

TEST_CASE("ConvInteger and QLinearConv", "[kernels][resize-rnn]") {
  SECTION("ConvInteger subtracts the zero point; padding contributes nothing") {
    const bool padded = GENERATE(false, true);
    KernelCase k("ConvInteger", 10);
    k.input("x", DType::Uint8, {1, 1, 3, 3}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9});
    k.input("w", DType::Uint8, {1, 1, 2, 2}, std::vector<int>{1, 1, 1, 1}, true);
    k.input("x_zp", DType::Uint8, {}, std::vector<int>{1});
    if (padded) k.attr("pads", Ints{1, 1, 0, 0});
    k.output("y", DType::Int32, padded ? Ints{1, 1, 3, 3} : Ints{1, 1, 2, 2});
    REQUIRE(k.run());
    // x - 1 = 0..8; each output sums a 2x2 window.
    const std::vector<int32_t> want =
        padded ? std::vector<int32_t>{0, 1, 3, 3, 8, 12, 9, 20, 24} : std::vector<int32_t>{8, 12, 20, 24};
    CHECK(k.result_as<int32_t>(0) == want);
  }
  SECTION("QLinearConv adds the bias, scales per output channel and rounds half to even") {
    KernelCase k("QLinearConv", 10);
    k.input("x", DType::Uint8, {1, 1, 1, 2}, std::vector<int>{10, 20});
    k.input("x_scale", F32, {}, Floats{1});
    k.input("x_zp", DType::Uint8, {}, std::vector<int>{0});
    k.input("w", DType::Uint8, {2, 1, 1, 1}, std::vector<int>{3, 3}, true);
    k.input("w_scale", F32, {2}, Floats{0.5f, 1});
    k.input("w_zp", DType::Uint8, {2}, std::vector<int>{1, 3});
    k.input("y_scale", F32, {}, Floats{1});
    k.input("y_zp", DType::Uint8, {}, std::vector<int>{0});
    k.input("B", DType::Int32, {2}, std::vector<int>{5, 7});
    k.output("y", DType::Uint8, {1, 2, 1, 2});
    REQUIRE(k.run());
    // channel 0: (x * 2 + 5) * 0.5 = 12.5 -> 12, 22.5 -> 22; channel 1: w - zp = 0, so 7.
    CHECK(k.result_as<uint8_t>(0) == std::vector<uint8_t>{12, 22, 7, 7});
  }
  SECTION("w_zero_point of the wrong count is an error") {
    KernelCase k("ConvInteger", 10);
    k.input("x", DType::Uint8, {1, 1, 1, 1}, std::vector<int>{1});
    k.input("w", DType::Uint8, {1, 1, 1, 1}, std::vector<int>{1});
    k.omitted_input();
    k.input("w_zp", DType::Uint8, {2}, std::vector<int>{1, 1});
    k.output("y", DType::Int32, {1, 1, 1, 1});
    require_error(k, ErrorKind::InvalidInput, {"ConvInteger node", "w_zero_point has 2 values"});
  }
}

TEST_CASE("a float Resize of constant scales keeps its column taps with the kernel, not in the arena, and gives "
          "the bits of one that computes them each run", "[kernels][resize-rnn]") {
  // deeplabv3's last Resize kept a 16,128-byte table in the scratchpad, at the arena's peak.
  const std::string mode = GENERATE(std::string("linear"), std::string("cubic"), std::string("nearest"));
  const int64_t planes = 2, ih = 6, iw = 7;
  Floats x(static_cast<size_t>(planes * ih * iw));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i) * 0.3f) * 5.f + 0.01f * static_cast<float>(i);
  INFO(mode);
  const ResizeCase c{mode, "half_pixel", {1, planes, ih, iw}, x, {1, 1, 2.5f, 1.5f}, {}, {}, false, {1, planes, 15, 10}};
  KernelCase fixed("Resize", 13);
  build(fixed, c);
  REQUIRE(fixed.run());
  CHECK(fixed.kernel()->scratchpad_bytes() == 0);
  ResizeCase at_run_time = c;
  at_run_time.runtime = true;  // scales read each run: the taps are computed into the scratchpad
  KernelCase computed("Resize", 13);
  build(computed, at_run_time);
  REQUIRE(computed.run());
  CHECK(computed.kernel()->scratchpad_bytes() > 0);
  CHECK(fixed.result_as<float>(0) == computed.result_as<float>(0));
  // A second run reads the same table.
  REQUIRE(fixed.run());
  CHECK(fixed.result_as<float>(0) == computed.result_as<float>(0));
}
