// Loop state in place: a carried value the body updates over what it reads takes one slot, or
// none when it lives in the Loop's own output. Tiny hand-built Loops with the alias rules typed in
// pin down each home and each refusal; the verifier rejects planted wrong homes; the plan file
// keeps them; and real kernels run such a Loop, zero trips included, to the right answer.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>

#include "memplan/error.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "plan/verifier.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"
#include "support/typed_plans.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr uint64_t kValue = 4 * 16;  // a [1, 16] float carried value: one 64-byte alignment unit

// Add and Relu may write over input 0 (as oneDNN's binary and eltwise kernels do); Mul may not.
plan::NodeAliasing typed_rules(const Node& n) {
  plan::NodeAliasing a;
  if (n.op_type == "Add" || n.op_type == "Relu") a.in_place = {0};
  return a;
}

// Loop(M, "", x...) over [1, 16] floats. `body_nodes` are {op, inputs, output}; the body's carried
// inputs are "<name>_in" and its outputs "<name>_out" for each of `carried`; `outputs` are the
// Loop's ("" omits one). The main graph returns every output the Loop has.
struct BodyNode {
  std::string op;
  std::vector<std::string> inputs;
  std::string output;
};

ModelBuilder loop_model(const std::vector<std::string>& carried, const std::vector<BodyNode>& body_nodes,
                        const std::vector<std::string>& outputs) {
  ModelBuilder b;
  add_input(b.graph(), "M", elem::kInt64, Shape{});
  onnx::GraphProto body = loop_body_skeleton("body");
  for (const std::string& c : carried) add_input(body, c + "_in", elem::kFloat, {1, 16});
  add_constant(body, tensor_f32("one", {1}, {1.f}));
  for (const BodyNode& n : body_nodes) add_node(body, n.op, n.inputs, {n.output}, n.output);
  for (const std::string& c : carried) add_output(body, c + "_out", elem::kFloat, {1, 16});
  std::vector<std::string> inputs{"M", ""};
  for (const std::string& c : carried) {
    add_input(b.graph(), c, elem::kFloat, {1, 16});
    inputs.push_back(c);
  }
  attr_graph(add_node(b.graph(), "Loop", inputs, outputs, "loop"), "body", body);
  for (const std::string& o : outputs)
    if (!o.empty()) add_output(b.graph(), o, elem::kFloat, {1, 16});
  return b;
}

MemoryPlan plan_of(const Model& m) { return typed_plan(m, typed_rules); }

const Region& loop_region(const MemoryPlan& p) {
  REQUIRE(p.graphs[0].regions.size() == 1);
  return p.graphs[0].regions[0];
}

const CarriedSlots& slot_of(const MemoryPlan& p, const std::string& body_input) {
  for (const CarriedSlots& c : loop_region(p).carried)
    if (c.name == body_input) return c;
  FAIL("no slot for " << body_input);
  throw;
}

CarriedSlots& slot_of(MemoryPlan& p, const std::string& body_input) {
  return const_cast<CarriedSlots&>(slot_of(static_cast<const MemoryPlan&>(p), body_input));
}

const GraphPlan& body_plan(const MemoryPlan& p) { return p.graphs[static_cast<size_t>(loop_region(p).subgraphs[0])]; }

uint64_t region_bytes(const MemoryPlan& p) { return p.graphs[0].buffers[static_cast<size_t>(loop_region(p).buffer)].size; }

bool refused_with(const MemoryPlan& p, const std::string& value, const std::string& words) {
  for (const RefusedAlias& r : body_plan(p).refused_aliases)
    if (r.value == value && r.reason.find(words) != std::string::npos) return true;
  return false;
}

bool rejected(const Model& m, const MemoryPlan& p) {
  try {
    verify_plan(m, p);
    return false;
  } catch (const Error&) {
    return true;
  }
}

}  // namespace

TEST_CASE("a carried value the body updates in place lives in the Loop's output: the region holds no slot for it",
          "[loop-state]") {
  const Model m = prepared(loop_model({"x"}, {{"Add", {"x_in", "one"}, "x_out"}}, {"y"}));
  const MemoryPlan p = plan_of(m);
  const CarriedSlots& x = slot_of(p, "x_in");
  CHECK(x.home == SlotHome::NodeOutput);
  CHECK(x.writer == 1);  // body step 0 passes the condition on, step 1 is the Add
  // The body writes nothing of its own; the region is the counter's slot and the condition's two.
  CHECK(body_plan(p).frame_bytes == 0);
  CHECK(region_bytes(p) == 3 * 64);
  CHECK(body_plan(p).refused_aliases.empty());  // the Add's write over the enclosing graph's bytes is no refusal now
  // Without sharing, the same Loop takes two slots for it.
  PlanOptions own;
  const MemoryPlan q = plan_memory(m, own);
  CHECK(slot_of(q, "x_in").home == SlotHome::TwoSlots);
  CHECK(region_bytes(q) == 3 * 64 + 2 * kValue);
}

TEST_CASE("a carried value whose Loop output is omitted is updated in place in one slot", "[loop-state]") {
  const Model m = prepared(loop_model({"x", "w"}, {{"Add", {"x_in", "one"}, "x_out"}, {"Add", {"w_in", "one"}, "w_out"}},
                                      {"", "y"}));
  const MemoryPlan p = plan_of(m);
  const CarriedSlots& x = slot_of(p, "x_in");
  CHECK(x.home == SlotHome::OneSlot);
  CHECK(x.slot0 == x.slot1);
  CHECK(slot_of(p, "w_in").home == SlotHome::NodeOutput);
  CHECK(region_bytes(p) == 3 * 64 + kValue);
}

