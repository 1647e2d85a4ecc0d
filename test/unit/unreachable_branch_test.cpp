// An If whose condition is known only at run time may hold a branch that cannot run on the input
// shapes the model is compiled for (Silero VAD v5: its 8 kHz branch on the 16 kHz input length).
// ONNX Runtime loads such a model and fails only if the branch is taken; so does memplan.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "ir/unreachable_branch.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// Where memplan finds that a branch cannot run on x [1, 4]: its shape inference (a MatMul by a
// [3, 2] matrix), or the kernel it makes once shapes are fixed (a Reshape to [3, 5], whose element
// count ONNX's inference does not check).
enum class Misfit { Inference, Kernel };

// A branch that cannot run on x [1, 4]; its failing node is named <name>_misfit.
onnx::GraphProto misfit_branch(const std::string& name, Misfit where = Misfit::Inference) {
  onnx::GraphProto b = branch_graph(name);
  if (where == Misfit::Inference) {
    add_constant(b, tensor_f32(name + "_w", {3, 2}, {1, 2, 3, 4, 5, 6}));
    add_node(b, "MatMul", {"x", name + "_w"}, {name + "_r"}, name + "_misfit");
  } else {
    add_constant(b, tensor_i64(name + "_shape", {2}, {3, 5}));
    add_node(b, "Reshape", {"x", name + "_shape"}, {name + "_r"}, name + "_misfit");
  }
  add_node_to_output(b, "Neg", {name + "_r"}, value_info_unranked(name + "_out", elem::kFloat), name + "_neg");
  return b;
}

// y = If(c) { Relu(x) } else { else_branch }, x [1, 4]; `inner`: the else branch is itself an If
// on d whose then branch negates x and whose else branch is `else_branch`.
std::string write_model(const std::string& file, onnx::GraphProto then_branch, onnx::GraphProto else_branch,
                        bool inner = false) {
  IfModel b;
  b.input("x", elem::kFloat, {1, 4}).input("d", elem::kBool, {}).condition_input("c");
  b.then_branch() = std::move(then_branch);
  if (inner) {
    onnx::GraphProto outer_else = branch_graph("outer_else");
    add_if(outer_else, "d", {"inner_y"},
           one_node_branch("inner_then", "Neg", {"x"}, value_info_unranked("inner_t", elem::kFloat), "inner_neg"),
           std::move(else_branch), "inner_if");
    *outer_else.add_output() = value_info_unranked("inner_y", elem::kFloat);
    b.else_branch() = std::move(outer_else);
  } else {
    b.else_branch() = std::move(else_branch);
  }
  b.add_if({"y"}, "the_if");
  add_output_unranked(b.graph(), "y", elem::kFloat);
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

onnx::GraphProto relu_branch() {
  return one_node_branch("then", "Relu", {"x"}, value_info_unranked("t_out", elem::kFloat), "t_relu");
}

std::vector<float> run(const std::shared_ptr<const CompiledModel>& model, bool c, bool d = true) {
  Session s(model, SessionOptions{true});
  const std::vector<float> x{1, -2, 3, -4};
  const uint8_t cond = c ? 1 : 0, inner = d ? 1 : 0;
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 4}, x.data(), 16);
  s.set_input("c", kBool, std::vector<int64_t>{}, &cond, 1);
  s.set_input("d", kBool, std::vector<int64_t>{}, &inner, 1);
  s.run();
  TensorRef y = s.output("y");
  REQUIRE(std::vector<int64_t>(y.shape.begin(), y.shape.end()) == std::vector<int64_t>{1, 4});
  const float* p = static_cast<const float*>(y.data);
  return {p, p + 4};
}

}  // namespace

// Runs c = false on a model whose else branch cannot run: the error names the If, the branch and
// the node that cannot run.
void check_else_fails(const std::shared_ptr<const CompiledModel>& model, const std::string& if_name,
                      const std::string& node, bool d = true) {
  try {
    run(model, false, d);
    FAIL("taking the dropped branch ran");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("If node '" + if_name + "'") && Catch::Contains("else_branch") &&
                             Catch::Contains("cannot run on these input shapes") && Catch::Contains(node));
  }
}

