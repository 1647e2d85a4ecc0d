// The signal kernels DFT, STFT and MelWeightMatrix (lib/runtime/kernels/signal) against a direct
// O(n^2) DFT computed here in long double, and against hand-computed mel filters; and ONNX 1.12's
// STFT shape inference as memplan runs it.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/float16.h"
#include "memplan/error.h"
#include "onnx/importer.h"
#include "shapes/shape_inference.h"
#include "support/kernel_harness.h"
#include "support/model_builder.h"

namespace {

using namespace memplan::test::kernel_names;
using Cplx = std::complex<long double>;

// DFT results are compared at ONNX's backend tolerance, and tighter: memplan computes in double.
const RequireClose require_close{abs_rel(1e-5, 1e-5)};

// X[j] = sum_k x[k] exp(-+2 pi i jk / n) over the first min(n, x.size()) values of x, then
// scaled by 1/n for the inverse.
std::vector<Cplx> direct_dft(const std::vector<Cplx>& x, size_t n, bool inverse) {
  std::vector<Cplx> out(n);
  const long double sign = inverse ? 1 : -1;
  const long double pi = 3.141592653589793238462643383279502884L;
  for (size_t j = 0; j < n; ++j) {
    Cplx sum = 0;
    for (size_t k = 0; k < n && k < x.size(); ++k)
      sum +=
          x[k] * std::polar(1.0L, sign * 2 * pi * static_cast<long double>((j * k) % n) / static_cast<long double>(n));
    out[j] = inverse ? sum / static_cast<long double>(n) : sum;
  }
  return out;
}

// Interleaved [re, im] floats of the first `bins` values.
Floats interleaved(const std::vector<Cplx>& x, size_t bins) {
  Floats out;
  for (size_t j = 0; j < bins; ++j) {
    out.push_back(static_cast<float>(x[j].real()));
    out.push_back(static_cast<float>(x[j].imag()));
  }
  return out;
}

// The line of a [lines, n, 1 or 2] signal as complex values.
std::vector<Cplx> line_of(const Floats& x, size_t line, size_t n, size_t comps) {
  std::vector<Cplx> out(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t at = (line * n + k) * comps;
    out[k] = Cplx(x[at], comps == 2 ? x[at + 1] : 0.0f);
  }
  return out;
}

// What a DFT along axis 1 of a [lines, len, comps] signal should give: per line, `bins` of the
// n-point transform.
Floats expected_dft(const Floats& x, size_t lines, size_t len, size_t comps, size_t n, size_t bins, bool inverse) {
  Floats out;
  for (size_t l = 0; l < lines; ++l) {
    const Floats one = interleaved(direct_dft(line_of(x, l, len, comps), n, inverse), bins);
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

struct DftCase {
  int64_t lines = 1, len = 8, comps = 1;
  int64_t inverse = 0, onesided = 0;
  int64_t dft_length = -1;      // -1: no dft_length input
  bool length_constant = true;  // dft_length as a weight, or read at run time
};

Floats run_dft(const DftCase& d, const Floats& x) {
  KernelCase c("DFT", 17);
  c.input<float>("x", F32, {d.lines, d.len, d.comps}, x);
  const int64_t n = d.dft_length < 0 ? d.len : d.dft_length;
  if (d.dft_length >= 0) c.input<int64_t>("dft_length", INT64, {}, I64{d.dft_length}, d.length_constant);
  c.attr("axis", int64_t{1});
  c.attr("inverse", d.inverse);
  c.attr("onesided", d.onesided);
  const int64_t bins = d.onesided ? n / 2 + 1 : n;
  if (d.length_constant) c.output("y", F32, {d.lines, bins, 2});
  else dynamic_output(c, "y", F32, {d.lines, -1, 2}, static_cast<uint64_t>(d.lines * bins * 2 * 4));
  REQUIRE(c.run());
  CHECK(dims_of(c.result(0)) == Dims{d.lines, bins, 2});
  return c.result_as<float>(0);
}

void check_dft(const DftCase& d, uint32_t seed) {
  const Floats x = random_floats(static_cast<size_t>(d.lines * d.len * d.comps), seed);
  const int64_t n = d.dft_length < 0 ? d.len : d.dft_length;
  const int64_t bins = d.onesided ? n / 2 + 1 : n;
  INFO("len " << d.len << " n " << n << " comps " << d.comps << " inverse " << d.inverse << " onesided " << d.onesided);
  require_close(run_dft(d, x), expected_dft(x, static_cast<size_t>(d.lines), static_cast<size_t>(d.len),
                                            static_cast<size_t>(d.comps), static_cast<size_t>(n),
                                            static_cast<size_t>(bins), d.inverse != 0));
}

}  // namespace

// ---- DFT ----------------------------------------------------------------------------------------

TEST_CASE("DFT of a real and of a complex signal matches a direct DFT", "[kernels][signal]") {
  check_dft({.lines = 3, .len = 16, .comps = 1}, 1);
  check_dft({.lines = 2, .len = 32, .comps = 2}, 2);
  check_dft({.lines = 1, .len = 1, .comps = 2}, 3);
  check_dft({.lines = 2, .len = 2, .comps = 1}, 4);
}

TEST_CASE("DFT of a length that is not a power of two matches a direct DFT", "[kernels][signal]") {
  for (int64_t len : {3, 5, 7, 10, 12, 100, 127})
    for (int64_t comps : {1, 2})
      check_dft({.lines = 2, .len = len, .comps = comps}, static_cast<uint32_t>(len * comps));
  check_dft({.lines = 1, .len = 12, .comps = 2, .inverse = 1}, 5);
}

TEST_CASE("DFT: the inverse of a DFT gives the signal back", "[kernels][signal]") {
  for (int64_t len : {16, 12, 1}) {
    const Floats x = random_floats(static_cast<size_t>(2 * len * 2), 7);
    const Floats spectrum = run_dft({.lines = 2, .len = len, .comps = 2}, x);
    const Floats back = run_dft({.lines = 2, .len = len, .comps = 2, .inverse = 1}, spectrum);
    require_close(back, x, absolute(1e-5));
  }
}

TEST_CASE("DFT: onesided keeps the floor(n / 2) + 1 unique bins of a real signal", "[kernels][signal]") {
  check_dft({.lines = 2, .len = 16, .comps = 1, .onesided = 1}, 8);  // 9 bins
  check_dft({.lines = 2, .len = 9, .comps = 1, .onesided = 1}, 9);   // 5 bins
  // The bins kept are those of the full transform.
  const Floats x = random_floats(10, 10);
  const Floats full = run_dft({.lines = 1, .len = 10, .comps = 1}, x);
  const Floats half = run_dft({.lines = 1, .len = 10, .comps = 1, .onesided = 1}, x);
  require_close(half, Floats(full.begin(), full.begin() + 12));
}

TEST_CASE("DFT: dft_length zero-pads a shorter signal and truncates a longer one", "[kernels][signal]") {
  for (bool constant : {true, false}) {
    INFO("dft_length " << (constant ? "constant" : "read at run time"));
    check_dft({.lines = 2, .len = 5, .comps = 1, .dft_length = 8, .length_constant = constant}, 11);    // padded
    check_dft({.lines = 2, .len = 12, .comps = 2, .dft_length = 7, .length_constant = constant}, 12);   // truncated
    check_dft({.lines = 1, .len = 6, .comps = 1, .onesided = 1, .dft_length = 11, .length_constant = constant}, 13);
  }
  // Zero-padding [1, 1] to 4: X[j] = 1 + exp(-i pi j / 2) = 2, 1 - i, 0, 1 + i.
  const Floats padded = run_dft({.lines = 1, .len = 2, .comps = 1, .dft_length = 4}, Floats{1, 1});
  require_close(padded, {2, 0, 1, -1, 0, 0, 1, 1}, absolute(1e-6));
}

TEST_CASE("DFT along an inner axis of a 4-D signal", "[kernels][signal]") {
  // [batch 2, 3, 5, 2], axis 2: each of the 2 x 3 lines of 5 complex values, elements 2 apart.
  const Floats x = random_floats(2 * 3 * 5 * 2, 14);
  KernelCase c("DFT", 17);
  c.input<float>("x", F32, {2, 3, 5, 2}, x);
  c.attr("axis", int64_t{-2});
  c.output("y", F32, {2, 3, 5, 2});
  REQUIRE(c.run());
  Floats want = expected_dft(x, 6, 5, 2, 5, 5, false);  // axis 2 is the last signal axis: lines are contiguous
  require_close(c.result_as<float>(0), want);

  // Axis 1 of [1, 4, 3, 1]: the lines are strided by 3.
  const Floats r = random_floats(12, 15);
  KernelCase d("DFT", 17);
  d.input<float>("x", F32, {1, 4, 3, 1}, r);
  d.attr("axis", int64_t{1});
  d.output("y", F32, {1, 4, 3, 2});
  REQUIRE(d.run());
  const Floats got = d.result_as<float>(0);
  for (size_t col = 0; col < 3; ++col) {
    std::vector<Cplx> line;
    for (size_t k = 0; k < 4; ++k) line.emplace_back(r[k * 3 + col], 0.0f);
    const std::vector<Cplx> want_line = direct_dft(line, 4, false);
    for (size_t j = 0; j < 4; ++j) {
      CHECK(got[(j * 3 + col) * 2] == Approx(static_cast<double>(want_line[j].real())).margin(1e-5));
      CHECK(got[(j * 3 + col) * 2 + 1] == Approx(static_cast<double>(want_line[j].imag())).margin(1e-5));
    }
  }
}

TEST_CASE("DFT in float64", "[kernels][signal]") {
  KernelCase c("DFT", 17);
  c.input<double>("x", F64, {1, 3, 1}, Doubles{1, 2, 3});
  c.output("y", F64, {1, 3, 2});
  REQUIRE(c.run());
  // 6, -1.5 + i sqrt(3)/2, -1.5 - i sqrt(3)/2.
  const std::vector<double> got = c.result_as<double>(0);
  const double h = std::sqrt(3.0) / 2;
  require_close(got, {6, 0, -1.5, h, -1.5, -h}, absolute(1e-12));
}

TEST_CASE("DFT in float16: computed in double, stored rounded", "[kernels][signal]") {
  KernelCase c("DFT", 17);
  c.input<float>("x", DType::Float16, {1, 4, 1}, Floats{1, 2, 3, 4});
  c.output("y", DType::Float16, {1, 4, 2});
  REQUIRE(c.run());
  Floats got;
  for (uint16_t h : c.result_as<uint16_t>(0)) got.push_back(memplan::half_to_float(h));
  require_close(got, {10, 0, -2, 2, -2, 0, -2, -2}, absolute(0));  // exact in float16
}

TEST_CASE("DFT refuses what it cannot transform, naming the node", "[kernels][signal]") {
  SECTION("inverse and onesided") {
    KernelCase c("DFT", 17);
    c.input<float>("x", F32, {1, 4, 1}, Floats(4, 1));
    c.attr("inverse", int64_t{1});
    c.attr("onesided", int64_t{1});
    c.output("y", F32, {1, 3, 2});
    require_error(c, ErrorKind::InvalidInput, {"DFT node 'DFT_under_test'", "inverse and onesided"});
  }
  SECTION("onesided on a complex signal") {
    KernelCase c("DFT", 17);
    c.input<float>("x", F32, {1, 4, 2}, Floats(8, 1));
    c.attr("onesided", int64_t{1});
    c.output("y", F32, {1, 3, 2});
    require_error(c, ErrorKind::InvalidInput, {"DFT node", "onesided output is not possible for a complex input"});
  }
  SECTION("the axis of the real and imaginary parts") {
    KernelCase c("DFT", 17);
    c.input<float>("x", F32, {1, 4, 2}, Floats(8, 1));
    c.attr("axis", int64_t{-1});
    c.output("y", F32, {1, 4, 2});
    require_error(c, ErrorKind::InvalidInput, {"DFT node", "axis -1 is the input's last dimension"});
  }
  SECTION("a last dimension other than 1 or 2") {
    KernelCase c("DFT", 17);
    c.input<float>("x", F32, {1, 4, 3}, Floats(12, 1));
    c.output("y", F32, {1, 4, 2});
    require_error(c, ErrorKind::InvalidInput, {"DFT node", "last dimension is 3"});
  }
  SECTION("a dft_length of 0") {
    KernelCase c("DFT", 17);
    c.input<float>("x", F32, {1, 4, 1}, Floats(4, 1));
    c.input<int64_t>("dft_length", INT64, {}, I64{0}, false);
    dynamic_output(c, "y", F32, {1, -1, 2}, 64);
    require_error(c, ErrorKind::InvalidInput, {"DFT node", "dft_length 0 must be at least 1"});
  }
  SECTION("a run-time dft_length longer than the output's buffer allows") {
    KernelCase c("DFT", 17);
    c.input<float>("x", F32, {1, 4, 1}, Floats(4, 1));
    c.input<int64_t>("dft_length", INT64, {}, I64{9}, false);
    dynamic_output(c, "y", F32, {1, -1, 2}, 8 * 2 * 4);  // room for 8 bins
    require_error(c, ErrorKind::InvalidInput, {"DFT node"});
  }
}

// ---- STFT ---------------------------------------------------------------------------------------

namespace {

// The STFT of a [1, len, 1] signal: frames of n samples every `step`, each times the window.
Floats expected_stft(const Floats& x, int64_t n, int64_t step, int64_t frames, int64_t bins, const Floats& window) {
  Floats out;
  for (int64_t f = 0; f < frames; ++f) {
    std::vector<Cplx> frame;
    for (int64_t k = 0; k < n; ++k)
      frame.emplace_back(static_cast<long double>(x[static_cast<size_t>(f * step + k)]) *
                             (window.empty() ? 1.0L : window[static_cast<size_t>(k)]),
                         0.0L);
    const Floats one = interleaved(direct_dft(frame, static_cast<size_t>(n), false), static_cast<size_t>(bins));
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

}  // namespace

TEST_CASE("STFT gives 1 + (length - frame_length) / frame_step frames", "[kernels][signal]") {
  // 20 samples, frames of 6 every 3: frames start at 0, 3, 6, 9, 12 (the one at 15 would end past
  // the signal): 1 + 14 / 3 = 5 frames of 6 / 2 + 1 = 4 bins.
  const Floats x = random_floats(20, 20);
  for (bool constant : {true, false}) {
    INFO("frame_step and frame_length " << (constant ? "constant" : "read at run time"));
    KernelCase c("STFT", 17);
    c.input<float>("signal", F32, {1, 20, 1}, x);
    c.input<int64_t>("frame_step", INT64, {}, I64{3}, constant);
    c.omitted_input();
    c.input<int64_t>("frame_length", INT64, {}, I64{6}, constant);
    if (constant) c.output("y", F32, {1, 5, 4, 2});
    else dynamic_output(c, "y", F32, {1, -1, -1, 2}, 1 * 20 * 20 * 2 * 4);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{1, 5, 4, 2});
    require_close(c.result_as<float>(0), expected_stft(x, 6, 3, 5, 4, {}));
  }
}

TEST_CASE("STFT multiplies each frame by the window, onesided 0 keeps every bin", "[kernels][signal]") {
  const Floats x = random_floats(2 * 16 * 1, 21);
  const Floats window = random_floats(5, 22, 0.f, 1.f);  // not a power of two
  KernelCase c("STFT", 17);
  c.input<float>("signal", F32, {2, 16, 1}, x);
  c.input<int64_t>("frame_step", INT64, {}, I64{4}, false);
  c.input<float>("window", F32, {5}, window);
  c.attr("onesided", int64_t{0});
  c.output("y", F32, {2, 3, 5, 2});  // 1 + 11 / 4 = 3 frames
  REQUIRE(c.run());
  Floats want = expected_stft(Floats(x.begin(), x.begin() + 16), 5, 4, 3, 5, window);
  const Floats second = expected_stft(Floats(x.begin() + 16, x.end()), 5, 4, 3, 5, window);
  want.insert(want.end(), second.begin(), second.end());
  require_close(c.result_as<float>(0), want);
}

TEST_CASE("STFT refuses a window whose length is not frame_length, naming the node", "[kernels][signal]") {
  for (bool constant : {true, false}) {
    INFO("frame_length " << (constant ? "constant" : "read at run time"));
    KernelCase c("STFT", 17);
    c.input<float>("signal", F32, {1, 32, 1}, Floats(32, 1));
    c.input<int64_t>("frame_step", INT64, {}, I64{8}, false);
    c.input<float>("window", F32, {16}, Floats(16, 1));
    c.input<int64_t>("frame_length", INT64, {}, I64{12}, constant);
    dynamic_output(c, "y", F32, {1, -1, -1, 2}, 4096);
    require_error(c, ErrorKind::InvalidInput,
                  {"STFT node 'STFT_under_test'", "the window has 16 values but frame_length is 12"});
  }
}

TEST_CASE("STFT refuses frames longer than the signal and a frame_step below 1", "[kernels][signal]") {
  SECTION("a frame longer than the signal") {
    KernelCase c("STFT", 17);
    c.input<float>("signal", F32, {1, 8, 1}, Floats(8, 1));
    c.input<int64_t>("frame_step", INT64, {}, I64{1}, false);
    c.omitted_input();
    c.input<int64_t>("frame_length", INT64, {}, I64{9}, false);
    dynamic_output(c, "y", F32, {1, -1, -1, 2}, 4096);
    require_error(c, ErrorKind::InvalidInput, {"STFT node", "a frame of 9 samples is longer than the signal's 8"});
  }
  SECTION("frame_step 0") {
    KernelCase c("STFT", 17);
    c.input<float>("signal", F32, {1, 8, 1}, Floats(8, 1));
    c.input<int64_t>("frame_step", INT64, {}, I64{0}, false);
    c.input<float>("window", F32, {4}, Floats(4, 1));
    dynamic_output(c, "y", F32, {1, -1, 3, 2}, 4096);
    require_error(c, ErrorKind::InvalidInput, {"STFT node", "frame_step 0 must be at least 1"});
  }
  SECTION("neither a window nor a frame_length") {
    KernelCase c("STFT", 17);
    c.input<float>("signal", F32, {1, 8, 1}, Floats(8, 1));
    c.input<int64_t>("frame_step", INT64, {}, I64{1}, false);
    dynamic_output(c, "y", F32, {1, -1, -1, 2}, 4096);
    require_error(c, ErrorKind::InvalidInput, {"STFT node", "needs a window or a frame_length"});
  }
}

namespace {

// The type memplan's inference gives an STFT of a [1, length, 1] signal, with a constant frame_step
// and a window of `frame` values; onesided -1 leaves the attribute out.
memplan::TensorType stft_type(int64_t length, int64_t step, int64_t frame, int onesided) {
  using namespace memplan::test;
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "signal", elem::kFloat, {1, length, 1});
  add_input(g, "window", elem::kFloat, {frame});
  add_initializer(g, tensor_i64("step", {}, {step}));
  auto* n = add_node(g, "STFT", {"signal", "step", "window"}, {"y"}, "stft");
  if (onesided >= 0) attr_int(n, "onesided", onesided);
  add_output_unranked(g, "y", elem::kFloat);
  memplan::Model m = b.import("stft.onnx");
  memplan::infer_shapes(m, {});
  const memplan::Value* y = m.main->find_local("y");
  REQUIRE(y);
  return y->type;
}

Dims static_dims(const memplan::TensorType& t) {
  INFO(t.shape_string());
  REQUIRE(t.is_static());
  return t.static_dims();
}

}  // namespace

TEST_CASE("STFT's output is typed with the onesided bins (ONNX 1.12 reads onesided as 0)", "[shapes][signal]") {
  CHECK(static_dims(stft_type(128, 8, 16, -1)) == Dims{1, 15, 9, 2});  // the schema's default: onesided
  CHECK(static_dims(stft_type(128, 8, 16, 1)) == Dims{1, 15, 9, 2});
  CHECK(static_dims(stft_type(128, 8, 16, 0)) == Dims{1, 15, 16, 2});
}

TEST_CASE("STFT's output is typed with whole frames only (ONNX 1.12 rounds the count up)", "[shapes][signal]") {
  // 100 samples, frames of 12 every 5: 1 + 88 / 5 = 18 frames (ONNX 1.12 infers 1 + ceil(17.6) = 19).
  CHECK(static_dims(stft_type(100, 5, 12, 1)) == Dims{1, 18, 7, 2});
  CHECK(static_dims(stft_type(100, 4, 12, 1)) == Dims{1, 23, 7, 2});  // 88 / 4 = 22 exactly
}

// ---- MelWeightMatrix ----------------------------------------------------------------------------

namespace {

Floats mel(DType ints, int64_t mel_bins, int64_t dft_length, int64_t rate, float lower, float upper) {
  KernelCase c("MelWeightMatrix", 17);
  c.input<int64_t>("num_mel_bins", ints, {}, I64{mel_bins});
  c.input<int64_t>("dft_length", ints, {}, I64{dft_length});
  c.input<int64_t>("sample_rate", ints, {}, I64{rate});
  c.input<float>("lower_edge_hertz", F32, {}, Floats{lower});
  c.input<float>("upper_edge_hertz", F32, {}, Floats{upper});
  dynamic_output(c, "y", F32, {-1, -1}, 4096);
  REQUIRE(c.run());
  CHECK(dims_of(c.result(0)) == Dims{dft_length / 2 + 1, mel_bins});
  return c.result_as<float>(0);
}

}  // namespace

TEST_CASE("MelWeightMatrix matches hand-computed triangles", "[kernels][signal]") {
  // 3 bands over 0 .. 8000 Hz, dft_length 40 at 16 kHz. mel(8000) = 2595 log10(1 + 8000 / 700)
  // = 2840.0; the step is 2840.0 / (3 + 2) = 568.0 mel, so the edges are 0, 458.7, 1218.1,
  // 2475.1 and 4555.8 Hz, on the bins floor(41 f / 16000) = 0, 1, 3, 6, 11. Band b rises from
  // edge b to edge b + 1 and falls to edge b + 2: band 0 is 0, 1, 1/2 on bins 0-2; band 1 is 0,
  // 1/2, 1, 2/3, 1/3 on bins 1-5; band 2 is 0, 1/3, 2/3, 1, 4/5, 3/5, 2/5, 1/5 on bins 3-10.
  const Floats got = mel(INT64, 3, 40, 16000, 0, 8000);
  Floats want(21 * 3, 0.f);
  auto at = [&](int bin, int band) -> float& { return want[static_cast<size_t>(bin * 3 + band)]; };
  at(1, 0) = 1, at(2, 0) = 0.5f;
  at(2, 1) = 0.5f, at(3, 1) = 1, at(4, 1) = 2.f / 3, at(5, 1) = 1.f / 3;
  at(4, 2) = 1.f / 3, at(5, 2) = 2.f / 3, at(6, 2) = 1, at(7, 2) = 0.8f, at(8, 2) = 0.6f, at(9, 2) = 0.4f,
        at(10, 2) = 0.2f;
  require_close(got, want, absolute(1e-6));
}

TEST_CASE("MelWeightMatrix: bands narrower than a bin peak at 1 on their center bin", "[kernels][signal]") {
  // ONNX's test_melweightmatrix: 8 bands over 0 .. 4096 Hz, dft_length 16 at 8192 Hz; the edges
  // fall on bins 0 0 0 1 1 2 3 4 5 6, so bands 0-1 and 2-3 share a center bin.
  const Floats got = mel(INT32, 8, 16, 8192, 0, 4096);
  Floats want(9 * 8, 0.f);
  const int peaks[8] = {0, 0, 1, 1, 2, 3, 4, 5};  // each band's center bin
  for (int band = 0; band < 8; ++band) want[static_cast<size_t>(peaks[band] * 8 + band)] = 1;
  require_close(got, want, absolute(0));
}

TEST_CASE("MelWeightMatrix refuses band edges past the last bin, naming the node", "[kernels][signal]") {
  // The reference's edges stop at mel(upper) (M + 1) / (M + 2): 4 bands up to 16 kHz at 8 kHz end
  // at 9142.7 Hz, on bin floor(17 * 9142.7 / 8000) = 19 of a dft_length of 16's 9 bins (numpy
  // raises an IndexError there).
  KernelCase c("MelWeightMatrix", 17);
  c.input<int64_t>("num_mel_bins", INT64, {}, I64{4});
  c.input<int64_t>("dft_length", INT64, {}, I64{16});
  c.input<int64_t>("sample_rate", INT64, {}, I64{8000});
  c.input<float>("lower_edge_hertz", F32, {}, Floats{0});
  c.input<float>("upper_edge_hertz", F32, {}, Floats{16000});
  dynamic_output(c, "y", F32, {-1, -1}, 4096);
  require_error(c, ErrorKind::InvalidInput,
                {"MelWeightMatrix node 'MelWeightMatrix_under_test'", "spectrum bin 19", "outside the 9 bins"});
}
