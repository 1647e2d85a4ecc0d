// The importer: every example model, graph nesting, name resolution through scopes (captures,
// shadowing), topological order, initializers and Constant nodes, external data, version limits.
#include "onnx/importer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "memplan/error.h"
#include "shapes/shape_inference.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace memplan;
using namespace memplan::test;

const fs::path kModels = fs::path(MEMPLAN_SOURCE_DIR) / "models";

Model load(const std::string& name) { return import_model((kModels / name / "model.onnx").string()); }

std::vector<fs::path> example_model_files() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kModels))
    if (entry.is_directory() && entry.path().filename() != "bad" && fs::exists(entry.path() / "model.onnx"))
      out.push_back(entry.path() / "model.onnx");
  std::sort(out.begin(), out.end());
  return out;
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

bool contains(const std::vector<Value*>& list, const Value* v) { return std::find(list.begin(), list.end(), v) != list.end(); }
bool contains(const std::vector<Node*>& list, const Node* n) { return std::find(list.begin(), list.end(), n) != list.end(); }

std::vector<std::string> names_of(const std::vector<Value*>& list) {
  std::vector<std::string> out;
  for (const Value* v : list) out.push_back(v->name);
  return out;
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n->name);
  return out;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  REQUIRE(t.bytes.size() == t.element_count() * sizeof(T));
  std::vector<T> out(t.element_count());
  if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
  return out;
}

