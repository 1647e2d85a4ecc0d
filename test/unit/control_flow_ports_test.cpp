// How If, Loop and Scan ports meet their subgraphs' (ir/control_flow_ports.h), and the control-flow
// outputs that nothing reads: their subgraph outputs get memory of their own, never a write
// through the parent buffer the node does not have (found by fuzzing: a Scan whose scan output
// nothing reads wrote through a null pointer).
#include <catch2/catch.hpp>

#include <fstream>

#include "ir/control_flow_ports.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// A node of `op` with `inputs` inputs (all present) and `outputs` outputs; num_scan_inputs for Scan.
Node control_node(const std::string& op, int64_t opset, size_t inputs, size_t outputs, int64_t scans = 0) {
  static Value v;
  Node n;
  n.op_type = op;
  n.opset = opset;
  n.inputs.assign(inputs, &v);
  n.outputs.assign(outputs, &v);
  if (op == "Scan") {
    Attribute a;
    a.name = "num_scan_inputs";
    a.kind = Attribute::Kind::Int;
    a.i = scans;
    n.attributes.push_back(a);
  }
  return n;
}

void check_port(const Port& p, Port::Kind kind, size_t index, int32_t slot, int32_t node_port) {
  CHECK(p.kind == kind);
  CHECK(p.index == index);
  CHECK(p.slot == slot);
  CHECK(p.node_port == node_port);
}

std::vector<float> floats(const TensorRef& r) {
  const float* p = static_cast<const float*>(r.data);
  return {p, p + r.bytes / 4};
}

// Writes `b` to a file of `dir` and returns its path.
std::string write_model(const ModelBuilder& b, const TempDir& dir) {
  const std::string path = dir / "model.onnx";
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

// True when, once the pipeline has prepared `b`, node `node` of the main graph has no output `k`
// (it was unread and is dropped): what these tests need the model to exercise.
bool output_dropped(const ModelBuilder& b, const std::string& node, size_t k) {
  TempDir dir("ports");
  const Model m = prepare_model(write_model(b, dir), {});
  const Node* n = find_node(*m.main, node);
  return n && k < n->outputs.size() && n->outputs[k] == nullptr;
}

// Compiling `b` fails; returns the message.
std::string compile_error(const ModelBuilder& b, std::string& path) {
  static TempDir dir("ports_refused");
  path = write_model(b, dir);
  try {
    CompiledModel::compile(path, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "compiled";
}

// A Loop of three trips of acc += acc over x, returning `loop_outputs`; with `trace`, the body
// also returns -acc as a scan output.
ModelBuilder doubling_loop(const std::string& name, std::vector<std::string> loop_outputs, bool trace) {
  ModelBuilder b(name, 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_initializer(g, tensor_i64("M", {}, {3}));
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "acc", elem::kFloat, {2});
  add_node(body, "Add", {"acc", "acc"}, {"acc_out"}, "double");
  add_output(body, "acc_out", elem::kFloat, {2});
  if (trace) {
    add_node(body, "Neg", {"acc"}, {"trace_elem"}, "neg");
    add_output(body, "trace_elem", elem::kFloat, {2});
  }
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, std::move(loop_outputs), "loop"), "body", body);
  add_output(g, "acc_final", elem::kFloat, {2});
  return b;
}

// Runs `b` in guard mode with x = [1, 2], xs = [[1, 2], [3, 4], [5, 6]] and p = 1 (whichever it
// has), returning output `name`.
std::vector<float> run(const ModelBuilder& b, const std::string& name) {
  TempDir dir("ports");
  auto model = CompiledModel::compile(write_model(b, dir), {});
  Session s(model, SessionOptions{true, false});
  const std::vector<float> x{1, 2}, xs{1, 2, 3, 4, 5, 6}, p{1};
  for (const TensorInfo& in : model->inputs()) {
    const std::vector<float>& data = in.name == "xs" ? xs : in.name == "p" ? p : x;
    s.set_input(in.name, kFloat32, in.shape, data.data(), data.size() * 4);
  }
  s.run();
  return floats(s.output(name));
}

}  // namespace

TEST_CASE("ports: an If branch output k becomes If output k", "[ports]") {
  const Node n = control_node("If", 17, 1, 2);
  const ControlFlowPorts ports(n);
  CHECK(ports.body_inputs() == 0);
  check_port(ports.body_output(0), Port::Kind::Branch, 0, -1, 0);
  check_port(ports.body_output(1), Port::Kind::Branch, 1, -1, 1);
}

