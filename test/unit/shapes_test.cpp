// Shape inference: user-given shapes and dims, constant folding of shape computations, Ifs with a
// compile-time condition, Loop and Scan output shapes, bounds, capacities and overflow.
#include "shapes/shape_inference.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "onnx/importer.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"

namespace {

namespace fs = std::filesystem;
using namespace memplan;
using namespace memplan::test;
using Dims = std::vector<int64_t>;

const fs::path kModels = fs::path(MEMPLAN_SOURCE_DIR) / "models";

Model load(const std::string& name) { return import_model((kModels / name / "model.onnx").string()); }

Model load_shaped(const std::string& name, const ShapeOptions& o = {}) {
  Model m = load(name);
  infer_shapes(m, o);
  return m;
}

// The error infer_shapes (or the import) raises; fails the test when there is none.
Error shape_error(const ModelBuilder& b, const ShapeOptions& o = {}, const std::string& path = "m.onnx") {
  Model m = b.import(path);
  try {
    infer_shapes(m, o);
  } catch (const Error& e) {
    return e;
  }
  FAIL("infer_shapes did not fail");
  return Error(ErrorKind::Internal, "unreachable");
}

Value* value(Graph& g, const std::string& name) {
  Value* v = g.find_local(name);
  INFO("value " << name << " in " << g.path());
  REQUIRE(v);
  return v;
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n->name);
  return out;
}

void check_static(Value* v, const Dims& dims, uint64_t bytes) {
  INFO(v->name << " " << v->type.shape_string());
  CHECK(v->type.is_static());
  CHECK(dims_of(v) == dims);
  CHECK(v->capacity_bytes == bytes);
  CHECK_FALSE(v->shape_varies);
}

// Every non-constant value of every graph has a capacity that matches its shape when static.
void check_all_sized(Model& m) {
  for_each_graph(*m.main, [&](Graph& g) {
    for (const auto& v : g.values) {
      INFO(g.path() << ": " << v->name << " " << v->type.shape_string());
      if (v->constant) continue;
      CHECK(v->type.dtype != DType::Undefined);
      if (v->dynamic) {  // sized by the session at run time
        CHECK_FALSE(v->type.is_static());
        CHECK(v->capacity_bytes == 0);
        continue;
      }
      if (v->type.is_static() && !v->shape_varies) {
        uint64_t n = 1;
        for (int64_t d : v->type.static_dims()) n *= static_cast<uint64_t>(d);
        CHECK(v->capacity_bytes == n * dtype_size(v->type.dtype));
      } else {
        CHECK(v->shape_varies);
        CHECK(v->capacity_bytes > 0);
      }
    }
  });
}

bool has_control_flow(Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [](const auto& n) { return n->is_control_flow(); });
}