TEST_CASE("an If branch whose inference fails on the given shapes is dropped: the other runs, taking it fails naming "
          "the If", "[shapes][if]") {
  const std::string path = write_model("unreachable_else.onnx", relu_branch(), misfit_branch("else"));
  auto model = CompiledModel::compile(path, {});
  CHECK(run(model, true) == std::vector<float>{1, 0, 3, 0});
  check_else_fails(model, "the_if", "else_misfit");
  // The dropped branch holds no nodes and no memory; the If's output keeps the live branch's shape.
  Compilation c = compile_model(path, {}, {});
  const Node& the_if = *c.model.main->nodes.back();
  CHECK(the_if.subgraph("else_branch")->nodes.empty());
  CHECK(unreachable_branch_reason(the_if, false) != nullptr);
  CHECK(unreachable_branch_reason(the_if, true) == nullptr);
  CHECK(the_if.outputs[0]->type.is_static());
  CHECK_FALSE(the_if.outputs[0]->shape_varies);
  for (const GraphPlan& g : c.plan.graphs)
    if (g.owner_attribute == "else_branch") CHECK(g.frame_bytes == 0);
}

TEST_CASE("an If branch whose kernel refuses the given shapes is dropped the same way", "[shapes][if]") {
  const std::string path = write_model("unreachable_kernel.onnx", relu_branch(), misfit_branch("else", Misfit::Kernel));
  auto model = CompiledModel::compile(path, {});
  CHECK(run(model, true) == std::vector<float>{1, 0, 3, 0});
  check_else_fails(model, "the_if", "else_misfit");
  Compilation c = compile_model(path, {}, {});
  CHECK(c.model.main->nodes.back()->subgraph("else_branch")->nodes.empty());
  for (const GraphPlan& g : c.plan.graphs)
    if (g.owner_attribute == "else_branch") CHECK(g.frame_bytes == 0);
}

TEST_CASE("the innermost If with a run-time condition drops the branch, the enclosing If keeps both", "[shapes][if]") {
  for (Misfit where : {Misfit::Inference, Misfit::Kernel}) {
    const std::string path = write_model("unreachable_nested.onnx", relu_branch(), misfit_branch("deep", where), true);
    auto model = CompiledModel::compile(path, {});
    CHECK(run(model, true) == std::vector<float>{1, 0, 3, 0});
    CHECK(run(model, false, true) == std::vector<float>{-1, 2, -3, 4});
    check_else_fails(model, "inner_if", "deep_misfit", false);
  }
}

TEST_CASE("when neither branch can run on the given shapes, the compile fails naming a node that cannot run",
          "[shapes][if]") {
  for (Misfit where : {Misfit::Inference, Misfit::Kernel}) {
    const std::string path =
        write_model("unreachable_both.onnx", misfit_branch("then", where), misfit_branch("else", where));
    CHECK_THROWS_WITH(CompiledModel::compile(path, {}), Catch::Contains("_misfit"));
  }
  // Outside any If, the same node fails the compile.
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 4});
  add_constant(b.graph(), tensor_i64("shape", {2}, {3, 5}));
  add_node(b.graph(), "Reshape", {"x", "shape"}, {"y"}, "main_misfit");
  add_output_unranked(b.graph(), "y", elem::kFloat);
  const std::string path = (std::filesystem::temp_directory_path() / "misfit_main.onnx").string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  CHECK_THROWS_WITH(CompiledModel::compile(path, {}), Catch::Contains("main_misfit"));
}

TEST_CASE("a model file cannot mark a branch unreachable: memplan_ attributes of the file are ignored", "[import][if]") {
  IfModel b;
  b.input("x", elem::kFloat, {1, 4}).input("d", elem::kBool, {}).condition_input("c");
  b.then_branch() = relu_branch();
  b.else_branch() = one_node_branch("else", "Neg", {"x"}, value_info_unranked("e_out", elem::kFloat), "e_neg");
  auto* n = b.add_if({"y"}, "the_if");
  add_attr(n, kUnreachableElseAttr, onnx::AttributeProto::STRING)->set_s("planted by the file");
  add_output_unranked(b.graph(), "y", elem::kFloat);
  const std::string path = (std::filesystem::temp_directory_path() / "planted_unreachable.onnx").string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  auto model = CompiledModel::compile(path, {});
  CHECK(run(model, false) == std::vector<float>{-1, 2, -3, 4});
}