TEST_CASE("ports: a Loop's counter, condition, carried values and scan outputs", "[ports]") {
  // Loop(M, cond, a, b) -> (a_final, b_final, scan0); body (iter, cond, a, b) -> (cond, a, b, scan0)
  const Node n = control_node("Loop", 17, 4, 3);
  const ControlFlowPorts ports(n);
  CHECK(ports.is_loop());
  CHECK(ports.carried() == 2);
  CHECK(ports.slots() == 4);
  CHECK(ports.first_carried_input() == 2);
  CHECK(ports.body_inputs() == 4);
  CHECK(ports.min_body_outputs() == 3);
  CHECK(ports.scan_outputs(4) == 1);
  check_port(ports.body_input(0), Port::Kind::Counter, 0, 0, -1);
  check_port(ports.body_input(1), Port::Kind::Condition, 0, 1, 1);
  check_port(ports.body_input(2), Port::Kind::Carried, 0, 2, 2);
  check_port(ports.body_input(3), Port::Kind::Carried, 1, 3, 3);
  check_port(ports.body_output(0), Port::Kind::Condition, 0, 1, -1);
  check_port(ports.body_output(1), Port::Kind::Carried, 0, 2, 0);
  check_port(ports.body_output(2), Port::Kind::Carried, 1, 3, 1);
  check_port(ports.body_output(3), Port::Kind::Scan, 0, -1, 2);
  CHECK(ports.body_output_of_slot(0) == -1);  // the counter: the executor writes it
  CHECK(ports.body_output_of_slot(1) == 0);
  CHECK(ports.body_output_of_slot(3) == 2);
  CHECK(ports.node_output_of_scan(0) == 2);
  CHECK(ports.body_output_of_node_output(2) == 3);
}

TEST_CASE("ports: Scan 9 states and scan inputs, Scan 8 takes sequence_lens first", "[ports]") {
  SECTION("opset 9") {
    // Scan(s, x0, x1) -> (s_final, y0); body (s, x0, x1) -> (s, y0)
    const Node n = control_node("Scan", 11, 3, 2, 2);
    const ControlFlowPorts ports(n);
    CHECK(ports.is_scan());
    CHECK(ports.carried() == 1);
    CHECK(ports.scan_inputs() == 2);
    CHECK(ports.slots() == 1);
    CHECK(ports.body_inputs() == 3);
    check_port(ports.body_input(0), Port::Kind::Carried, 0, 0, 0);
    check_port(ports.body_input(1), Port::Kind::Scan, 0, -1, 1);
    check_port(ports.body_input(2), Port::Kind::Scan, 1, -1, 2);
    check_port(ports.body_output(0), Port::Kind::Carried, 0, 0, 0);
    check_port(ports.body_output(1), Port::Kind::Scan, 0, -1, 1);
    CHECK(ports.body_output_of_slot(0) == 0);
  }
  SECTION("opset 8") {
    const Node n = control_node("Scan", 8, 3, 2, 1);
    const ControlFlowPorts ports(n);
    CHECK(ports.first_carried_input() == 1);
    CHECK(ports.carried() == 1);
    check_port(ports.body_input(0), Port::Kind::Carried, 0, 0, 1);
    check_port(ports.body_input(1), Port::Kind::Scan, 0, -1, 2);
  }
  SECTION("a num_scan_inputs the node does not have saturates (shape inference refuses it)") {
    const Node n = control_node("Scan", 11, 2, 1, 5);
    const ControlFlowPorts ports(n);
    CHECK(ports.carried() == 0);
    CHECK(ports.scan_inputs() == 2);
  }
}

TEST_CASE("a Scan output that nothing reads still has memory for the body to write", "[ports][runtime]") {
  // s_final = x + sum of the rows of xs; the per-row squares `ys` are read by no one.
  ModelBuilder b("scan_unread", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_input(g, "xs", elem::kFloat, {3, 2});
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "s_in", elem::kFloat, {2});
  add_input(body, "row", elem::kFloat, {2});
  add_node(body, "Add", {"s_in", "row"}, {"s_out"}, "add");
  add_node(body, "Mul", {"row", "row"}, {"square"}, "square");
  add_output(body, "s_out", elem::kFloat, {2});
  add_output(body, "square", elem::kFloat, {2});
  auto* scan = add_node(g, "Scan", {"x", "xs"}, {"s_final", "ys"}, "scan");
  attr_int(scan, "num_scan_inputs", 1);
  attr_graph(scan, "body", body);
  add_output(g, "s_final", elem::kFloat, {2});
  REQUIRE(output_dropped(b, "scan", 1));
  CHECK(run(b, "s_final") == std::vector<float>{10, 14});
}