// x[shape] -> Relu -> y
ModelBuilder relu_model(const Shape& shape) {
  ModelBuilder b("relu");
  add_input(b.graph(), "x", elem::kFloat, shape);
  add_node(b.graph(), "Relu", {"x"}, {"y"}, "relu");
  add_output(b.graph(), "y", elem::kFloat, shape);
  return b;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// parse_dims

TEST_CASE("parse_dims", "[shapes]") {
  CHECK(parse_dims("1x3x224x224", "--shape x") == Dims{1, 3, 224, 224});
  CHECK(parse_dims("7", "--dim N") == Dims{7});
  CHECK(parse_dims("0x5", "--shape x") == Dims{0, 5});
  CHECK(parse_dims("", "--shape s").empty());
  CHECK(parse_dims("scalar", "--shape s").empty());
  CHECK(parse_dims("999999999999999999", "--dim N") == Dims{999999999999999999});
  for (const char* bad : {"1x", "x1", "1xx2", "-1", "a", "1.5", "2X3", "1x-3", "1234567890123456789", " 1", "1 "}) {
    INFO("'" << bad << "'");
    try {
      parse_dims(bad, "--shape foo");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      CHECK_THAT(e.what(), Catch::StartsWith("--shape foo") && Catch::Contains(std::string("'") + bad + "'"));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// --shape / --dim

TEST_CASE("options: --shape and --dim fix symbolic input dimensions", "[shapes]") {
  ShapeOptions o;
  Dims expect;
  SECTION("--shape") {
    o.input_shapes["x"] = {2, 3};
    expect = {2, 3};
  }
  SECTION("--dim") {
    o.dims["N"] = 5;
    expect = {5, 3};
  }
  SECTION("--dim 0") {
    o.dims["N"] = 0;
    expect = {0, 3};
  }
  Model m = relu_model({"N", 3}).import();
  infer_shapes(m, o);
  check_static(value(*m.main, "x"), expect, static_cast<uint64_t>(expect[0] * expect[1] * 4));
  check_static(value(*m.main, "y"), expect, static_cast<uint64_t>(expect[0] * expect[1] * 4));
}

TEST_CASE("options: --dim binds the symbol everywhere, subgraphs included", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {"N", 2});
  add_initializer(g, tensor_i64("M", {}, {3}));
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "acc", elem::kFloat, {"N", 2});
  add_node(body, "Neg", {"acc"}, {"acc_out"}, "neg");
  add_output(body, "acc_out", elem::kFloat, {"N", 2});
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {"N", 2});
  Model m = b.import();
  ShapeOptions o;
  o.dims["N"] = 4;
  infer_shapes(m, o);
  Graph* body_ir = m.main->nodes[0]->subgraph("body");
  check_static(value(*body_ir, "acc"), {4, 2}, 32);
  check_static(value(*body_ir, "acc_out"), {4, 2}, 32);
  check_static(value(*m.main, "y"), {4, 2}, 32);
}

TEST_CASE("options: --shape and --dim errors name the option and the problem", "[shapes]") {
  SECTION("an unknown input name") {
    ShapeOptions o;
    o.input_shapes["nope"] = {1, 3};
    Error e = shape_error(relu_model({"N", 3}), o);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("m.onnx") && Catch::Contains("a shape is given for 'nope'") &&
                             Catch::Contains("no input of that name") && Catch::Contains("inputs: x"));
  }
  SECTION("an unknown dim name") {
    ShapeOptions o;
    o.dims["N"] = 2;
    o.dims["M"] = 3;
    Error e = shape_error(relu_model({"N", 3}), o);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("m.onnx") && Catch::Contains("a value is given for dim 'M'"));
  }
  SECTION("a rank mismatch") {
    ShapeOptions o;
    o.input_shapes["x"] = {1, 2, 3};
    Error e = shape_error(relu_model({"N", 3}), o);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("input 'x' is declared [N, 3]") && Catch::Contains("[1, 2, 3]"));
  }
  SECTION("a symbolic dim left unset") {
    Error e = shape_error(relu_model({"N", 3}));
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("m.onnx") && Catch::Contains("'x'") && Catch::Contains("dims[N] = <value>") &&
                             Catch::Contains("input_shapes[x] = <dims>"));
    REQUIRE(e.remedies().size() == 2);
    CHECK(e.remedies()[0].option == Remedy::Option::Dims);
    CHECK(e.remedies()[0].name == "N");
    CHECK(e.remedies()[1].option == Remedy::Option::InputShapes);
    CHECK_THAT(e.message(), !Catch::Contains("input_shapes["));
  }
  SECTION("an unnamed unknown dim") {
    ModelBuilder b("relu");
    add_input(b.graph(), "x", elem::kFloat, {3});
    b.graph().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->clear_dim_value();
    add_node(b.graph(), "Relu", {"x"}, {"y"}, "relu");
    add_output(b.graph(), "y", elem::kFloat, {3});
    Error e = shape_error(b);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("'x'") && Catch::Contains("input_shapes[x] = <dims>"));
  }
  SECTION("an input without a shape") {
    ModelBuilder b("relu");
    add_input_unranked(b.graph(), "x", elem::kFloat);
    add_node(b.graph(), "Relu", {"x"}, {"y"}, "relu");
    add_output_unranked(b.graph(), "y", elem::kFloat);
    Error e = shape_error(b);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("'x'") && Catch::Contains("no shape") && Catch::Contains("input_shapes[x] = <dims>"));
    ShapeOptions o;
    o.input_shapes["x"] = {2, 2};
    Model m = b.import();
    infer_shapes(m, o);
    check_static(value(*m.main, "y"), {2, 2}, 16);
  }
}

TEST_CASE("symbolic_dim.onnx needs --dim N", "[shapes]") {
  const std::string path = (kModels / "bad" / "symbolic_dim.onnx").string();
  Model m = import_model(path);
  try {
    infer_shapes(m, {});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("dims[N] = <value>"));
  }
  Model ok = import_model(path);
  ShapeOptions o;
  o.dims["N"] = 8;
  infer_shapes(ok, o);
  check_static(value(*ok.main, "y"), {8, 3}, 96);
}

// ------------------------------------------------------------------------------------------------
// Constant folding of shape computations

namespace {

// x[B,3,4] -> Shape -> Gather([0]) -> Concat(., [-1]) -> Reshape(x, .) -> y
ModelBuilder shape_chain_model(const D& batch) {
  ModelBuilder b("shape_chain");
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {batch, 3, 4});
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_constant(g, tensor_i64("idx", {1}, {0}));
  add_node(g, "Gather", {"s", "idx"}, {"n0"}, "gather");
  add_constant(g, tensor_i64("minus1", {1}, {-1}));
  attr_int(add_node(g, "Concat", {"n0", "minus1"}, {"target"}, "concat"), "axis", 0);
  add_node(g, "Reshape", {"x", "target"}, {"y"}, "reshape");
  add_node(g, "Relu", {"y"}, {"z"}, "relu");
  add_output(g, "z", elem::kFloat, {batch, "R"});
  return b;
}

}  // namespace

TEST_CASE("Shape -> Gather -> Concat -> Reshape is folded", "[shapes]") {
  SECTION("static input") {
    Model m = shape_chain_model(2).import();
    CHECK(m.main->nodes.size() == 5);
    infer_shapes(m, {});
    CHECK(node_names(*m.main) == std::vector<std::string>{"reshape", "relu"});
    Value* target = value(*m.main, "target");
    REQUIRE(target->is_constant());
    CHECK(target->constant->to_ints() == Dims{2, -1});
    CHECK(value(*m.main, "s")->is_constant());
    CHECK(value(*m.main, "s")->constant->to_ints() == Dims{2, 3, 4});
    check_static(value(*m.main, "y"), {2, 12}, 96);
    check_static(value(*m.main, "z"), {2, 12}, 96);
    check_all_sized(m);
  }
  SECTION("symbolic batch fixed with --dim") {
    Model m = shape_chain_model("B").import();
    ShapeOptions o;
    o.dims["B"] = 7;
    infer_shapes(m, o);
    CHECK(node_names(*m.main) == std::vector<std::string>{"reshape", "relu"});
    check_static(value(*m.main, "y"), {7, 12}, 7 * 12 * 4);
    check_static(value(*m.main, "z"), {7, 12}, 7 * 12 * 4);
  }
}

