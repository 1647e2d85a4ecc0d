// Elementwise ops on small float tensors (an LSTM cell's gates) run memplan's own loops, not oneDNN
// primitives, whose call costs more than the pass; larger tensors stay on oneDNN. Same numbers,
// NaN kept.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "memplan/memplan.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// x, h [1, width] -> i = Sigmoid(x) ; g = HardSigmoid(h) ; l = LeakyRelu(x) ; y = i * g + l.
std::shared_ptr<const CompiledModel> gate_model(int64_t width, const std::string& file) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, width});
  add_input(g, "h", elem::kFloat, {1, width});
  add_node(g, "Sigmoid", {"x"}, {"i"}, "sigmoid");
  add_node(g, "HardSigmoid", {"h"}, {"g"}, "hard_sigmoid");
  attr_float(add_node(g, "LeakyRelu", {"x"}, {"l"}, "leaky"), "alpha", 0.1f);
  add_node(g, "Mul", {"i", "g"}, {"p"}, "mul");
  add_node(g, "Add", {"p", "l"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1, width});
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return CompiledModel::compile(path, {});
}

std::string implementation_of(const CompiledModel& m, const std::string& node) {
  for (const NodeKernel& k : m.kernels())
    if (k.node.find("'" + node + "'") != std::string::npos) return k.implementation;
  FAIL("no node " << node);
  return {};
}

}  // namespace

TEST_CASE("small elementwise ops run memplan's loops with ONNX's numbers, NaN kept, and large ones oneDNN's",
          "[kernels][elementwise]") {
  SECTION("512 floats: memplan's loops") {
    const auto model = gate_model(512, "memplan_small_gates.onnx");
    for (const char* node : {"sigmoid", "hard_sigmoid", "leaky"}) CHECK(implementation_of(*model, node) == "memplan step loop");
    for (const char* node : {"mul", "add"}) CHECK(implementation_of(*model, node) == "memplan layout loop");

    std::vector<float> x = random_floats(512, 91, -6.f, 6.f), h = random_floats(512, 92, -6.f, 6.f);
    x[7] = std::numeric_limits<float>::quiet_NaN();
    x[8] = -100.f;  // Sigmoid's e^100 past float's range
    Session s(model, SessionOptions{true});
    s.set_input("x", kFloat32, std::vector<int64_t>{1, 512}, x.data(), x.size() * 4);
    s.set_input("h", kFloat32, std::vector<int64_t>{1, 512}, h.data(), h.size() * 4);
    s.run();
    const float* y = static_cast<const float*>(s.output("y").data);
    for (size_t k = 0; k < x.size(); ++k) {
      const double i = 1.0 / (1.0 + std::exp(-static_cast<double>(x[k])));
      const double g = std::clamp(0.2 * h[k] + 0.5, 0.0, 1.0);
      const double l = x[k] < 0 ? 0.1 * x[k] : x[k];
      INFO("element " << k << ", x " << x[k]);
      if (std::isnan(x[k])) {
        CHECK(std::isnan(y[k]));
      } else {
        CHECK(y[k] == Approx(i * g + l).margin(1e-6).epsilon(1e-5));
      }
    }
  }
  SECTION("8192 floats: oneDNN's primitives") {
    const auto model = gate_model(8192, "memplan_large_gates.onnx");
    CHECK(implementation_of(*model, "sigmoid").find("memplan") == std::string::npos);
    CHECK(implementation_of(*model, "mul").find("memplan") == std::string::npos);
  }
}

// The step's clip (and oneDNN's) would give the min below it: such a Clip keeps its own loop.
TEST_CASE("a small Clip whose min is above its max gives its max everywhere, as ONNX defines it, NaN kept",
          "[kernels][elementwise]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 64});
  add_initializer(g, tensor_f32("lo", {}, {2.f}));
  add_initializer(g, tensor_f32("hi", {}, {1.f}));
  add_node(g, "Clip", {"x", "lo", "hi"}, {"y"}, "clip");
  add_output(g, "y", elem::kFloat, {1, 64});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_small_clip.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  const auto model = CompiledModel::compile(path, {});
  CHECK(implementation_of(*model, "clip") == "memplan");
  std::vector<float> x = random_floats(64, 93, -4.f, 4.f);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  Session s(model);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 64}, x.data(), x.size() * 4);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  for (size_t k = 0; k < x.size(); ++k) {
    INFO("x = " << x[k]);
    if (std::isnan(x[k])) CHECK(std::isnan(y[k]));
    else CHECK(y[k] == 1.f);
  }
}
