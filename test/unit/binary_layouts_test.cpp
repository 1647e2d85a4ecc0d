// Binary ops on channel-blocked tensors: a scalar, a per-channel or a full-shape operand, and every
// Div, where oneDNN 2.6 offers only its reference kernel. They run on memplan's layout loop, which
// gives the plain layout's numbers, and no node is left on a oneDNN reference kernel.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "memplan/memplan.h"
#include "passes/assign_layouts.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// x[1,3,6,6] -> conv1 (16 channels) -> OP(c1, operand) -> conv2 (16) -> + c1 -> conv3 -> y, where the
// operand is a constant of `operand_dims` (scalar, [1,1,1,1], per channel) or, with empty dims, a
// second convolution of x (full shape). `operand_first` puts it as the op's first input. c1 has
// two readers, so the op stays a node of its own (not a post-op of conv1).
std::string binary_model(const std::string& op, const std::vector<int64_t>& operand_dims, bool full, bool operand_first,
                         const std::string& file) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 3, 6, 6});
  add_initializer(g, tensor_f32("w1", {16, 3, 3, 3}, random_floats(16 * 27, 1)));
  attr_ints(add_node(g, "Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  if (full) {
    add_initializer(g, tensor_f32("wb", {16, 3, 3, 3}, random_floats(16 * 27, 2)));
    attr_ints(add_node(g, "Conv", {"x", "wb"}, {"b"}, "convb"), "pads", {1, 1, 1, 1});
  } else {
    size_t n = 1;
    for (int64_t d : operand_dims) n *= static_cast<size_t>(d);
    std::vector<float> v = random_floats(n, 3);
    for (float& f : v) f = f < 0 ? f - 0.5f : f + 0.5f;  // away from zero: Div by it stays tame
    add_initializer(g, tensor_f32("b", operand_dims, v));
  }
  if (operand_first)
    add_node(g, op, {"b", "c1"}, {"d"}, "binary");
  else
    add_node(g, op, {"c1", "b"}, {"d"}, "binary");
  add_initializer(g, tensor_f32("w2", {16, 16, 3, 3}, random_floats(16 * 144, 4)));
  attr_ints(add_node(g, "Conv", {"d", "w2"}, {"e"}, "conv2"), "pads", {1, 1, 1, 1});
  add_node(g, "Add", {"e", "c1"}, {"s"}, "residual");
  add_initializer(g, tensor_f32("w3", {16, 16, 1, 1}, random_floats(16 * 16, 6)));
  add_node(g, "Conv", {"s", "w3"}, {"y"}, "conv3");
  add_output(g, "y", elem::kFloat, {1, 16, 6, 6});
  // A file per test case: ctest runs the test cases of this file at the same time.
  const std::string path = (std::filesystem::temp_directory_path() / ("memplan_binary_" + file + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return path;
}

struct Result {
  std::vector<float> y;
  std::string report;
};

Result run(const std::string& path, const char* block) {
  setenv("MEMPLAN_CHANNEL_BLOCK", block, 1);
  auto model = CompiledModel::compile(path, {});
  unsetenv("MEMPLAN_CHANNEL_BLOCK");
  const std::vector<float> x = random_floats(3 * 36, 5);
  Session s(model, SessionOptions{true});  // guard mode: an op written in place clobbers nothing
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 3, 6, 6}, x.data(), x.size() * 4);
  s.run();
  const TensorRef y = s.output("y");
  const float* p = static_cast<const float*>(y.data);
  return {std::vector<float>(p, p + y.bytes / 4), model->report_json()};
}

}  // namespace