TEST_CASE("a fully constant computation disappears", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {6});
  add_initializer(g, tensor_i64("a", {2}, {2, 3}));
  add_constant(g, tensor_i64("b", {2}, {1, 1}));
  add_node(g, "Mul", {"a", "b"}, {"ab"}, "mul");
  add_node(g, "Reshape", {"x", "ab"}, {"y"}, "reshape");
  add_output(g, "y", elem::kFloat, {2, 3});
  Model m = b.import();
  infer_shapes(m, {});
  CHECK(node_names(*m.main) == std::vector<std::string>{"reshape"});
  check_static(value(*m.main, "y"), {2, 3}, 24);
}

// ------------------------------------------------------------------------------------------------
// If with a compile-time condition

namespace {

// x[rows,3]; cond = (Shape(x)[0] == 2); If(cond) { Relu(x) -> [rows,3] } else { Reshape(x, [-1]) }
ModelBuilder folded_if_model(int64_t rows) {
  IfModel b("folded_if");
  auto& g = b.graph();
  b.input("x", elem::kFloat, {rows, 3});
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_constant(g, tensor_i64("zero", {}, {0}));
  add_node(g, "Gather", {"s", "zero"}, {"rows"}, "gather");
  add_constant(g, tensor_i64("two", {}, {2}));
  add_node(g, "Equal", {"rows", "two"}, {"cond"}, "equal");
  b.condition("cond");
  b.then_node("Relu", {"x"}, value_info("t_out", elem::kFloat, {rows, 3}), "then_relu");
  add_constant(b.else_branch(), tensor_i64("flat", {1}, {-1}));
  b.else_node("Reshape", {"x", "flat"}, value_info("e_out", elem::kFloat, {rows * 3}), "else_reshape");
  b.add_if();
  add_node(g, "Neg", {"y"}, {"z"}, "neg");
  add_output_unranked(g, "z", elem::kFloat);
  return b;
}

}  // namespace

TEST_CASE("a constant If that cannot be inlined is refused and leaves its graph as it was", "[shapes]") {
  SECTION("a branch returning more values than the If has outputs") {
    IfModel b("bad_if");
    b.input("x", elem::kFloat, {2});
    b.condition_constant(true);
    b.then_node("Neg", {"x"}, value_info("t_a", elem::kFloat, {2}), "t_neg");
    b.then_node("Abs", {"x"}, value_info("t_b", elem::kFloat, {2}), "t_abs");
    b.else_node("Neg", {"x"}, value_info("e_a", elem::kFloat, {2}), "e_neg");
    b.add_if();
    add_output(b.graph(), "y", elem::kFloat, {2});
    Model m = b.import();
    CHECK_THROWS_WITH(infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)}),
                      Catch::Contains("If node 'if'") && Catch::Contains("branch returns 2 values"));
    REQUIRE(m.main->nodes.size() == 1);
    REQUIRE(m.main->nodes[0] != nullptr);  // the If was moved out before the check once
    CHECK(m.main->nodes[0]->op_type == "If");
  }
  SECTION("a constant condition of no elements") {
    IfModel b("empty_cond");
    b.input("x", elem::kFloat, {2});
    add_initializer(b.graph(), tensor_bool("cond", {0}, {}));
    b.condition("cond");
    b.then_node("Neg", {"x"}, value_info("t_a", elem::kFloat, {2}), "t_neg");
    b.else_node("Abs", {"x"}, value_info("e_a", elem::kFloat, {2}), "e_abs");
    b.add_if();
    add_output(b.graph(), "y", elem::kFloat, {2});
    Model m = b.import();
    try {
      infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
      FAIL("inferred");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);  // not an internal error
      CHECK_THAT(e.what(), Catch::Contains("its condition 'cond' has 0 elements"));
    }
  }
}

TEST_CASE("an If whose condition folds to a constant is replaced by its branch", "[shapes]") {
  SECTION("then") {
    Model m = folded_if_model(2).import();
    CHECK(m.main->nodes.size() == 5);
    CHECK(count_graphs(*m.main) == 3);
    infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
    CHECK(node_names(*m.main) == std::vector<std::string>{"then_relu", "neg"});
    CHECK(count_graphs(*m.main) == 1);
    CHECK_FALSE(has_control_flow(*m.main));
    check_static(value(*m.main, "y"), {2, 3}, 24);
    check_static(value(*m.main, "z"), {2, 3}, 24);
    CHECK(value(*m.main, "y")->producer == m.main->nodes[0].get());
    CHECK(m.main->nodes[1]->inputs[0] == value(*m.main, "y"));
    check_all_sized(m);
  }
  SECTION("else") {
    Model m = folded_if_model(5).import();
    infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
    CHECK(node_names(*m.main) == std::vector<std::string>{"else_reshape", "neg"});
    CHECK(count_graphs(*m.main) == 1);
    check_static(value(*m.main, "y"), {15}, 60);
    check_static(value(*m.main, "z"), {15}, 60);
  }
}

TEST_CASE("an inlined If branch that returns an outer value gets an Identity", "[shapes]") {
  IfModel b;
  b.input("x", elem::kFloat, {4}).condition_constant(true);
  add_output(b.then_branch(), "x", elem::kFloat, {4});  // returns the main-graph input itself
  b.else_node("Neg", {"x"}, value_info("e_out", elem::kFloat, {4}), "else_neg");
  b.add_if();
  add_output(b.graph(), "y", elem::kFloat, {4});
  Model m = b.import();
  infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
  REQUIRE(m.main->nodes.size() == 1);
  Node& id = *m.main->nodes[0];
  CHECK(id.op_type == "Identity");
  CHECK(id.inputs[0] == value(*m.main, "x"));
  CHECK(id.outputs[0] == value(*m.main, "y"));
  check_static(value(*m.main, "y"), {4}, 16);
}