// Checks the structural invariants an imported graph tree must satisfy.
void check_invariants(Graph& main) {
  for_each_graph(main, [&](Graph& g) {
    if (&g != &main) {
      REQUIRE(g.owner != nullptr);
      CHECK(g.owner->graph == g.parent);
      CHECK(g.depth == g.parent->depth + 1);
    }
    for (const auto& v : g.values) CHECK(v->graph == &g);
    std::set<const Value*> defined;
    for (Value* v : g.inputs) defined.insert(v);
    for (const auto& v : g.values)
      if (v->constant) defined.insert(v.get());
    for (const auto& n : g.nodes) {
      CHECK(n->graph == &g);
      CHECK_FALSE(n->name.empty());
      for (Value* in : n->inputs) {
        if (!in) continue;
        // Local inputs are defined earlier in the order; outer ones are captured by this graph.
        if (in->graph == &g) CHECK(defined.count(in) == 1);
        else CHECK(contains(g.captures, in));
      }
      for (Value* out : n->outputs)
        if (out) {
          CHECK(out->producer == n.get());
          defined.insert(out);
        }
    }
  });
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Example models

TEST_CASE("every example model imports", "[import]") {
  const auto files = example_model_files();
  REQUIRE(files.size() >= 9);
  for (const auto& file : files) {
    INFO(file.string());
    Model m = import_model(file.string());
    REQUIRE(m.main);
    CHECK(m.path == file.string());
    CHECK(m.ir_version == 8);
    CHECK(m.opsets.at("") == 17);
    CHECK(m.sha256.size() == 64);
    CHECK_FALSE(m.main->nodes.empty());
    CHECK(m.main->depth == 0);
    CHECK(m.main->parent == nullptr);
    check_invariants(*m.main);
  }
}

TEST_CASE("importing the same file twice gives the same IR", "[import]") {
  Model a = load("nested_if_loop_if");
  Model b = load("nested_if_loop_if");
  CHECK(a.sha256 == b.sha256);
  std::vector<std::string> na, nb;
  for_each_graph(*a.main, [&](Graph& g) { for (auto& n : node_names(g)) na.push_back(g.path() + "/" + n); });
  for_each_graph(*b.main, [&](Graph& g) { for (auto& n : node_names(g)) nb.push_back(g.path() + "/" + n); });
  CHECK(na == nb);
}

TEST_CASE("example: graph nesting, node counts and captures", "[import]") {
  Model m = load("example");
  Graph& main = *m.main;
  CHECK(main.name == "example");
  CHECK(node_names(main) == std::vector<std::string>{"conv0", "relu0", "if0", "add_out"});
  CHECK(names_of(main.inputs) == std::vector<std::string>{"input", "cond", "add_in"});
  CHECK(names_of(main.initializers) == std::vector<std::string>{"w0", "b0", "w1", "b1", "trip_count"});
  CHECK(names_of(main.outputs) == std::vector<std::string>{"output"});
  CHECK(main.captures.empty());
  CHECK(count_graphs(main) == 4);
  CHECK(count_nodes_recursive(main) == 4 + 2 + 1 + 2);

  Node* if0 = find_node(main, "if0");
  REQUIRE(if0);
  CHECK(if0->is_control_flow());
  REQUIRE(if0->subgraphs.size() == 2);
  Graph* then_g = if0->subgraph("then_branch");
  Graph* else_g = if0->subgraph("else_branch");
  REQUIRE(then_g);
  REQUIRE(else_g);
  CHECK(then_g->owner == if0);
  CHECK(then_g->parent == &main);
  CHECK(then_g->owner_attribute == "then_branch");
  CHECK(else_g->owner_attribute == "else_branch");
  CHECK(then_g->depth == 1);
  CHECK(node_names(*then_g) == std::vector<std::string>{"then_conv", "loop"});
  // The else-branch's Constant became a constant value, not a node.
  CHECK(node_names(*else_g) == std::vector<std::string>{"else_mul"});
  REQUIRE(else_g->find_local("else_scale"));
  CHECK(else_g->find_local("else_scale")->is_constant());

  Node* loop = find_node(*then_g, "loop");
  REQUIRE(loop);
  Graph* body = loop->subgraph("body");
  REQUIRE(body);
  CHECK(body->depth == 2);
  CHECK(body->parent == then_g);
  CHECK(node_names(*body) == std::vector<std::string>{"loop_add", "loop_cond"});
  CHECK(names_of(body->inputs) == std::vector<std::string>{"loop_iter", "loop_cond_in", "loop_x_in"});
  CHECK(body->captures.empty());

  // The then-branch reads relu_out and the main-graph initializers; the else-branch relu_out.
  CHECK(names_of(then_g->captures) == std::vector<std::string>{"relu_out", "w1", "b1", "trip_count"});
  CHECK(names_of(else_g->captures) == std::vector<std::string>{"relu_out"});
  Value* relu_out = main.find_local("relu_out");
  REQUIRE(relu_out);
  CHECK(contains(relu_out->consumers, if0));
  CHECK(contains(if0->implicit_inputs, relu_out));
  CHECK(contains(if0->implicit_inputs, main.find_local("w1")));
  CHECK(contains(if0->implicit_inputs, main.find_local("trip_count")));
  CHECK_FALSE(contains(if0->implicit_inputs, main.find_local("w0")));
  // The Loop's trip count resolves to the main-graph initializer.
  CHECK(loop->inputs[0] == main.find_local("trip_count"));
  CHECK(loop->inputs[1] == nullptr);  // "" = omitted
}

TEST_CASE("nested_if_loop_if: three levels of subgraphs", "[import]") {
  Model m = load("nested_if_loop_if");
  Graph& main = *m.main;
  CHECK(count_graphs(main) == 6);
  CHECK(count_nodes_recursive(main) == 9);
  REQUIRE(main.nodes.size() == 1);
  Node* outer_if = main.nodes[0].get();
  CHECK(outer_if->op_type == "If");
  Graph* outer_then = outer_if->subgraph("then_branch");
  Graph* outer_else = outer_if->subgraph("else_branch");
  REQUIRE(outer_then);
  REQUIRE(outer_else);
  CHECK(node_names(*outer_then) == std::vector<std::string>{"loop"});
  CHECK(node_names(*outer_else) == std::vector<std::string>{"outer_sub"});
  Graph* body = outer_then->nodes[0]->subgraph("body");
  REQUIRE(body);
  CHECK(body->depth == 2);
  CHECK(node_names(*body) == std::vector<std::string>{"mod", "even", "inner_if", "pass_cond"});
  Node* inner_if = find_node(*body, "inner_if");
  REQUIRE(inner_if);
  Graph* inner_then = inner_if->subgraph("then_branch");
  Graph* inner_else = inner_if->subgraph("else_branch");
  REQUIRE(inner_then);
  REQUIRE(inner_else);
  CHECK(inner_then->depth == 3);
  CHECK(inner_else->depth == 3);
  CHECK(node_names(*inner_then) == std::vector<std::string>{"inner_add"});
  CHECK(node_names(*inner_else) == std::vector<std::string>{"inner_mul"});

  // The inner branches read the body's carried input `acc`: the inner If consumes it.
  Value* acc = body->find_local("acc");
  REQUIRE(acc);
  CHECK(acc->is_graph_input);
  CHECK(names_of(inner_then->captures) == std::vector<std::string>{"acc"});
  CHECK(names_of(inner_else->captures) == std::vector<std::string>{"acc"});
  CHECK(inner_then->nodes[0]->inputs[0] == acc);
  CHECK(contains(inner_if->implicit_inputs, acc));
  CHECK(contains(acc->consumers, inner_if));
  CHECK(body->captures.empty());
  // Both outer branches read main's x.
  Value* x = main.find_local("x");
  CHECK(names_of(outer_then->captures) == std::vector<std::string>{"x"});
  CHECK(names_of(outer_else->captures) == std::vector<std::string>{"x"});
  CHECK(names_of(outer_if->implicit_inputs) == std::vector<std::string>{"x"});
  CHECK(contains(x->consumers, outer_if));
}

TEST_CASE("capture_two_levels: a body reads a main-graph value two levels up", "[import]") {
  Model m = load("capture_two_levels");
  Graph& main = *m.main;
  Node* if_node = find_node(main, "if");
  REQUIRE(if_node);
  Graph* then_g = if_node->subgraph("then_branch");
  Graph* else_g = if_node->subgraph("else_branch");
  REQUIRE(then_g);
  Node* loop = find_node(*then_g, "loop");
  REQUIRE(loop);
  Graph* body = loop->subgraph("body");
  REQUIRE(body);

  Value* outer_val = main.find_local("outer_val");
  REQUIRE(outer_val);
  Node* body_add = find_node(*body, "body_add");
  REQUIRE(body_add);
  CHECK(body_add->inputs[1] == outer_val);
  // Every graph between the reader and the value's scope lists the capture ...
  CHECK(contains(body->captures, outer_val));
  CHECK(contains(then_g->captures, outer_val));
  CHECK(contains(else_g->captures, outer_val));
  CHECK(names_of(then_g->captures) == std::vector<std::string>{"x", "outer_val"});
  // ... and the control-flow node in the value's own scope consumes it.
  CHECK(contains(if_node->implicit_inputs, outer_val));
  CHECK(contains(outer_val->consumers, if_node));
  CHECK_FALSE(contains(outer_val->consumers, loop));  // the Loop is not in outer_val's scope
}

TEST_CASE("capture_two_levels: a subgraph input shadows the outer value of the same name", "[import]") {
  Model m = load("capture_two_levels");
  Graph& main = *m.main;
  Node* if_node = find_node(main, "if");
  Graph* body = find_node(*if_node->subgraph("then_branch"), "loop")->subgraph("body");
  Value* outer_shadow = main.find_local("shadow");
  Value* inner_shadow = body->find_local("shadow");
  REQUIRE(outer_shadow);
  REQUIRE(inner_shadow);
  CHECK(outer_shadow != inner_shadow);
  CHECK(inner_shadow == body->inputs[2]);
  CHECK(body->lookup("shadow") == inner_shadow);
  Node* body_add = find_node(*body, "body_add");
  CHECK(body_add->inputs[0] == inner_shadow);
  // The main-graph `shadow` is read only by final_add: no subgraph captures it.
  CHECK(outer_shadow->consumers == std::vector<Node*>{find_node(main, "final_add")});
  CHECK_FALSE(contains(if_node->implicit_inputs, outer_shadow));
  for_each_graph(main, [&](Graph& g) { CHECK_FALSE(contains(g.captures, outer_shadow)); });
}

TEST_CASE("shadow_node_output: a branch node output named like an outer value resolves locally", "[import]") {
  // Not valid ONNX (not SSA); memplan accepts it and resolves inner uses to the inner value.
  Model m = import_model((kModels / "bad" / "shadow_node_output.onnx").string());
  Node* if_node = find_node(*m.main, "if");
  REQUIRE(if_node);
  Value* outer = m.main->find_local("outer_val");
  Graph* else_g = if_node->subgraph("else_branch");
  Graph* then_g = if_node->subgraph("then_branch");
  Value* inner = else_g->find_local("outer_val");
  REQUIRE(inner);
  CHECK(inner != outer);
  CHECK(find_node(*else_g, "else_sub")->inputs[0] == inner);
  CHECK(find_node(*then_g, "then_id")->inputs[0] == outer);
  CHECK_FALSE(contains(else_g->captures, outer));
}

// ------------------------------------------------------------------------------------------------
// Hand-built scoping cases

TEST_CASE("hand-built: shadowing resolves to the nearest scope at every depth", "[import]") {
  // main: v = Relu(x); Loop(M, "", x) with body input "v"; inside the body an If whose then-branch
  // reads "v" (the body's input, one level up) and whose else-branch reads "w" (main, two up).
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_input(g, "c", elem::kBool, {});
  add_initializer(g, tensor_i64("M", {}, {2}));
  add_node(g, "Relu", {"x"}, {"v"}, "outer_v");
  add_node(g, "Neg", {"x"}, {"w"}, "outer_w");

  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "v", elem::kFloat, {4});
  add_if(body, "c", {"v_next"},
         one_node_branch("then", "Neg", {"v"}, value_info("t_out", elem::kFloat, {4}), "then_neg"),
         one_node_branch("else", "Abs", {"w"}, value_info("e_out", elem::kFloat, {4}), "else_abs"), "inner_if");
  add_output(body, "v_next", elem::kFloat, {4});

  auto* loop = add_node(g, "Loop", {"M", "", "x"}, {"y"}, "loop");
  attr_graph(loop, "body", body);
  add_node(g, "Add", {"y", "v"}, {"z"}, "final");
  add_output(g, "z", elem::kFloat, {4});

  Model m = b.import();
  Graph& main = *m.main;
  Node* loop_n = find_node(main, "loop");
  Graph* body_g = loop_n->subgraph("body");
  Node* if_n = find_node(*body_g, "inner_if");
  Graph* then_ir = if_n->subgraph("then_branch");
  Graph* else_ir = if_n->subgraph("else_branch");
  Value* main_v = main.find_local("v");
  Value* main_w = main.find_local("w");
  Value* body_v = body_g->find_local("v");
  REQUIRE(body_v);
  CHECK(body_v->is_graph_input);
  CHECK(then_ir->nodes[0]->inputs[0] == body_v);
  CHECK(else_ir->nodes[0]->inputs[0] == main_w);
  // Captures: then-branch [v(body)], else-branch [w], body [c, w] (c: the If's condition).
  CHECK(then_ir->captures == std::vector<Value*>{body_v});
  CHECK(contains(else_ir->captures, main_w));
  CHECK(contains(body_g->captures, main_w));
  CHECK_FALSE(contains(body_g->captures, main_v));
  CHECK(contains(if_n->implicit_inputs, body_v));
  CHECK(contains(body_v->consumers, if_n));
  // main's v: read by final (directly), not by the Loop.
  CHECK(main_v->consumers == std::vector<Node*>{find_node(main, "final")});
  CHECK(contains(loop_n->implicit_inputs, main_w));
  CHECK(contains(main_w->consumers, loop_n));
  CHECK_FALSE(contains(loop_n->implicit_inputs, main_v));
}