TEST_CASE("a carried value read after its update keeps two slots, and the refusal names the reader", "[loop-state]") {
  // x_out = x_in + 1 at step 1, then Relu reads x_in at step 2: the Add may not write over it.
  // r_out is made by that Relu, whose kernel writes over x_in, not r_in.
  const Model m = prepared(loop_model({"x", "r"}, {{"Add", {"x_in", "one"}, "x_out"}, {"Relu", {"x_in"}, "r_out"}},
                                      {"y", "z"}));
  const MemoryPlan p = plan_of(m);
  const CarriedSlots& x = slot_of(p, "x_in");
  CHECK(x.home == SlotHome::TwoSlots);
  CHECK(x.slot0 != x.slot1);
  CHECK(refused_with(p, "x_out", "read after 'x_out', by 'r_out'"));
  CHECK(slot_of(p, "r_in").home == SlotHome::TwoSlots);
  CHECK(refused_with(p, "r_out", "cannot write its output over 'r_in'"));
  CHECK(region_bytes(p) == 3 * 64 + 4 * kValue);
}

TEST_CASE("a carried value whose update no in-place kernel makes, or that the body returns as is, keeps two slots",
          "[loop-state]") {
  const Model m = prepared(loop_model({"x", "v"}, {{"Mul", {"x_in", "one"}, "x_out"}, {"Identity", {"v_in"}, "v_out"}},
                                      {"y", "z"}));
  const MemoryPlan p = plan_of(m);
  CHECK(slot_of(p, "x_in").home == SlotHome::TwoSlots);
  CHECK(refused_with(p, "x_out", "kernel of 'x_out' (Mul) cannot write its output over 'x_in'"));
  CHECK(slot_of(p, "v_in").home == SlotHome::TwoSlots);
}

TEST_CASE("the verifier rejects loop state planted in place where a later node still reads it, or in an output the Loop lacks",
          "[loop-state][verifier]") {
  {
    const Model m = prepared(loop_model({"x", "r"}, {{"Add", {"x_in", "one"}, "x_out"}, {"Relu", {"x_in"}, "r_out"}},
                                        {"y", "z"}));
    MemoryPlan p = plan_of(m);
    CarriedSlots& x = slot_of(p, "x_in");
    x.home = SlotHome::OneSlot;
    x.slot1 = x.slot0;
    x.writer = 1;
    CHECK(rejected(m, p));
  }
  {
    const Model m = prepared(loop_model({"x", "w"}, {{"Add", {"x_in", "one"}, "x_out"}, {"Add", {"w_in", "one"}, "w_out"}},
                                        {"", "y"}));
    MemoryPlan p = plan_of(m);
    CarriedSlots& x = slot_of(p, "x_in");
    x.home = SlotHome::NodeOutput;
    CHECK(rejected(m, p));
    x.home = SlotHome::OneSlot;
    x.writer = 2;  // the other Add: it does not make x_out
    CHECK(rejected(m, p));
    x.writer = 1;
    x.slot1 = x.slot0 + 64;  // one slot at two offsets
    CHECK(rejected(m, p));
    x.home = SlotHome::TwoSlots;  // two slots, yet a writer in place (one past the body's nodes)
    x.writer = 3;
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("updated in place by no node"));
  }
}

TEST_CASE("plan files keep where loop state lives and which body step updates it", "[loop-state][plan-file]") {
  const Model m = prepared(loop_model({"x", "w"}, {{"Add", {"x_in", "one"}, "x_out"}, {"Add", {"w_in", "one"}, "w_out"}},
                                      {"", "y"}));
  MemoryPlan p = plan_of(m);
  p.model_sha256 = m.sha256;
  TempDir dir("loop_state");
  write_plan_file(p, dir / "p.mplan");
  const MemoryPlan back = read_plan_file(dir / "p.mplan");
  for (const std::string name : {"x_in", "w_in", "iter", "cond_in"}) {
    INFO(name);
    CHECK(slot_of(back, name).home == slot_of(p, name).home);
    CHECK(slot_of(back, name).writer == slot_of(p, name).writer);
    CHECK(slot_of(back, name).slot0 == slot_of(p, name).slot0);
  }
  verify_plan(m, back);
}

TEST_CASE("a Loop that updates its state in its own output runs to the right value for zero, one and several trips",
          "[loop-state][runtime]") {
  // y = x + M (the body adds one per trip), then z = y * x reads it back in the main graph.
  ModelBuilder b = loop_model({"x"}, {{"Add", {"x_in", "one"}, "x_out"}}, {"y"});
  b.graph().mutable_output()->Clear();
  add_node(b.graph(), "Mul", {"y", "x"}, {"z"}, "mul");
  add_output(b.graph(), "z", elem::kFloat, {1, 16});
  TempDir dir("loop_state_run");
  {
    std::ofstream f(dir / "m.onnx", std::ios::binary);
    f << b.bytes();
  }
  auto model = CompiledModel::compile(dir / "m.onnx", CompileOptions{});
  CHECK(model->report_json().find("\"home\": \"loop output\"") != std::string::npos);
  Session s(model, SessionOptions{true});  // guard mode: a clobbered live buffer would throw
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 4.f;
  for (const int64_t trips : {0, 1, 2, 5}) {
    INFO("trips " << trips);
    const std::vector<int64_t> scalar, row{1, 16};
    s.set_input("M", kInt64, scalar, &trips, sizeof trips);
    s.set_input("x", kFloat32, row, x.data(), x.size() * sizeof(float));
    s.run();
    const TensorRef z = s.output("z");
    REQUIRE(z.bytes == 16 * sizeof(float));
    std::vector<float> got(16);
    std::memcpy(got.data(), z.data, z.bytes);
    for (size_t i = 0; i < 16; ++i) CHECK(got[i] == (x[i] + static_cast<float>(trips)) * x[i]);
  }
}