TEST_CASE("an inlined If branch that holds a Loop moves the Loop up a level", "[shapes]") {
  IfModel b;
  b.input("x", elem::kFloat, {4}).condition_constant(true);
  add_initializer(b.graph(), tensor_i64("M", {}, {3}));
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "acc", elem::kFloat, {4});
  add_node(body, "Add", {"acc", "x"}, {"acc_out"}, "body_add");  // captures main's x
  add_output(body, "acc_out", elem::kFloat, {4});
  attr_graph(add_node(b.then_branch(), "Loop", {"M", "", "x"}, {"t_out"}, "loop"), "body", body);
  add_output(b.then_branch(), "t_out", elem::kFloat, {4});
  b.else_node("Neg", {"x"}, value_info("e_out", elem::kFloat, {4}), "else_neg");
  b.add_if();
  add_output(b.graph(), "y", elem::kFloat, {4});
  Model m = b.import();
  infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
  REQUIRE(m.main->nodes.size() == 1);
  Node& loop = *m.main->nodes[0];
  CHECK(loop.name == "loop");
  CHECK(loop.graph == m.main.get());
  Graph* body_ir = loop.subgraph("body");
  REQUIRE(body_ir);
  CHECK(body_ir->parent == m.main.get());
  CHECK(body_ir->depth == 1);
  Value* x = value(*m.main, "x");
  CHECK(body_ir->captures == std::vector<Value*>{x});
  CHECK(std::find(loop.implicit_inputs.begin(), loop.implicit_inputs.end(), x) != loop.implicit_inputs.end());
  CHECK(std::find(x->consumers.begin(), x->consumers.end(), &loop) != x->consumers.end());
  check_static(value(*m.main, "y"), {4}, 16);
  CHECK(count_graphs(*m.main) == 2);
}

TEST_CASE("inlining a branch whose value names clash with the parent's keeps both values apart", "[shapes]") {
  // shadow_node_output.onnx with a constant condition: the else-branch's own `outer_val` moves into
  // the main graph next to main's `outer_val`.
  IfModel b;
  auto& g = b.graph();
  b.input("x", elem::kFloat, {4}).condition_constant(false);
  add_initializer(g, tensor_f32("three", {}, {3.f}));
  add_node(g, "Mul", {"x", "three"}, {"outer_val"}, "outer_mul");
  b.then_node("Identity", {"outer_val"}, value_info("t_out", elem::kFloat, {4}), "then_id");
  add_node(b.else_branch(), "Neg", {"x"}, {"outer_val"}, "else_local");
  b.else_node("Sub", {"outer_val", "x"}, value_info("e_out", elem::kFloat, {4}), "else_sub");
  b.add_if();
  add_node(g, "Add", {"y", "outer_val"}, {"z"}, "final");
  add_output(g, "z", elem::kFloat, {4});
  Model m = b.import();
  infer_shapes(m, {}, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
  CHECK(node_names(*m.main) == std::vector<std::string>{"outer_mul", "else_local", "else_sub", "final"});
  Value* main_val = value(*m.main, "outer_val");
  Node* else_local = m.main->nodes[1].get();
  Node* else_sub = m.main->nodes[2].get();
  Node* final_add = m.main->nodes[3].get();
  CHECK(else_local->outputs[0] != main_val);
  CHECK(else_local->outputs[0]->name != "outer_val");  // renamed
  CHECK(else_sub->inputs[0] == else_local->outputs[0]);
  CHECK(final_add->inputs[1] == main_val);
  CHECK(main_val->producer == m.main->nodes[0].get());
}

// ------------------------------------------------------------------------------------------------
// Loop

TEST_CASE("Loop: carried outputs get the carried shape", "[shapes]") {
  Model m = load_shaped("loop_scan_outputs");
  check_static(value(*m.main, "acc_final"), {16}, 64);
  Graph* body = m.main->nodes[0]->subgraph("body");
  check_static(value(*body, "acc"), {16}, 64);
  check_static(value(*body, "acc_out"), {16}, 64);
  check_static(value(*body, "i"), {}, 8);
  check_static(value(*body, "c_in"), {}, 1);

  Model ex = load_shaped("example");
  check_static(value(*ex.main, "if_out"), {1, 8, 112, 112}, 8 * 112 * 112 * 4);
  Graph* then_g = ex.main->nodes[2]->subgraph("then_branch");
  check_static(value(*then_g, "then_out"), {1, 8, 112, 112}, 8 * 112 * 112 * 4);
}

TEST_CASE("Loop: scan outputs of a for-loop whose body returns its condition input are [M, ...]", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_initializer(g, tensor_i64("M", {}, {6}));
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "i", elem::kInt64, {});
  add_input(body, "c", elem::kBool, {});
  add_input(body, "acc", elem::kFloat, {4});
  add_node(body, "Neg", {"acc"}, {"acc_out"}, "neg");
  add_node(body, "Relu", {"acc"}, {"emit"}, "relu");
  add_output(body, "c", elem::kBool, {});  // the condition input itself
  add_output(body, "acc_out", elem::kFloat, {4});
  add_output(body, "emit", elem::kFloat, {4});
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y", "ys"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {4});
  add_output_unranked(g, "ys", elem::kFloat);
  Model m = b.import();
  infer_shapes(m, {});
  check_static(value(*m.main, "y"), {4}, 16);
  check_static(value(*m.main, "ys"), {6, 4}, 96);
}