TEST_CASE("hand-built: a capture three levels up", "[import]") {
  // main -> If(a) -> If(b) -> If(c): the innermost then-branch reads main's `deep`.
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_input(g, "p", elem::kBool, {});
  add_node(g, "Sigmoid", {"x"}, {"deep"}, "make_deep");
  auto* if1 = add_node(g, "If", {"p"}, {"y"}, "if1");
  add_output(g, "y", elem::kFloat, {2});
  onnx::GraphProto* level = nullptr;
  auto make_branches = [&](onnx::NodeProto* node, int depth, const std::string& out) {
    auto* then_a = add_attr(node, "then_branch", onnx::AttributeProto::GRAPH);
    auto* else_a = add_attr(node, "else_branch", onnx::AttributeProto::GRAPH);
    onnx::GraphProto* t = then_a->mutable_g();
    onnx::GraphProto* e = else_a->mutable_g();
    t->set_name("then" + std::to_string(depth));
    e->set_name("else" + std::to_string(depth));
    add_node(*e, "Identity", {"x"}, {"e" + std::to_string(depth)}, "else_id" + std::to_string(depth));
    add_output(*e, "e" + std::to_string(depth), elem::kFloat, {2});
    add_output(*t, out, elem::kFloat, {2});
    return t;
  };
  level = make_branches(if1, 1, "t1");
  auto* if2 = add_node(*level, "If", {"p"}, {"t1"}, "if2");
  level = make_branches(if2, 2, "t2");
  auto* if3 = add_node(*level, "If", {"p"}, {"t2"}, "if3");
  level = make_branches(if3, 3, "t3");
  add_node(*level, "Relu", {"deep"}, {"t3"}, "reads_deep");

  Model m = b.import();
  Graph& main = *m.main;
  Value* deep = main.find_local("deep");
  Node* n1 = find_node(main, "if1");
  Graph* g1 = n1->subgraph("then_branch");
  Node* n2 = find_node(*g1, "if2");
  Graph* g2 = n2->subgraph("then_branch");
  Node* n3 = find_node(*g2, "if3");
  Graph* g3 = n3->subgraph("then_branch");
  CHECK(g3->depth == 3);
  CHECK(g3->nodes[0]->inputs[0] == deep);
  for (Graph* sub : {g1, g2, g3}) CHECK(contains(sub->captures, deep));
  CHECK_FALSE(contains(n1->subgraph("else_branch")->captures, deep));
  CHECK(contains(n1->implicit_inputs, deep));
  CHECK(contains(deep->consumers, n1));
  CHECK(deep->consumers.size() == 1);
  // The producer of `deep` runs before the If that reads it through three levels.
  CHECK(node_names(main) == std::vector<std::string>{"make_deep", "if1"});
}