TEST_CASE("a binary op with a scalar, per-channel or full operand on a channel-blocked tensor gives the plain "
          "layout's numbers on no oneDNN reference kernel",
          "[layouts][binary]") {
  struct Operand {
    const char* name;
    std::vector<int64_t> dims;
    bool full;
  };
  const std::vector<Operand> operands = {
      {"scalar []", {}, false}, {"scalar [1,1,1,1]", {1, 1, 1, 1}, false}, {"scalar [1]", {1}, false},
      {"per channel [16,1,1]", {16, 1, 1}, false}, {"per channel [1,16,1,1]", {1, 16, 1, 1}, false},
      {"full shape", {}, true}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
    for (const Operand& operand : operands)
      for (const bool first : {false, true}) {
        // c1 as a divisor: its values near zero would turn rounding differences between the
        // layouts' convolutions into large ones. (c / x on blocked tensors is the same loop.)
        if (std::string(op) == "Div" && first) continue;
        INFO(op << " with a " << operand.name << " operand" << (first ? " as its first input" : ""));
        const std::string path = binary_model(op, operand.dims, operand.full, first, "layouts");
        const Result plain = run(path, "0"), b16 = run(path, "16"), b8 = run(path, "8");
        for (const Result* r : {&plain, &b16, &b8})
          CHECK(r->report.find("\"reference_kernels\": 0,") != std::string::npos);
        REQUIRE(plain.y.size() == 16 * 36);
        REQUIRE(b16.y.size() == plain.y.size());
        REQUIRE(b8.y.size() == plain.y.size());
        for (size_t i = 0; i < plain.y.size(); ++i) {
          CHECK(b16.y[i] == Approx(plain.y[i]).epsilon(1e-4).margin(1e-4));
          CHECK(b8.y[i] == Approx(plain.y[i]).epsilon(1e-4).margin(1e-4));
        }
      }
}

TEST_CASE("a PRelu between convolutions stays channel-blocked and gives the plain layout's numbers on no oneDNN "
          "reference kernel",
          "[layouts][binary]") {
  // MobileFaceNet and PaddleOCR write a PRelu after every convolution: as a plain-only node it held
  // every tensor around it plain, and the convolutions on oneDNN's GEMM.
  for (const auto& [name, dims, full] : std::vector<std::tuple<const char*, std::vector<int64_t>, bool>>{
           {"scalar [1]", {1}, false}, {"per channel [16,1,1]", {16, 1, 1}, false},
           {"per channel [1,16,1,1]", {1, 16, 1, 1}, false}, {"full shape", {}, true}}) {
    INFO("PRelu with a " << name << " slope");
    const std::string path = binary_model("PRelu", dims, full, false, "prelu");
    const Result plain = run(path, "0"), b16 = run(path, "16"), b8 = run(path, "8");
    for (const Result* r : {&plain, &b16, &b8}) CHECK(r->report.find("\"reference_kernels\": 0,") != std::string::npos);
    // Blocked as the CPU's kernels are, conv1 writes and conv2 reads the PRelu's tensors as they
    // are: no reorders.
    const std::string& native = (preferred_channel_block() == 8 ? b8 : b16).report;
    for (const char* conv : {"conv1", "conv2"}) {
      const size_t at = native.find(std::string("\"node\": \"Conv node '") + conv + "'");
      REQUIRE(at != std::string::npos);
      const std::string entry = native.substr(at, native.find('}', at) - at);
      INFO(entry);
      if (preferred_channel_block() > 0) CHECK(entry.find("reorder") == std::string::npos);
    }
    REQUIRE(b16.y.size() == plain.y.size());
    REQUIRE(b8.y.size() == plain.y.size());
    for (size_t i = 0; i < plain.y.size(); ++i) {
      CHECK(b16.y[i] == Approx(plain.y[i]).epsilon(1e-4).margin(1e-4));
      CHECK(b8.y[i] == Approx(plain.y[i]).epsilon(1e-4).margin(1e-4));
    }
  }
}

TEST_CASE("the report names what runs each node, and the blocked scalar op runs on memplan's layout loop",
          "[layouts][binary]") {
  const std::string path = binary_model("Div", {1, 1, 1, 1}, false, false, "report");
  const Result r = run(path, "16");
  CHECK(r.report.find("\"node\": \"Div node 'binary'\", \"graph\": \"graph 'hand_built'\", \"implementation\": \"memplan "
                       "layout loop\"") != std::string::npos);
  CHECK(r.report.find("\"node\": \"Conv node 'conv2'\"") != std::string::npos);
}
