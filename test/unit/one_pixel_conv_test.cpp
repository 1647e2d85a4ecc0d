// A convolution of one pixel (squeeze-and-excitation blocks, classifiers written as a Conv) runs on
// memplan's weights-in-place loop with its fused activation, never on oneDNN's GEMM, whose kernels
// alone are a megabyte of jit code.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr int64_t kN = 2, kC = 24, kSqueezed = 6, kHW = 5;

// x[N, C, 5, 5] -> GlobalAveragePool -> Conv 1x1 C->C/4 + bias -> Relu -> Conv 1x1 C/4->C + bias
// -> HardSigmoid -> Mul x -> y: PaddleOCR's and MobileNetV3's squeeze-and-excitation block.
ModelBuilder se_block(const std::vector<float>& w1, const std::vector<float>& b1, const std::vector<float>& w2,
                      const std::vector<float>& b2) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {kN, kC, kHW, kHW});
  add_initializer(g, tensor_f32("w1", {kSqueezed, kC, 1, 1}, w1));
  add_initializer(g, tensor_f32("b1", {kSqueezed}, b1));
  add_initializer(g, tensor_f32("w2", {kC, kSqueezed, 1, 1}, w2));
  add_initializer(g, tensor_f32("b2", {kC}, b2));
  add_node(g, "GlobalAveragePool", {"x"}, {"pooled"}, "pool");
  add_node(g, "Conv", {"pooled", "w1", "b1"}, {"squeezed"}, "squeeze");
  add_node(g, "Relu", {"squeezed"}, {"relu"}, "relu");
  add_node(g, "Conv", {"relu", "w2", "b2"}, {"excited"}, "excite");
  add_node(g, "HardSigmoid", {"excited"}, {"gate"}, "gate");
  add_node(g, "Mul", {"x", "gate"}, {"y"}, "scale");
  add_output(g, "y", elem::kFloat, {kN, kC, kHW, kHW});
  return mb;
}

}  // namespace

TEST_CASE("a one-pixel convolution with its activation runs on memplan's loop, not oneDNN's GEMM, with the plain numbers",
          "[kernels][dnnl]") {
  const std::vector<float> x = random_floats(kN * kC * kHW * kHW, 61), w1 = random_floats(kSqueezed * kC, 62),
                           b1 = random_floats(kSqueezed, 63), w2 = random_floats(kC * kSqueezed, 64),
                           b2 = random_floats(kC, 65);
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_one_pixel_conv.onnx").string();
  std::ofstream(path, std::ios::binary) << se_block(w1, b1, w2, b2).bytes();
  const auto model = CompiledModel::compile(path, {});
  for (const NodeKernel& k : model->kernels()) {
    INFO(k.node << ": " << k.implementation);
    CHECK(k.implementation.find("gemm:") == std::string::npos);
    if (k.node.find("Conv") == 0) CHECK(k.implementation == "memplan weights-in-place gemv");
  }

  std::vector<float> want(x.size());
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> pooled(kC, 0.0), squeezed(kSqueezed, 0.0);
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t p = 0; p < kHW * kHW; ++p) pooled[c] += x[((n * kC + c) * kHW * kHW) + p] / (kHW * kHW);
    for (int64_t o = 0; o < kSqueezed; ++o) {
      double s = b1[o];
      for (int64_t c = 0; c < kC; ++c) s += w1[o * kC + c] * pooled[c];
      squeezed[o] = std::max(s, 0.0);
    }
    for (int64_t c = 0; c < kC; ++c) {
      double s = b2[c];
      for (int64_t o = 0; o < kSqueezed; ++o) s += w2[c * kSqueezed + o] * squeezed[o];
      const double gate = std::clamp(0.2 * s + 0.5, 0.0, 1.0);
      for (int64_t p = 0; p < kHW * kHW; ++p) {
        const size_t i = static_cast<size_t>((n * kC + c) * kHW * kHW + p);
        want[i] = static_cast<float>(x[i] * gate);
      }
    }
  }
  Session s(model, SessionOptions{true});  // guard mode
  s.set_input("x", kFloat32, std::vector<int64_t>{kN, kC, kHW, kHW}, x.data(), x.size() * 4);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  for (size_t i = 0; i < want.size(); ++i) REQUIRE(y[i] == Approx(want[i]).margin(1e-5));
}