TEST_CASE("hand-built: a subgraph that reads an outer value defined later in the file is ordered after it",
          "[import]") {
  IfModel b;
  b.input("x", elem::kFloat, {2}).condition_input("p");
  b.then_node("Identity", {"late"}, value_info("t_out", elem::kFloat, {2}), "t_id");
  b.else_node("Identity", {"x"}, value_info("e_out", elem::kFloat, {2}), "e_id");
  b.add_if();  // first in the file, reads `late` implicitly
  add_node(b.graph(), "Exp", {"x"}, {"late"}, "make_late");
  add_output(b.graph(), "y", elem::kFloat, {2});
  Model m = b.import();
  CHECK(node_names(*m.main) == std::vector<std::string>{"make_late", "if"});
}

// ------------------------------------------------------------------------------------------------
// Order

namespace {

// x -> a = Relu(x) -> b = Neg(a) -> c = Add(a, b); d = Sigmoid(x). Nodes listed in `order`.
ModelBuilder chain_model(const std::vector<std::string>& order) {
  ModelBuilder b("chain");
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {3});
  for (const auto& name : order) {
    if (name == "n1") add_node(g, "Relu", {"x"}, {"a"}, "n1");
    if (name == "n2") add_node(g, "Neg", {"a"}, {"b"}, "n2");
    if (name == "n3") add_node(g, "Add", {"a", "b"}, {"c"}, "n3");
    if (name == "n4") add_node(g, "Sigmoid", {"x"}, {"d"}, "n4");
  }
  add_output(g, "c", elem::kFloat, {3});
  add_output(g, "d", elem::kFloat, {3});
  return b;
}

bool is_topological(const Graph& g) {
  std::set<const Value*> ready(g.inputs.begin(), g.inputs.end());
  for (const auto& v : g.values)
    if (v->constant) ready.insert(v.get());
  for (const auto& n : g.nodes) {
    for (const Value* in : n->inputs)
      if (in && in->graph == &g && !ready.count(in)) return false;
    for (const Value* out : n->outputs) ready.insert(out);
  }
  return true;
}

}  // namespace

TEST_CASE("topological order: a valid file order is kept", "[import]") {
  Model m = chain_model({"n1", "n4", "n2", "n3"}).import();
  CHECK(node_names(*m.main) == std::vector<std::string>{"n1", "n4", "n2", "n3"});
}

TEST_CASE("topological order: a shuffled file is sorted deterministically", "[import]") {
  // File order n3, n2, n4, n1: Kahn with the file index as priority gives n4, n1, n2, n3.
  Model m = chain_model({"n3", "n2", "n4", "n1"}).import();
  CHECK(is_topological(*m.main));
  CHECK(node_names(*m.main) == std::vector<std::string>{"n4", "n1", "n2", "n3"});
  for (int k = 0; k < 3; ++k) {
    Model again = chain_model({"n3", "n2", "n4", "n1"}).import();
    CHECK(node_names(*again.main) == node_names(*m.main));
  }
  // Every permutation sorts to a valid order, the same for the same file.
  std::vector<std::string> perm{"n1", "n2", "n3", "n4"};
  do {
    INFO(perm[0] << perm[1] << perm[2] << perm[3]);
    Model p = chain_model(perm).import();
    CHECK(is_topological(*p.main));
    CHECK(node_names(*p.main) == node_names(*chain_model(perm).import().main));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_CASE("topological order: subgraph nodes are sorted too", "[import]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_initializer(g, tensor_i64("M", {}, {2}));
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "acc", elem::kFloat, {3});
  add_node(body, "Neg", {"t"}, {"acc_out"}, "second");  // listed before its producer
  add_node(body, "Relu", {"acc"}, {"t"}, "first");
  add_output(body, "acc_out", elem::kFloat, {3});
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {3});
  Model m = b.import();
  Graph* body_ir = m.main->nodes[0]->subgraph("body");
  CHECK(node_names(*body_ir) == std::vector<std::string>{"pass_cond", "first", "second"});
}