// The body's condition is Identity(cond_in), the usual for-loop form (onnx's helper, PyTorch): the
// loop runs exactly M times, so the scan output is exactly [M, 16], as the model declares.
TEST_CASE("Loop: scan outputs [M, ...] when the condition passes through an Identity", "[shapes]") {
  Model m = load_shaped("loop_scan_outputs");
  Value* deltas = value(*m.main, "deltas");
  CHECK(deltas->capacity_bytes == 5 * 16 * 4);
  check_static(deltas, {5, 16}, 320);
}

TEST_CASE("Loop: the scan outputs of loop_scan_outputs fit [M, 16] at least", "[shapes]") {
  Model m = load_shaped("loop_scan_outputs");
  Value* deltas = value(*m.main, "deltas");
  CHECK(deltas->capacity_bytes == 5 * 16 * 4);
  REQUIRE(deltas->type.has_rank);
  REQUIRE(deltas->type.dims.size() == 2);
  CHECK(deltas->type.dims[1].value == 16);
}

namespace {

// Loop(M, cond, x[4]) whose body stops when iter >= 2: carried acc, scan output emit[4].
ModelBuilder early_exit_model(int64_t m) {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_initializer(g, tensor_i64("M", {}, {m}));
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "i", elem::kInt64, {});
  add_input(body, "c", elem::kBool, {});
  add_input(body, "acc", elem::kFloat, {4});
  add_constant(body, tensor_i64("limit", {}, {2}));
  add_node(body, "Less", {"i", "limit"}, {"go_on"}, "less");
  add_node(body, "Neg", {"acc"}, {"acc_out"}, "neg");
  add_node(body, "Relu", {"acc"}, {"emit"}, "relu");
  add_output(body, "go_on", elem::kBool, {});
  add_output(body, "acc_out", elem::kFloat, {4});
  add_output(body, "emit", elem::kFloat, {4});
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y", "ys"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {4});
  add_output_unranked(g, "ys", elem::kFloat);
  return b;
}

}  // namespace

TEST_CASE("Loop: with a data-dependent condition, a constant M bounds the scan outputs", "[shapes]") {
  Model m = early_exit_model(10).import();
  infer_shapes(m, {});
  check_static(value(*m.main, "y"), {4}, 16);
  Value* ys = value(*m.main, "ys");
  CHECK(ys->shape_varies);
  CHECK(ys->capacity_bytes == 10 * 16);
  REQUIRE(ys->type.dims.size() == 2);
  CHECK_FALSE(ys->type.dims[0].known());
  CHECK(ys->type.dims[1].value == 4);
}

// A zero-byte capacity is a real capacity: a Loop bounded by M = 0, or an If whose branches
// return differently shaped empty tensors, needs no --bound.
TEST_CASE("a varying shape whose capacity is 0 bytes needs no --bound", "[shapes]") {
  SECTION("Loop with M = 0 and a data-dependent condition") {
    Model m = early_exit_model(0).import();
    REQUIRE_NOTHROW(infer_shapes(m, {}));
    CHECK(value(*m.main, "ys")->capacity_bytes == 0);
  }
  SECTION("If with branches [0, 3] and [0]") {
    IfModel b;
    b.input("x", elem::kFloat, {0, 3}).input("z", elem::kFloat, {0}).condition_input("p");
    b.then_node("Identity", {"x"}, value_info_unranked("t_out", elem::kFloat), "t_id");
    b.else_node("Identity", {"z"}, value_info_unranked("e_out", elem::kFloat), "e_id");
    b.add_if();
    add_output_unranked(b.graph(), "y", elem::kFloat);
    Model m = b.import();
    REQUIRE_NOTHROW(infer_shapes(m, {}));
    CHECK(value(*m.main, "y")->capacity_bytes == 0);
    CHECK(value(*m.main, "y")->shape_varies);
  }
}

