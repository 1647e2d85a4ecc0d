// The ONNX checker's structural rules checked at import (lib/onnx/structure_checks.h): SSA names,
// attributes once and of the schema's type, graphs only where a schema takes them, and cycles.
// Each is one line naming the file, the graph, the node and the tensor or attribute.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "memplan/error.h"
#include "onnx/importer.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

void refused(const ModelBuilder& b, const std::vector<std::string>& says) {
  try {
    b.import("structure.onnx");
    FAIL("imported");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    CHECK_THAT(e.what(), Catch::StartsWith("structure.onnx: "));
    for (const auto& s : says) CHECK_THAT(e.what(), Catch::Contains(s));
  }
}

ModelBuilder relu_model() {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  add_node(g, "Relu", {"x"}, {"y"}, "r");
  add_output(g, "y", elem::kFloat, {2, 3});
  return b;
}

}  // namespace

TEST_CASE("SSA: two nodes producing one tensor are refused naming both", "[import][structure]") {
  ModelBuilder b = relu_model();
  add_node(b.graph(), "Sigmoid", {"x"}, {"y"}, "s");
  refused(b, {"graph 'hand_built'", "tensor 'y' is defined twice", "Relu node 'r'", "Sigmoid node 's'"});
}

TEST_CASE("SSA: a node output named like a graph input, an initializer or a Constant", "[import][structure]") {
  SECTION("graph input") {
    ModelBuilder b = relu_model();
    add_node(b.graph(), "Sigmoid", {"y"}, {"x"}, "s");
    refused(b, {"tensor 'x' is defined twice", "graph input", "Sigmoid node 's'"});
  }
  SECTION("initializer") {
    ModelBuilder b = relu_model();
    add_initializer(b.graph(), tensor_f32("w", {1}, {1.f}));
    add_node(b.graph(), "Sigmoid", {"y"}, {"w"}, "s");
    refused(b, {"tensor 'w' is defined twice", "initializer", "Sigmoid node 's'"});
  }
  SECTION("Constant node") {
    ModelBuilder b = relu_model();
    add_constant(b.graph(), tensor_f32("c", {1}, {1.f}));
    add_node(b.graph(), "Sigmoid", {"y"}, {"c"}, "s");
    refused(b, {"tensor 'c' is defined twice", "Constant node 'const_c'", "Sigmoid node 's'"});
  }
  SECTION("one node listing an output twice") {
    ModelBuilder b = relu_model();
    add_node(b.graph(), "Split", {"x"}, {"p", "p"}, "split");
    refused(b, {"tensor 'p' is defined twice", "Split node 'split'"});
  }
  SECTION("two graph inputs of one name") {
    ModelBuilder b = relu_model();
    add_input(b.graph(), "x", elem::kFloat, {2, 3});
    refused(b, {"tensor 'x' is defined twice", "graph input"});
  }
  SECTION("two initializers of one name") {
    ModelBuilder b = relu_model();
    add_initializer(b.graph(), tensor_f32("w", {1}, {1.f}));
    add_initializer(b.graph(), tensor_f32("w", {1}, {2.f}));
    refused(b, {"tensor 'w' is defined twice", "initializer"});
  }
}

TEST_CASE("SSA: inside a subgraph the message names the subgraph", "[import][structure]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "c", elem::kBool, {});
  add_input(g, "x", elem::kFloat, {2});
  onnx::GraphProto then_branch, else_branch;
  then_branch.set_name("then");
  add_node(then_branch, "Relu", {"x"}, {"t"}, "t1");
  add_node(then_branch, "Neg", {"x"}, {"t"}, "t2");
  add_output(then_branch, "t", elem::kFloat, {2});
  else_branch.set_name("else");
  add_node(else_branch, "Neg", {"x"}, {"e"}, "e1");
  add_output(else_branch, "e", elem::kFloat, {2});
  auto* n = add_node(g, "If", {"c"}, {"y"}, "if0");
  attr_graph(n, "then_branch", then_branch);
  attr_graph(n, "else_branch", else_branch);
  add_output(g, "y", elem::kFloat, {2});
  refused(b, {"If node 'if0'.then_branch", "tensor 't' is defined twice", "Relu node 't1'", "Neg node 't2'"});
}

TEST_CASE("SSA: an initializer listed among the inputs (IR < 4) is one definition", "[import][structure]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {1});
  add_input(g, "w", elem::kFloat, {1});
  add_initializer(g, tensor_f32("w", {1}, {2.f}));
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1});
  Model m = b.import();
  REQUIRE(m.main->inputs.size() == 1);
  CHECK(m.main->find_local("w")->is_constant());
}

TEST_CASE("attributes: one of the wrong type is refused naming the node, the attribute and both types",
          "[import][structure]") {
  ModelBuilder b = relu_model();
  auto* n = add_node(b.graph(), "Softmax", {"x"}, {"s"}, "sm");
  attr_floats(n, "axis", {1.f});
  refused(b, {"graph 'hand_built': Softmax node 'sm'", "attribute 'axis' is FLOATS", "takes INT"});
}

TEST_CASE("attributes: a Conv kernel_shape of FLOATS, a Constant value of INT", "[import][structure]") {
  {
    ModelBuilder b;
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {1, 1, 4, 4});
    add_initializer(g, tensor_f32("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f)));
    auto* n = add_node(g, "Conv", {"x", "w"}, {"y"}, "conv");
    attr_floats(n, "kernel_shape", {3.f, 3.f});
    add_output_unranked(g, "y", elem::kFloat);
    refused(b, {"Conv node 'conv'", "attribute 'kernel_shape' is FLOATS", "takes INTS"});
  }
  {
    ModelBuilder b = relu_model();
    auto* c = add_node(b.graph(), "Constant", {}, {"k"}, "konst");
    attr_int(c, "value", 3);
    refused(b, {"Constant node 'konst'", "attribute 'value' is INT", "takes TENSOR"});
  }
}

TEST_CASE("attributes: one given twice is refused (memplan and ONNX would read different ones)",
          "[import][structure]") {
  ModelBuilder b = relu_model();
  auto* n = add_node(b.graph(), "Softmax", {"x"}, {"s"}, "sm");
  attr_int(n, "axis", 0);
  attr_int(n, "axis", 1);
  refused(b, {"Softmax node 'sm'", "attribute 'axis' is given twice"});
}

TEST_CASE("attributes: a graph on an op that takes none is refused", "[import][structure]") {
  ModelBuilder b = relu_model();
  onnx::GraphProto sub;
  sub.set_name("stray");
  add_node(sub, "Neg", {"x"}, {"z"}, "neg");
  add_output(sub, "z", elem::kFloat, {2, 3});
  attr_graph(b.graph().mutable_node(0), "body", sub);
  refused(b, {"Relu node 'r'", "attribute 'body' is a graph", "Relu does not take"});
}

TEST_CASE("attributes: untyped old-style attributes and unknown names still import", "[import][structure]") {
  ModelBuilder b = relu_model();
  auto* n = add_node(b.graph(), "Softmax", {"x"}, {"s"}, "sm");
  auto* a = n->add_attribute();  // no type: the filled field tells it
  a->set_name("axis");
  a->set_i(1);
  attr_int(n, "not_in_the_schema", 7);
  auto* empty = add_node(b.graph(), "Transpose", {"x"}, {"t"}, "tr");
  empty->add_attribute()->set_name("perm");  // an empty list, untyped
  Model m = b.import();
  CHECK(m.main->nodes.size() == 3);
}