TEST_CASE("a cycle is refused naming a node on it", "[import]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_node(g, "Add", {"x", "q"}, {"p"}, "P");
  add_node(g, "Relu", {"p"}, {"q"}, "Q");
  add_output(g, "p", elem::kFloat, {3});
  try {
    b.import("cyc.onnx");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("cyc.onnx") && Catch::Contains("cycle"));
  }
}

// ------------------------------------------------------------------------------------------------
// Initializers and constants

TEST_CASE("initializers from raw_data and from the typed fields", "[import]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_initializer(g, tensor_f32("raw_f", {2}, {1.5f, -2.f}));
  add_initializer(g, tensor_i64("raw_i", {3}, {7, -8, 1LL << 40}));

  onnx::TensorProto tf;
  tf.set_name("typed_f");
  tf.set_data_type(onnx::TensorProto::FLOAT);
  tf.add_dims(2);
  tf.add_dims(2);
  for (float v : {0.5f, 1.f, -3.25f, 8.f}) tf.add_float_data(v);
  add_initializer(g, tf);

  onnx::TensorProto ti64;
  ti64.set_name("typed_i64");
  ti64.set_data_type(onnx::TensorProto::INT64);
  ti64.add_dims(2);
  ti64.add_int64_data(-5);
  ti64.add_int64_data(INT64_MAX);
  add_initializer(g, ti64);

  onnx::TensorProto ti8;  // int8 travels in int32_data
  ti8.set_name("typed_i8");
  ti8.set_data_type(onnx::TensorProto::INT8);
  ti8.add_dims(3);
  for (int v : {-128, 127, -1}) ti8.add_int32_data(v);
  add_initializer(g, ti8);

  onnx::TensorProto tb;  // bool travels in int32_data
  tb.set_name("typed_bool");
  tb.set_data_type(onnx::TensorProto::BOOL);
  tb.add_dims(4);
  for (int v : {1, 0, 0, 1}) tb.add_int32_data(v);
  add_initializer(g, tb);

  onnx::TensorProto ti32;
  ti32.set_name("typed_i32");
  ti32.set_data_type(onnx::TensorProto::INT32);
  ti32.add_int32_data(-123456);  // a scalar: no dims
  add_initializer(g, ti32);

  add_node(g, "Add", {"x", "raw_f"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {2});
  Model m = b.import();
  Graph& main = *m.main;
  CHECK(main.inputs.size() == 1);
  CHECK(main.initializers.size() == 7);

  auto get = [&](const std::string& n) -> const Tensor& {
    Value* v = main.find_local(n);
    REQUIRE(v);
    REQUIRE(v->is_constant());
    CHECK_FALSE(v->is_graph_input);
    CHECK(v->type.is_static());
    CHECK(v->type.dtype == v->constant->dtype);
    return *v->constant;
  };
  CHECK(get("raw_f").dtype == DType::Float32);
  CHECK(values_of<float>(get("raw_f")) == std::vector<float>{1.5f, -2.f});
  CHECK(values_of<int64_t>(get("raw_i")) == std::vector<int64_t>{7, -8, 1LL << 40});
  CHECK(get("typed_f").dims == std::vector<int64_t>{2, 2});
  CHECK(values_of<float>(get("typed_f")) == std::vector<float>{0.5f, 1.f, -3.25f, 8.f});
  CHECK(values_of<int64_t>(get("typed_i64")) == std::vector<int64_t>{-5, INT64_MAX});
  CHECK(get("typed_i8").dtype == DType::Int8);
  CHECK(values_of<int8_t>(get("typed_i8")) == std::vector<int8_t>{-128, 127, -1});
  CHECK(get("typed_bool").dtype == DType::Bool);
  CHECK(values_of<uint8_t>(get("typed_bool")) == std::vector<uint8_t>{1, 0, 0, 1});
  CHECK(get("typed_i32").dims.empty());
  CHECK(values_of<int32_t>(get("typed_i32")) == std::vector<int32_t>{-123456});
  CHECK(get("typed_i32").int_at(0) == -123456);
}

TEST_CASE("an initializer also listed as a graph input (IR < 4 style) is a constant, not an input", "[import]") {
  ModelBuilder b("old_style", 17, 3);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_input(g, "w", elem::kFloat, {2});
  add_initializer(g, tensor_f32("w", {2}, {1.f, 2.f}));
  add_node(g, "Mul", {"x", "w"}, {"y"}, "mul");
  add_output(g, "y", elem::kFloat, {2});
  Model m = b.import();
  CHECK(names_of(m.main->inputs) == std::vector<std::string>{"x"});
  CHECK(m.main->find_local("w")->is_constant());
}

TEST_CASE("an initializer whose data does not match its shape is refused", "[import]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_initializer(g, tensor_f32("w", {3}, {1.f, 2.f}));  // 8 bytes for 3 floats
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {3});
  try {
    b.import("short.onnx");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("short.onnx") && Catch::Contains("'w'") && Catch::Contains("12"));
  }
}