TEST_CASE("Loop: a data-dependent trip count makes its scan outputs dynamic, or needs --bound", "[shapes]") {
  const std::string path = (kModels / "loop_data_dependent_scan" / "model.onnx").string();
  SECTION("without a bound: a dynamic tensor, outside the arena") {
    Model m = import_model(path);
    infer_shapes(m, {});
    Value* sums = value(*m.main, "sums");
    CHECK(sums->dynamic);
    CHECK(sums->capacity_bytes == 0);
    CHECK_FALSE(value(*m.main, "y")->dynamic);
  }
  SECTION("strict, without a bound: the error names the tensor and the option") {
    Model m = import_model(path);
    ShapeOptions o;
    o.static_only = true;
    try {
      infer_shapes(m, o);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("'sums'") && Catch::Contains("bounds[sums] = <dims>"));
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
  SECTION("with a bound") {
    ShapeOptions o;
    o.bounds["sums"] = {20};
    Model m = import_model(path);
    infer_shapes(m, o);
    Value* sums = value(*m.main, "sums");
    CHECK(sums->capacity_bytes == 20 * 4);
    CHECK(sums->shape_varies);
    check_static(value(*m.main, "y"), {8}, 32);
    check_all_sized(m);
  }
  SECTION("the same loop without scan outputs needs no bound") {
    Model m = load_shaped("loop_data_dependent_exit");
    check_static(value(*m.main, "y"), {8}, 32);
    check_static(value(*m.main, "iterations"), {}, 8);
    check_all_sized(m);
  }
}

TEST_CASE("options: --bound naming no tensor of the model is an error", "[shapes]") {
  ShapeOptions o;
  o.bounds["typo"] = {4};
  Error e = shape_error(relu_model({2}), o);
  CHECK(e.kind() == ErrorKind::InvalidInput);
  CHECK_THAT(e.what(), Catch::Contains("a bound is given for 'typo'"));
}

// ------------------------------------------------------------------------------------------------
// If with branches of different shapes

TEST_CASE("If: branches of different rank give capacity = max and shape_varies", "[shapes]") {
  Model m = load_shaped("if_different_shapes");
  Value* y = value(*m.main, "y");
  CHECK(y->shape_varies);
  CHECK_FALSE(y->type.has_rank);
  CHECK(y->capacity_bytes == 24);
  CHECK(y->type.dtype == DType::Float32);
  check_all_sized(m);
}

namespace {

// If(p) { then: Reshape(x[6], then_shape) } else { Identity(z[z_len]) }
ModelBuilder two_shapes_model(Dims then_shape, Shape z_shape) {
  IfModel b;
  b.input("x", elem::kFloat, {6}).input("z", elem::kFloat, z_shape).condition_input("p");
  add_constant(b.then_branch(), tensor_i64("tshape", {static_cast<int64_t>(then_shape.size())}, then_shape));
  b.then_node("Reshape", {"x", "tshape"}, value_info_unranked("t_out", elem::kFloat), "then_reshape");
  b.else_node("Identity", {"z"}, value_info_unranked("e_out", elem::kFloat), "else_id");
  b.add_if();
  add_output_unranked(b.graph(), "y", elem::kFloat);
  return b;
}

}  // namespace

TEST_CASE("If: branches of different sizes", "[shapes]") {
  SECTION("different rank, the else-branch larger") {
    Model m = two_shapes_model({2, 3}, {10}).import();
    infer_shapes(m, {});
    Value* y = value(*m.main, "y");
    CHECK(y->capacity_bytes == 40);
    CHECK(y->shape_varies);
    CHECK_FALSE(y->type.has_rank);
  }
  SECTION("same rank, different first dim") {
    Model m = two_shapes_model({2, 3}, {4, 3}).import();
    infer_shapes(m, {});
    Value* y = value(*m.main, "y");
    CHECK(y->capacity_bytes == 48);
    CHECK(y->shape_varies);
    REQUIRE(y->type.has_rank);
    REQUIRE(y->type.dims.size() == 2);
    CHECK_FALSE(y->type.dims[0].known());
    CHECK(y->type.dims[1].value == 3);
  }
  SECTION("same shape: static, not varying") {
    Model m = two_shapes_model({2, 3}, {2, 3}).import();
    infer_shapes(m, {});
    check_static(value(*m.main, "y"), {2, 3}, 24);
  }
  SECTION("same element count, different shape") {
    Model m = two_shapes_model({3, 2}, {2, 3}).import();
    infer_shapes(m, {});
    Value* y = value(*m.main, "y");
    CHECK(y->capacity_bytes == 24);
    CHECK(y->shape_varies);
  }
}

TEST_CASE("If: a varying inner If output carries its capacity out of an outer If", "[shapes]") {
  IfModel b;
  b.input("x", elem::kFloat, {6}).input("z", elem::kFloat, {10}).input("w", elem::kFloat, {2}).condition_input("p");
  b.input("q", elem::kBool, {});
  // inner If: x[6] or z[10]
  onnx::GraphProto& ot = b.then_branch();
  ot.set_name("outer_then");
  add_if(ot, "q", {"ot_out"},
         one_node_branch("inner_then", "Identity", {"x"}, value_info_unranked("it_out", elem::kFloat), "it_id"),
         one_node_branch("inner_else", "Identity", {"z"}, value_info_unranked("ie_out", elem::kFloat), "ie_id"),
         "inner_if");
  add_output_unranked(ot, "ot_out", elem::kFloat);
  b.else_branch().set_name("outer_else");
  b.else_node("Identity", {"w"}, value_info_unranked("oe_out", elem::kFloat), "oe_id");
  b.add_if({"y"}, "outer_if");
  add_output_unranked(b.graph(), "y", elem::kFloat);
  Model m = b.import();
  infer_shapes(m, {});
  Graph* ot_ir = m.main->nodes[0]->subgraph("then_branch");
  Value* ot_out = value(*ot_ir, "ot_out");
  CHECK(ot_out->shape_varies);
  CHECK(ot_out->capacity_bytes == 40);
  Value* y = value(*m.main, "y");
  CHECK(y->shape_varies);
  CHECK(y->capacity_bytes == 40);
  check_all_sized(m);
}

TEST_CASE("If: branches of different element types are refused", "[shapes]") {
  IfModel b;
  b.input("x", elem::kFloat, {2}).input("k", elem::kInt64, {2}).condition_input("p");
  b.then_node("Identity", {"x"}, value_info_unranked("t_out", elem::kFloat), "t_id");
  b.else_node("Identity", {"k"}, value_info_unranked("e_out", elem::kInt64), "e_id");
  b.add_if();
  add_output_unranked(b.graph(), "y", elem::kFloat);
  Error err = shape_error(b);
  CHECK(err.kind() == ErrorKind::InvalidInput);
  CHECK_THAT(err.what(), Catch::Contains("'y'") && Catch::Contains("float32") && Catch::Contains("int64"));
}

// ------------------------------------------------------------------------------------------------
// Scan

TEST_CASE("Scan: carried and scan output shapes (scan_sum)", "[shapes]") {
  Model m = load_shaped("scan_sum");
  check_static(value(*m.main, "y"), {3}, 12);
  check_static(value(*m.main, "z"), {5, 3}, 60);
  Graph* body = m.main->nodes[0]->subgraph("body");
  check_static(value(*body, "sum_in"), {3}, 12);
  check_static(value(*body, "next"), {3}, 12);
  check_static(value(*body, "scan_out"), {3}, 12);
  check_all_sized(m);
}

TEST_CASE("Scan: scan_input_axes and scan_output_axes", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "init", elem::kFloat, {3});
  add_input(g, "xs", elem::kFloat, {3, 7});  // scanned along axis 1: 7 slices of [3]
  onnx::GraphProto body;
  body.set_name("body");
  add_untyped_input(body, "s_in");
  add_untyped_input(body, "slice");
  add_node(body, "Add", {"s_in", "slice"}, {"s_out"}, "add");
  add_node(body, "Relu", {"s_out"}, {"emit"}, "relu");
  add_untyped_output(body, "s_out");
  add_untyped_output(body, "emit");
  auto* scan = add_node(g, "Scan", {"init", "xs"}, {"final", "stacked"}, "scan");
  attr_int(scan, "num_scan_inputs", 1);
  attr_ints(scan, "scan_input_axes", {1});
  attr_ints(scan, "scan_output_axes", {-1});
  attr_graph(scan, "body", body);
  add_output_unranked(g, "final", elem::kFloat);
  add_output_unranked(g, "stacked", elem::kFloat);
  Model m = b.import();
  infer_shapes(m, {});
  Graph* body_ir = m.main->nodes[0]->subgraph("body");
  check_static(value(*body_ir, "slice"), {3}, 12);
  check_static(value(*m.main, "final"), {3}, 12);
  check_static(value(*m.main, "stacked"), {3, 7}, 84);
}

