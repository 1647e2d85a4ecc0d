// Constant computations fold wherever they are: in the main graph and in If branches nested at any
// depth whose condition is only known at run time. Silero VAD computes its Pad amounts this way
// (ConstantOfShape -> Concat -> Reshape -> Transpose -> Reshape -> Cast), and a TensorFlow export
// does the same in its main graph; memplan must fold ops its hand-written folder does not know
// (Transpose here) by running their kernels at compile time.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// Adds the pad-amount chain and a Pad of `x` by (1, 2) along its last axis, into `out`.
void add_computed_pad(onnx::GraphProto& g, const std::string& p, const std::string& x, const std::string& out) {
  auto* cos = add_node(g, "ConstantOfShape", {p + "two"}, {p + "zeros"}, p + "zeros");
  attr_tensor(cos, "value", tensor_i64("", {1}, {0}));
  add_constant(g, tensor_i64(p + "two", {1}, {2}));
  add_constant(g, tensor_i64(p + "ends", {2}, {1, 2}));
  add_constant(g, tensor_i64(p + "square", {2}, {2, 2}));
  add_constant(g, tensor_i64(p + "flat", {1}, {-1}));
  add_node(g, "Concat", {p + "zeros", p + "ends"}, {p + "cat"}, p + "cat");
  attr_int(g.mutable_node(g.node_size() - 1), "axis", 0);
  add_node(g, "Reshape", {p + "cat", p + "square"}, {p + "pairs"}, p + "pairs");
  auto* tr = add_node(g, "Transpose", {p + "pairs"}, {p + "by_axis"}, p + "by_axis");
  attr_ints(tr, "perm", {1, 0});
  add_node(g, "Reshape", {p + "by_axis", p + "flat"}, {p + "pads64"}, p + "pads64");
  auto* cast = add_node(g, "Cast", {p + "pads64"}, {p + "pads"}, p + "pads");
  attr_int(cast, "to", elem::kInt64);
  add_node(g, "Pad", {x, p + "pads"}, {out}, p + "pad");
}

// A branch at `depth` 0 pads x and applies `op`; deeper, it is an If on `c` over two such branches.
onnx::GraphProto branch(int depth, const std::string& op, const std::string& name) {
  onnx::GraphProto g;
  g.set_name(name);
  if (depth == 0) {
    add_computed_pad(g, name + "_", "x", name + "_padded");
    add_node(g, op, {name + "_padded"}, {name + "_out"}, name + "_" + op);
  } else {
    add_if(g, "c", {name + "_out"}, branch(depth - 1, "Relu", name + "t"), branch(depth - 1, "Neg", name + "e"),
           name + "_if");
  }
  add_output_unranked(g, name + "_out", elem::kFloat);
  return g;
}

std::string write(const ModelBuilder& b, const std::string& file) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

std::vector<float> run(const std::string& path, bool c) {
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  const std::vector<float> x{1, -2, 3, -4};
  const uint8_t cond = c ? 1 : 0;
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 4}, x.data(), 16);
  s.set_input("c", kBool, std::vector<int64_t>{}, &cond, 1);
  s.run();
  TensorRef y = s.output("y");
  REQUIRE(std::vector<int64_t>(y.shape.begin(), y.shape.end()) == std::vector<int64_t>{1, 7});
  const float* p = static_cast<const float*>(y.data);
  return {p, p + 7};
}

}  // namespace

TEST_CASE("folding: computed Pad amounts fold inside If branches nested three deep", "[shapes][folding]") {
  ModelBuilder b("nested_pads", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {1, 4});
  add_input(g, "c", elem::kBool, {});
  add_if(g, "c", {"y"}, branch(2, "", "t"), branch(2, "", "e"), "outer");
  add_output_unranked(g, "y", elem::kFloat);
  const std::string path = write(b, "memplan_nested_pads.onnx");

  Model m = prepare_model(path, {});
  // Every Pad's amounts are constants now, and the If output has its exact static shape.
  size_t pads = 0, chain_nodes = 0;
  for_each_graph(*m.main, [&](Graph& sub) {
    for (const auto& node : sub.nodes) {
      if (node->op_type == "Pad") {
        ++pads;
        CHECK(node->inputs[1]->constant);
      }
      if (node->op_type == "Transpose" || node->op_type == "Reshape" || node->op_type == "Cast") ++chain_nodes;
    }
  });
  CHECK(pads == 8);
  CHECK(chain_nodes == 0);
  REQUIRE(m.main->outputs[0]->type.is_static());
  CHECK(m.main->outputs[0]->type.static_dims() == std::vector<int64_t>{1, 7});

  // then-then-then is Relu, else-else-else is Neg, of x padded by one zero before and two after.
  CHECK(run(path, true) == std::vector<float>{0, 1, 0, 3, 0, 0, 0});
  CHECK(run(path, false) == std::vector<float>{0, -1, 2, -3, 4, 0, 0});
}

TEST_CASE("folding: computed Pad amounts fold in the main graph", "[shapes][folding]") {
  ModelBuilder b("main_pads", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {1, 4});
  add_computed_pad(g, "m_", "x", "y");
  add_output_unranked(g, "y", elem::kFloat);
  const std::string path = write(b, "memplan_main_pads.onnx");
  auto model = CompiledModel::compile(path, {});
  REQUIRE(model->outputs()[0].shape == std::vector<int64_t>{1, 7});
  Session s(model);
  const std::vector<float> x{1, 2, 3, 4};
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 4}, x.data(), 16);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  CHECK(std::vector<float>(y, y + 7) == std::vector<float>{0, 1, 2, 3, 4, 0, 0});
}