TEST_CASE("Constant nodes become constant values", "[import]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_constant(g, tensor_f32("c_value", {3}, {1.f, 2.f, 3.f}));
  attr_float(add_node(g, "Constant", {}, {"c_float"}, "cf"), "value_float", 2.5f);
  attr_ints(add_node(g, "Constant", {}, {"c_ints"}, "ci"), "value_ints", {3, -1, 7});
  attr_int(add_node(g, "Constant", {}, {"c_int"}, "cint"), "value_int", -42);
  attr_floats(add_node(g, "Constant", {}, {"c_floats"}, "cfs"), "value_floats", {0.25f, -4.f});
  add_node(g, "Add", {"x", "c_value"}, {"s1"}, "a1");
  add_node(g, "Mul", {"s1", "c_float"}, {"y"}, "m1");
  add_output(g, "y", elem::kFloat, {3});
  Model m = b.import();
  Graph& main = *m.main;
  // Only the two compute nodes remain.
  CHECK(node_names(main) == std::vector<std::string>{"a1", "m1"});

  Value* cv = main.find_local("c_value");
  REQUIRE(cv);
  REQUIRE(cv->is_constant());
  CHECK(cv->producer == nullptr);
  CHECK(cv->type.dtype == DType::Float32);
  CHECK(dims_of(cv) == std::vector<int64_t>{3});
  CHECK(values_of<float>(*cv->constant) == std::vector<float>{1.f, 2.f, 3.f});

  Value* cf = main.find_local("c_float");
  REQUIRE(cf->is_constant());
  CHECK(cf->type.dtype == DType::Float32);
  CHECK(cf->type.has_rank);
  CHECK(cf->type.dims.empty());  // a scalar
  CHECK(values_of<float>(*cf->constant) == std::vector<float>{2.5f});

  Value* ci = main.find_local("c_ints");
  REQUIRE(ci->is_constant());
  CHECK(ci->type.dtype == DType::Int64);
  CHECK(dims_of(ci) == std::vector<int64_t>{3});
  CHECK(ci->constant->to_ints() == std::vector<int64_t>{3, -1, 7});

  Value* cint = main.find_local("c_int");
  CHECK(cint->constant->dtype == DType::Int64);
  CHECK(cint->constant->dims.empty());
  CHECK(cint->constant->int_at(0) == -42);

  Value* cfs = main.find_local("c_floats");
  CHECK(cfs->constant->dims == std::vector<int64_t>{2});
  CHECK(values_of<float>(*cfs->constant) == std::vector<float>{0.25f, -4.f});

  CHECK(find_node(main, "a1")->inputs[1] == cv);
}

TEST_CASE("anonymous nodes are named <op>_<index>", "[import]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_node(g, "Relu", {"x"}, {"a"});
  add_node(g, "Neg", {"a"}, {"y"});
  add_output(g, "y", elem::kFloat, {3});
  Model m = b.import();
  CHECK(node_names(*m.main) == std::vector<std::string>{"Relu_0", "Neg_1"});
}

// ------------------------------------------------------------------------------------------------
// External data

namespace {

ModelBuilder external_model(const std::string& location, int64_t offset, int64_t length) {
  ModelBuilder b("external");
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {4});
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(4);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (offset >= 0) kv("offset", std::to_string(offset));
  if (length >= 0) kv("length", std::to_string(length));
  add_initializer(g, t);
  add_node(g, "Add", {"x", "w"}, {"y"}, "add_w");
  add_output(g, "y", elem::kFloat, {4});
  return b;
}

std::string float_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

}  // namespace

TEST_CASE("external data inside the model's folder loads", "[import]") {
  TempDir dir("import_test");
  const std::vector<float> w{1.f, -2.f, 3.5f, 0.f};
  SECTION("a file next to the model, whole") {
    write_file(dir.path / "weights.bin", float_bytes(w));
    write_file(dir.path / "model.onnx", external_model("weights.bin", -1, -1).bytes());
  }
  SECTION("a file in a subfolder, at an offset, with a length") {
    write_file(dir.path / "data" / "w.bin", std::string(8, 'z') + float_bytes(w) + std::string(5, 'q'));
    write_file(dir.path / "model.onnx", external_model("data/w.bin", 8, 16).bytes());
  }
  Model m = import_model((dir.path / "model.onnx").string());
  Value* v = m.main->find_local("w");
  REQUIRE(v);
  REQUIRE(v->is_constant());
  CHECK(values_of<float>(*v->constant) == w);
}

TEST_CASE("external data outside the model's folder is refused", "[import]") {
  TempDir dir("import_test");
  write_file(dir.path / "secret.bin", float_bytes({9.f, 9.f, 9.f, 9.f}));
  const fs::path model = dir.path / "m" / "model.onnx";
  std::string location;
  SECTION("a .. path") { location = "../secret.bin"; }
  SECTION("a .. path in the middle") { location = "sub/../../secret.bin"; }
  SECTION("an absolute path") { location = (dir.path / "secret.bin").string(); }
  SECTION("a symbolic link inside the folder that points outside") {
    fs::create_directories(dir.path / "m");
    fs::create_symlink(dir.path / "secret.bin", dir.path / "m" / "link.bin");
    location = "link.bin";
  }
  write_file(model, external_model(location, -1, -1).bytes());
  INFO(location);
  try {
    import_model(model.string());
    FAIL("external data outside the folder was loaded");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains(model.string()) && Catch::Contains("'w'") && Catch::Contains(location));
  }
}