// ------------------------------------------------------------------------------------------------
// Capacities, overflow, unknown ops

TEST_CASE("every non-constant value of every example model gets a capacity", "[shapes]") {
  for (const auto& entry : fs::directory_iterator(kModels)) {
    if (!entry.is_directory() || entry.path().filename() == "bad" || !fs::exists(entry.path() / "model.onnx"))
      continue;
    const std::string name = entry.path().filename().string();
    INFO(name);
    ShapeOptions o;
    if (name == "loop_data_dependent_scan") o.bounds["sums"] = {64};
    Model m = load_shaped(name, o);
    check_all_sized(m);
  }
}

TEST_CASE("a carried value that grows gets unknown dims where it grows, the rest of the body stays exact",
          "[shapes][loop]") {
  Model m = load_shaped("loop_growing_state");
  Node& loop = *m.main->nodes[0];
  Graph& body = *loop.subgraph("body");
  // The token history [1, 1] comes back [1, 2]: its second dim is the run's, its first stays 1.
  for (Value* v : {value(body, "ys_in"), value(body, "ys_out"), value(*m.main, "ys")}) {
    INFO(v->name);
    REQUIRE(v->type.has_rank);
    REQUIRE(v->type.dims.size() == 2);
    CHECK(v->type.dims[0].value == 1);
    CHECK_FALSE(v->type.dims[1].known());
    CHECK(v->dynamic);
  }
  CHECK(value(body, "embedded")->dynamic);  // [1, L, 8]
  // What the history is pooled into has its size whatever the length: planned, exact.
  check_static(value(body, "context"), {1, 8}, 32);
  check_static(value(body, "logits"), {1, 11}, 44);
  check_static(value(body, "token"), {1, 1}, 8);
  // The initial value keeps its own exact type: only the slot is the session's.
  check_static(value(*m.main, "start"), {1, 1}, 8);
}

TEST_CASE("example: the If output and every tensor have exact sizes", "[shapes]") {
  Model m = load_shaped("example");
  const uint64_t big = 8 * 112 * 112 * 4;
  for (const char* n : {"input", "add_in", "conv_out", "relu_out", "if_out", "output"})
    check_static(value(*m.main, n), {1, 8, 112, 112}, big);
  check_static(value(*m.main, "cond"), {}, 1);
  // No node was folded away and the If stays (its condition is a run-time input).
  CHECK(node_names(*m.main) == std::vector<std::string>{"conv0", "relu0", "if0", "add_out"});
}

TEST_CASE("overflow: sizes that do not fit 64 bits are refused", "[shapes]") {
  const int64_t big = int64_t{1} << 40;
  SECTION("a Reshape target") {
    ModelBuilder b;
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {4});
    add_initializer(g, tensor_i64("target", {3}, {big, big, 16}));
    add_node(g, "Reshape", {"x", "target"}, {"y"}, "reshape");
    add_output_unranked(g, "y", elem::kFloat);
    Error e = shape_error(b);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("m.onnx") && Catch::Contains("'y'") && Catch::Contains("overflows"));
  }
  SECTION("a Reshape target of a constant (folded)") {
    ModelBuilder b;
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {4});
    add_initializer(g, tensor_f32("c", {4}, {1.f, 2.f, 3.f, 4.f}));
    add_initializer(g, tensor_i64("target", {3}, {big, big, 16}));
    add_node(g, "Reshape", {"c", "target"}, {"cr"}, "reshape");
    add_node(g, "Add", {"x", "cr"}, {"y"}, "add");
    add_output_unranked(g, "y", elem::kFloat);
    Error e = shape_error(b);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("overflows"));
  }
  SECTION("an input shape (overflow_dims.onnx)") {
    const std::string path = (kModels / "bad" / "overflow_dims.onnx").string();
    Model m = import_model(path);
    try {
      infer_shapes(m, {});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("'x'") && Catch::Contains("overflows"));
    }
  }
  SECTION("a --shape") {
    ShapeOptions o;
    o.input_shapes["x"] = {big, big, 16};
    Error e = shape_error(relu_model({"A", "B", "C"}), o);
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("overflows"));
  }
  SECTION("a --bound") {
    ShapeOptions o;
    o.bounds["sums"] = {big, big, 16};
    Model m = load("loop_data_dependent_scan");
    try {
      infer_shapes(m, o);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      CHECK_THAT(e.what(), Catch::Contains("'sums'") && Catch::Contains("overflows"));
    }
  }
}