TEST_CASE("a Loop scan output that nothing reads still has memory for the body to write", "[ports][runtime]") {
  // The per-iteration copies `trace` are read by no one.
  const ModelBuilder b = doubling_loop("loop_unread", {"acc_final", "trace"}, true);
  REQUIRE(output_dropped(b, "loop", 1));
  CHECK(run(b, "acc_final") == std::vector<float>{8, 16});
}

TEST_CASE("an If output that nothing reads still has memory for the branch to write", "[ports][runtime]") {
  IfModel b("if_unread", 13);
  b.input("x", elem::kFloat, {2});
  add_input(b.graph(), "p", elem::kFloat, {});
  add_initializer(b.graph(), tensor_f32("zero", {}, {0.f}));
  add_node(b.graph(), "Greater", {"p", "zero"}, {"cond"}, "positive");
  b.condition("cond");
  b.then_node("Neg", {"x"}, value_info("t_y", elem::kFloat, {2}), "t_neg");
  b.then_node("Abs", {"x"}, value_info("t_z", elem::kFloat, {2}), "t_abs");
  b.else_node("Neg", {"x"}, value_info("e_y", elem::kFloat, {2}), "e_neg");
  b.else_node("Abs", {"x"}, value_info("e_z", elem::kFloat, {2}), "e_abs");
  b.add_if({"y", "unread"});
  add_output(b.graph(), "y", elem::kFloat, {2});
  REQUIRE(output_dropped(b, "if", 1));
  CHECK(run(b, "y") == std::vector<float>{-1, -2});
}

TEST_CASE("a Loop with more outputs than its body makes is refused, naming the node", "[ports][shapes]") {
  ModelBuilder b = doubling_loop("loop_extra", {"acc_final", "extra"}, false);
  add_output_unranked(b.graph(), "extra", elem::kFloat);
  std::string path;
  CHECK_THAT(compile_error(b, path), Catch::Contains(path) && Catch::Contains("Loop node 'loop'") &&
                                         Catch::Contains("the Loop has 2 outputs, its body makes 1"));
}

TEST_CASE("an If with no condition is refused, naming the node (found by fuzzing: the run read input 0)",
          "[ports][shapes]") {
  IfModel b("if_no_cond", 13);
  b.input("x", elem::kFloat, {2});
  b.then_node("Neg", {"x"}, value_info("t_y", elem::kFloat, {2}), "t_neg");
  b.else_node("Abs", {"x"}, value_info("e_y", elem::kFloat, {2}), "e_abs");
  b.add_if()->clear_input();  // no condition at all
  add_output(b.graph(), "y", elem::kFloat, {2});
  std::string path;
  CHECK_THAT(compile_error(b, path),
             Catch::Contains(path) && Catch::Contains("If node 'if'") && Catch::Contains("takes one input"));
}

TEST_CASE("a Scan along an axis other than 0 is refused when compiled, not when it first runs", "[ports]") {
  ModelBuilder b("scan_axis_1", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_input(g, "xs", elem::kFloat, {2, 3});
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "s_in", elem::kFloat, {2});
  add_input(body, "col", elem::kFloat, {2});
  add_node(body, "Add", {"s_in", "col"}, {"s_out"}, "add");
  add_output(body, "s_out", elem::kFloat, {2});
  auto* scan = add_node(g, "Scan", {"x", "xs"}, {"s_final"}, "scan");
  attr_int(scan, "num_scan_inputs", 1);
  attr_ints(scan, "scan_input_axes", {1});
  attr_graph(scan, "body", body);
  add_output(g, "s_final", elem::kFloat, {2});
  TempDir dir("ports");
  try {
    CompiledModel::compile(write_model(b, dir), {});
    FAIL("compiled");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("Scan node 'scan'") && Catch::Contains("scan_input_axes other than 0"));
  }
}