TEST_CASE("external data that is too short or missing is refused", "[import]") {
  TempDir dir("import_test");
  write_file(dir.path / "weights.bin", float_bytes({1.f, 2.f}));
  std::string location = "weights.bin";
  int64_t offset = -1, length = -1;
  SECTION("shorter than the tensor") {}
  SECTION("offset + length past the end") {
    offset = 4;
    length = 16;
  }
  SECTION("offset past the end") { offset = 100; }
  SECTION("a missing file") { location = "nope.bin"; }
  write_file(dir.path / "model.onnx", external_model(location, offset, length).bytes());
  CHECK_THROWS_AS(import_model((dir.path / "model.onnx").string()), Error);
  try {
    import_model((dir.path / "model.onnx").string());
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("'w'"));
  }
}

TEST_CASE("bad/external_outside is refused before any file is opened", "[import]") {
  const std::string path = (kModels / "bad" / "external_outside" / "model.onnx").string();
  try {
    import_model(path);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("../../secret.bin") &&
                             Catch::Contains("leaves the model's folder"));
  }
}

// ------------------------------------------------------------------------------------------------
// Versions and nesting limits

TEST_CASE("opset 24 and IR version 12 are refused as unsupported, opset 23 and IR version 11 are read", "[import]") {
  for (const auto& [opset, ir, refused, says] :
       std::vector<std::tuple<int64_t, int64_t, bool, std::string>>{
           {24, 11, true, "opset 24"}, {17, 12, true, "IR version 12"}, {23, 11, false, ""}, {18, 8, false, ""}}) {
    INFO("opset " << opset << ", IR " << ir);
    ModelBuilder b("versions", opset, ir);
    add_input(b.graph(), "x", elem::kFloat, {2});
    add_node(b.graph(), "Relu", {"x"}, {"y"}, "relu");
    add_output(b.graph(), "y", elem::kFloat, {2});
    if (!refused) {
      CHECK(b.import("versions.onnx").main->nodes.size() == 1);
      continue;
    }
    try {
      b.import("versions.onnx");
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Unsupported);
      CHECK_THAT(e.what(), Catch::Contains("versions.onnx") && Catch::Contains(says));
    }
  }
}

TEST_CASE("an op in a domain the model does not import is refused", "[import]") {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {2});
  add_node(b.graph(), "Foo", {"x"}, {"y"}, "foo")->set_domain("com.example");
  add_output(b.graph(), "y", elem::kFloat, {2});
  try {
    b.import("dom.onnx");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("dom.onnx") && Catch::Contains("com.example") && Catch::Contains("'foo'"));
  }
}

namespace {

// If nested `depth` levels deep through the then-branches, built top-down in place (no copies).
ModelBuilder deep_if_model(int depth) {
  ModelBuilder b("deep");
  auto& g = b.graph();
  add_input(g, "p", elem::kBool, {});
  add_input(g, "x", elem::kFloat, {1});
  add_output(g, "y", elem::kFloat, {1});
  onnx::GraphProto* cur = &g;
  std::string out = "y";
  for (int level = 1; level <= depth; ++level) {
    auto* n = add_node(*cur, "If", {"p"}, {out}, "if" + std::to_string(level));
    onnx::GraphProto* t = add_attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g();
    onnx::GraphProto* e = add_attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g();
    t->set_name("then" + std::to_string(level));
    e->set_name("else" + std::to_string(level));
    // Appended, not "e" + std::to_string(...): GCC 12 -O3 -Wrestrict false positive (PR 105329).
    const std::string e_out = std::string(1, 'e').append(std::to_string(level));
    add_node(*e, "Identity", {"x"}, {e_out}, "else_id" + std::to_string(level));
    add_output(*e, e_out, elem::kFloat, {1});
    out = std::string(1, 't').append(std::to_string(level));
    add_output(*t, out, elem::kFloat, {1});
    cur = t;
  }
  add_node(*cur, "Neg", {"x"}, {out}, "innermost");
  return b;
}

}  // namespace