TEST_CASE("unknown ops are listed in one Unsupported error", "[shapes]") {
  SECTION("unknown_domain.onnx") {
    const std::string path = (kModels / "bad" / "unknown_domain.onnx").string();
    Model m = import_model(path);
    try {
      infer_shapes(m, {});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Unsupported);
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("Foo") &&
                               Catch::Contains("com.example.unknown") && Catch::Contains("'foo'"));
    }
  }
  SECTION("several unknown ops, one in a subgraph") {
    ModelBuilder b;
    b.add_opset("com.x", 1);
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {2});
    add_initializer(g, tensor_i64("M", {}, {2}));
    add_node(g, "Bar", {"x"}, {"a"}, "bar")->set_domain("com.x");
    add_node(g, "NoSuchOp", {"a"}, {"b"}, "nosuch");
    onnx::GraphProto body = loop_body_skeleton("body");
    add_input(body, "acc", elem::kFloat, {2});
    add_node(body, "Baz", {"acc"}, {"acc_out"}, "baz")->set_domain("com.x");
    add_output(body, "acc_out", elem::kFloat, {2});
    attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", body);
    add_output(g, "b", elem::kFloat, {2});
    add_output(g, "y", elem::kFloat, {2});
    Error e = shape_error(b);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("Bar") && Catch::Contains("NoSuchOp") && Catch::Contains("Baz"));
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("an unread optional output is dropped", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  add_node(g, "Dropout", {"x"}, {"y", "mask"}, "dropout");
  add_output(g, "y", elem::kFloat, {2, 3});
  Model m = b.import();
  infer_shapes(m, {});
  REQUIRE(m.main->nodes.size() == 1);
  REQUIRE(m.main->nodes[0]->outputs.size() == 2);
  CHECK(m.main->nodes[0]->outputs[1] == nullptr);
  CHECK(m.main->find_local("mask") == nullptr);
  check_static(value(*m.main, "y"), {2, 3}, 24);
}

TEST_CASE("folding a Cast of NaN or out-of-range floats to integers gives the kernel's answer, never UB", "[shapes]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kInt32, {3});
  add_initializer(g, tensor_f32("f", {3}, {std::numeric_limits<float>::quiet_NaN(), 1e20f, -3.7f}));
  attr_int(add_node(g, "Cast", {"f"}, {"i"}, "cast"), "to", elem::kInt32);
  add_node(g, "Add", {"x", "i"}, {"y"}, "add");
  add_output(g, "y", elem::kInt32, {3});
  Model m = mb.import();
  infer_shapes(m, {});
  const Node* add = find_node(*m.main, "add");
  REQUIRE(add);
  const Value* folded = add->inputs[1];
  REQUIRE(folded->constant);
  // As x86 (and the Cast kernel): NaN and out-of-range values give INT32_MIN; in range truncates.
  CHECK(folded->constant->int_at(0) == std::numeric_limits<int32_t>::min());
  CHECK(folded->constant->int_at(1) == std::numeric_limits<int32_t>::min());
  CHECK(folded->constant->int_at(2) == -3);
}

// PyTorch's for-loops (torch.jit.script, then torch.onnx.export) end their Loop body with
// Identity(<a main-graph Constant>) as the condition. Constant folding deletes that Identity node
// while the body is inferred; its output, now a constant, must not keep pointing at the deleted
// node (Loop inference follows the condition through Identity producers afterwards). This used to
// crash `memplan compile` on every scripted for-loop.
TEST_CASE("Loop: a body condition folded from an outer Constant (torch's for-loop)", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_constant(g, tensor_i64("M", {}, {3}));
  add_constant(g, tensor_bool("keep_going", {}, {1}));
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "i", elem::kInt64, {});
  add_input(body, "c", elem::kBool, {});
  add_input(body, "acc", elem::kFloat, {4});
  add_node(body, "Neg", {"acc"}, {"acc_out"}, "neg");
  add_node(body, "Identity", {"keep_going"}, {"c_out"}, "pass_outer_cond");
  add_output(body, "c_out", elem::kBool, {});
  add_output(body, "acc_out", elem::kFloat, {4});
  attr_graph(add_node(g, "Loop", {"M", "keep_going", "x"}, {"y"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {4});
  Model m = b.import();
  infer_shapes(m, {});
  const Node* loop = find_node(*m.main, "loop");
  REQUIRE(loop);
  const Graph* folded_body = loop->subgraph("body");
  REQUIRE(folded_body);
  const Value* cond_out = folded_body->outputs[0];
  REQUIRE(cond_out->constant);
  CHECK(cond_out->producer == nullptr);
  CHECK(find_node(*folded_body, "pass_outer_cond") == nullptr);
  CHECK(dims_of(loop->outputs[0]) == std::vector<int64_t>{4});
}