TEST_CASE("nesting: the deepest allowed level imports, one more is refused, 1000 does not crash", "[import]") {
  SECTION("kMaxGraphNesting levels") {
    Model m = deep_if_model(kMaxGraphNesting).import();
    CHECK(count_graphs(*m.main) == 1 + 2 * static_cast<size_t>(kMaxGraphNesting));
    int deepest = 0;
    for_each_graph(*m.main, [&](Graph& g) { deepest = std::max(deepest, g.depth); });
    CHECK(deepest == kMaxGraphNesting);
    // x is captured by every level and consumed by the outermost If only.
    Value* x = m.main->find_local("x");
    CHECK(x->consumers.size() == 1);
  }
  for (int depth : {kMaxGraphNesting + 1, 1000}) {
    DYNAMIC_SECTION(depth << " levels") {
      try {
        deep_if_model(depth).import("deep.onnx");
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unsupported);
        CHECK_THAT(e.what(), Catch::Contains("deep.onnx") && Catch::Contains("nested more than " +
                                                                               std::to_string(kMaxGraphNesting)));
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Bad files through the API (the CLI tests check the messages and exit codes)

TEST_CASE("bad models raise memplan::Error of the right kind", "[import]") {
  struct Case {
    const char* file;
    ErrorKind kind;
    const char* says;
  };
  const Case cases[] = {
      {"random_bytes.onnx", ErrorKind::InvalidInput, "not a valid ONNX model"},
      {"truncated.onnx", ErrorKind::InvalidInput, "not a valid ONNX model"},
      {"cycle.onnx", ErrorKind::InvalidInput, "cycle"},
      {"dangling_input.onnx", ErrorKind::InvalidInput, "'nowhere'"},
      {"opset24.onnx", ErrorKind::Unsupported, "opset 24"},
      {"float8.onnx", ErrorKind::Unsupported, "float8e4m3fn"},
      {"negative_dim.onnx", ErrorKind::InvalidInput, "-5"},
      {"deep_if_1000.onnx", ErrorKind::Unsupported, "nested more than"},
  };
  for (const Case& c : cases) {
    const std::string path = (kModels / "bad" / c.file).string();
    INFO(path);
    try {
      import_model(path);
      FAIL("imported");
    } catch (const Error& e) {
      CHECK(e.kind() == c.kind);
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains(c.says));
    }
  }
}

TEST_CASE("a model that is not a file is refused", "[import]") {
  try {
    import_model("/nonexistent/dir/model.onnx");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("/nonexistent/dir/model.onnx"));
  }
  CHECK_THROWS_AS(import_model_bytes("", "empty.onnx"), Error);
}

// ------------------------------------------------------------------------------------------------
// Untyped subgraph inputs

TEST_CASE("untyped Loop body inputs get their types from the Loop", "[import][shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  add_initializer(g, tensor_i64("M", {}, {3}));
  onnx::GraphProto body;
  body.set_name("body");
  add_untyped_input(body, "i");
  add_untyped_input(body, "c");
  add_untyped_input(body, "acc");
  add_node(body, "Identity", {"c"}, {"c_out"}, "pass");
  add_node(body, "Relu", {"acc"}, {"acc_out"}, "relu");
  add_untyped_output(body, "c_out");
  add_untyped_output(body, "acc_out");
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {2, 3});
  Model m = b.import();
  Graph* body_ir = m.main->nodes[0]->subgraph("body");
  REQUIRE(body_ir);
  CHECK(body_ir->inputs[0]->type.dtype == DType::Undefined);  // before shape inference
  infer_shapes(m, {});
  CHECK(body_ir->inputs[0]->type.dtype == DType::Int64);
  CHECK(body_ir->inputs[0]->type.has_rank);
  CHECK(body_ir->inputs[0]->type.dims.empty());
  CHECK(body_ir->inputs[1]->type.dtype == DType::Bool);
  CHECK(body_ir->inputs[1]->type.dims.empty());
  CHECK(body_ir->inputs[2]->type.dtype == DType::Float32);
  CHECK(dims_of(body_ir->inputs[2]) == std::vector<int64_t>{2, 3});
  Value* acc_out = body_ir->find_local("acc_out");
  CHECK(acc_out->type.dtype == DType::Float32);
  CHECK(dims_of(acc_out) == std::vector<int64_t>{2, 3});
  CHECK(acc_out->capacity_bytes == 24);
  CHECK(m.main->find_local("y")->capacity_bytes == 24);
}

// ------------------------------------------------------------------------------------------------
// Robustness: damaged files fail with memplan::Error, never a crash or another exception

TEST_CASE("truncated and corrupted models fail cleanly", "[import]") {
  for (const char* name : {"capture_two_levels", "nested_if_loop_if", "scan_sum", "loop_scan_outputs"}) {
    std::ifstream in(kModels / name / "model.onnx", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE_FALSE(bytes.empty());
    auto attempt = [&](const std::string& data, const std::string& what) {
      INFO(name << ": " << what);
      try {
        Model m = import_model_bytes(data, "damaged.onnx");
        infer_shapes(m, {});
      } catch (const Error& e) {
        CHECK(e.kind() != ErrorKind::Internal);
        CHECK_THAT(e.what(), Catch::Contains("damaged.onnx"));
      } catch (const std::exception& e) {
        FAIL("not a memplan::Error: " << e.what());
      }
    };
    for (size_t len = 0; len < bytes.size(); ++len) attempt(bytes.substr(0, len), "cut at " + std::to_string(len));
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    auto next = [&] {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      return seed;
    };
    for (int k = 0; k < 2000; ++k) {
      std::string data = bytes;
      const int changes = 1 + static_cast<int>(next() % 3);
      std::string what = "bytes changed:";
      for (int c = 0; c < changes; ++c) {
        const size_t pos = next() % data.size();
        data[pos] = static_cast<char>(next() & 0xff);
        what.append(1, ' ').append(std::to_string(pos));
      }
      attempt(data, what);
    }
  }
}

// Names come from the file: a name holding a newline must not split the one-line message.
TEST_CASE("error messages stay on one line when names hold control characters", "[import]") {
  ModelBuilder b("graph\nname");
  add_input(b.graph(), "x", elem::kFloat, {2});
  add_node(b.graph(), "Add", {"x", "no\nwhere"}, {"y"}, "add\rnode");
  add_output(b.graph(), "y", elem::kFloat, {2});
  try {
    b.import("ctl.onnx");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    const std::string msg = e.what();
    INFO(msg);
    CHECK(std::none_of(msg.begin(), msg.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
  }
}

TEST_CASE("a float constant read as an integer is defined for NaN and values past int64, as a Cast gives", "[import]") {
  // Sizes and indices are read from constants of any dtype; a float far out of range must not be
  // undefined behaviour (a UBSan finding in a fuzzer), and reads as x86's Cast does.
  Tensor t;
  t.dtype = DType::Float32;
  t.dims = {4};
  const float values[] = {-2.75f, 1e30f, -1e30f, std::numeric_limits<float>::quiet_NaN()};
  t.bytes.resize(sizeof values);
  std::memcpy(t.bytes.data(), values, sizeof values);
  CHECK(t.int_at(0) == -2);
  CHECK(t.int_at(1) == std::numeric_limits<int64_t>::min());
  CHECK(t.int_at(2) == std::numeric_limits<int64_t>::min());
  CHECK(t.int_at(3) == std::numeric_limits<int64_t>::min());
}
