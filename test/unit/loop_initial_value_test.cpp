// A Loop's initial value written straight into the If output its final value goes to: a Loop's
// output 0 may take the bytes of its first carried value's initial value (input 2) where that
// value dies at the Loop, and in an If branch whose output is that Loop output, the initial
// value's storage group then lives in the If output's bytes (PlannedBuffer::bound_output), not
// in the branch frame. Tiny hand-built models with the alias rules typed in (the Loop's as
// KernelSelection::aliasing gives it) pin down where the initial value lives, the bounds, and
// each refusal; the verifier rejects planted wrong placements; plan files keep them; and the real
// pipeline runs each shape in guard mode for zero, one and three trips.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "plan/verifier.h"
#include "runtime/compiled_model_impl.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"
#include "support/typed_plans.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr uint64_t kRow = 4 * 16;  // a [1, 16] float tensor: one 64-byte alignment unit
constexpr uint64_t kSlot = 64;     // a Loop's counter or condition slot, aligned

// Add, Relu and Neg may write over input 0 (as oneDNN's binary and eltwise kernels do); a Loop's
// output 0 over its input 2, the first carried value's initial value (KernelSelection::aliasing).
plan::NodeAliasing typed_rules(const Node& n) {
  plan::NodeAliasing a;
  if (n.op_type == "Add" || n.op_type == "Relu" || n.op_type == "Neg") a.in_place = {0};
  if (n.op_type == "Loop" && n.inputs.size() > 2 && !n.outputs.empty() && n.outputs[0]) a.in_place = {2};
  return a;
}

MemoryPlan plan_of(const Model& m) { return typed_plan(m, typed_rules); }

// What the then branch does besides the plain case, where it makes init = Relu(x), runs
// Loop(M, "", init) -> loop_y (a body adding one per trip) and returns loop_y as the If's y.
enum class Then {
  Plain,
  ReadBeforeTheLoop,      // pre = Neg(init) before the Loop, a second branch output (the If's y2)
  ReadAfterTheLoop,       // post = Mul(init, x) after the Loop, a second branch output (the If's y2)
  WrittenOverAfterTheLoop,  // post = Neg(init) after the Loop, written over it: the If's y2
  CapturedByTheBody,      // the body adds init (a capture) rather than one
  LoopOutputOmitted,      // Loop(M, "", init, x) -> ("", loop_y): init's final value is dropped
  SecondCarriedValue,     // Loop(M, "", x, init) -> (loop_x, loop_y): init starts carried value 1
  BranchOutputItself,     // the branch returns init too (the If's y2)
  TwiceInitialValue,      // Loop(M, "", init, init) -> (loop_y, loop_y2): read twice by the Loop
  TwoSlotBody,            // the body reads its state after the update: s_out = (s_in + 1) * s_in
};

bool two_outputs(Then t) {
  return t == Then::ReadBeforeTheLoop || t == Then::ReadAfterTheLoop || t == Then::WrittenOverAfterTheLoop ||
         t == Then::BranchOutputItself || t == Then::TwiceInitialValue;
}
bool two_carried(Then t) {
  return t == Then::LoopOutputOmitted || t == Then::SecondCarriedValue || t == Then::TwiceInitialValue;
}

// The body: iter, cond_in, then one carried [1, 16] value s (or two, s and r), each plus one per
// trip unless `t` says otherwise.
onnx::GraphProto body_of(Then t) {
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "s_in", elem::kFloat, {1, 16});
  if (two_carried(t)) add_input(body, "r_in", elem::kFloat, {1, 16});
  add_constant(body, tensor_f32("one", {1}, {1.f}));
  if (t == Then::CapturedByTheBody) {
    add_node(body, "Add", {"s_in", "init"}, {"s_out"}, "body_add");
  } else if (t == Then::TwoSlotBody) {
    add_node(body, "Add", {"s_in", "one"}, {"s_plus"}, "body_add");
    add_node(body, "Mul", {"s_plus", "s_in"}, {"s_out"}, "body_mul");
  } else {
    add_node(body, "Add", {"s_in", "one"}, {"s_out"}, "body_add");
  }
  add_output(body, "s_out", elem::kFloat, {1, 16});
  if (two_carried(t)) {
    add_node(body, "Add", {"r_in", "one"}, {"r_out"}, "body_add_r");
    add_output(body, "r_out", elem::kFloat, {1, 16});
  }
  return body;
}

// y = If(p) { then branch of `t` } else { Neg(x) } (and y2 likewise where the then branch has two
// outputs); x [1, 16], M the Loop's trip count.
ModelBuilder if_model(Then t = Then::Plain) {
  IfModel b;
  b.input("x", elem::kFloat, {1, 16}).input("M", elem::kInt64, {}).condition_input("p");
  onnx::GraphProto& then = b.then_branch();
  add_node(then, "Relu", {"x"}, {"init"}, "make_init");
  if (t == Then::ReadBeforeTheLoop) add_node(then, "Neg", {"init"}, {"pre"}, "read_init");
  std::vector<std::string> loop_in{"M", "", "init"}, loop_out{"loop_y"};
  if (t == Then::LoopOutputOmitted) {
    loop_in.push_back("x");
    loop_out = {"", "loop_y"};
  }
  if (t == Then::SecondCarriedValue) {
    loop_in = {"M", "", "x", "init"};
    loop_out = {"loop_x", "loop_y"};
  }
  if (t == Then::TwiceInitialValue) {
    loop_in.push_back("init");
    loop_out.push_back("loop_y2");
  }
  attr_graph(add_node(then, "Loop", loop_in, loop_out, "loop"), "body", body_of(t));
  add_output(then, "loop_y", elem::kFloat, {1, 16});
  if (t == Then::ReadBeforeTheLoop) add_output(then, "pre", elem::kFloat, {1, 16});
  if (t == Then::ReadAfterTheLoop)
    add_node_to_output(then, "Mul", {"init", "x"}, value_info("post", elem::kFloat, {1, 16}), "read_init");
  if (t == Then::WrittenOverAfterTheLoop)
    add_node_to_output(then, "Neg", {"init"}, value_info("post", elem::kFloat, {1, 16}), "read_init");
  if (t == Then::BranchOutputItself) add_output(then, "init", elem::kFloat, {1, 16});
  if (t == Then::TwiceInitialValue) add_output(then, "loop_y2", elem::kFloat, {1, 16});
  b.else_node("Neg", {"x"}, value_info("e_out", elem::kFloat, {1, 16}), "else_neg");
  if (two_outputs(t)) b.else_node("Neg", {"x"}, value_info("e_out2", elem::kFloat, {1, 16}), "else_neg2");
  b.add_if(two_outputs(t) ? std::vector<std::string>{"y", "y2"} : std::vector<std::string>{"y"});
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  if (two_outputs(t)) add_output(b.graph(), "y2", elem::kFloat, {1, 16});
  return b;
}

size_t graph_index(const MemoryPlan& p, const std::string& owner_attribute, const std::string& owner) {
  for (size_t i = 0; i < p.graphs.size(); ++i)
    if (p.graphs[i].owner_attribute == owner_attribute && p.graphs[i].owner_node == owner) return i;
  FAIL("no graph " << owner << "." << owner_attribute);
  throw;
}
const GraphPlan& then_plan(const MemoryPlan& p) { return p.graphs[graph_index(p, "then_branch", "if")]; }
GraphPlan& then_plan(MemoryPlan& p) { return p.graphs[graph_index(p, "then_branch", "if")]; }

const PlannedBuffer* tensor_buffer(const GraphPlan& g, const std::string& name) {
  for (const PlannedBuffer& b : g.buffers)
    if (b.kind == BufferKind::Tensor && b.name == name) return &b;
  return nullptr;
}
PlannedBuffer* tensor_buffer(GraphPlan& g, const std::string& name) {
  return const_cast<PlannedBuffer*>(tensor_buffer(static_cast<const GraphPlan&>(g), name));
}

// The branch output whose If output holds `name`'s bytes (-1: bytes of the frame), requiring
// that it has a buffer.
int32_t home_of(const GraphPlan& g, const std::string& name) {
  const PlannedBuffer* b = tensor_buffer(g, name);
  if (!b) FAIL("no buffer for " << name);
  return b->bound_output;
}

bool refused_with(const GraphPlan& g, const std::string& source, const std::string& words) {
  return std::any_of(g.refused_aliases.begin(), g.refused_aliases.end(), [&](const RefusedAlias& r) {
    return r.source == source && r.reason.find(words) != std::string::npos;
  });
}

bool rejected_by_verifier(const Model& m, const MemoryPlan& p) {
  try {
    verify_plan(m, p);
    return false;
  } catch (const Error&) {
    return true;
  }
}

std::string write_model(const TempDir& dir, const ModelBuilder& b, const std::string& file = "m.onnx") {
  const std::string path = dir / file;
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

std::vector<float> x_values() {
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 6.5f;
  return x;
}

std::vector<float> output_of(const Session& s, const std::string& name) {
  const TensorRef y = s.output(name);
  REQUIRE(std::vector<int64_t>(y.shape.begin(), y.shape.end()) == std::vector<int64_t>{1, 16});
  std::vector<float> got(16);
  std::memcpy(got.data(), y.data, sizeof(float) * 16);
  return got;
}

// Runs the If model on x_values() for `p` and `trips`.
void run_if(Session& s, bool p, int64_t trips) {
  const std::vector<float> x = x_values();
  const uint8_t cond = p ? 1 : 0;
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 16}, x.data(), x.size() * sizeof(float));
  s.set_input("M", kInt64, std::vector<int64_t>{}, &trips, sizeof trips);
  s.set_input("p", kBool, std::vector<int64_t>{}, &cond, 1);
  s.run();
}

std::vector<float> map_x(float (*f)(float, int64_t), int64_t trips) {
  std::vector<float> y = x_values();
  for (float& v : y) v = f(v, trips);
  return y;
}
float relu_plus(float v, int64_t trips) { return std::max(v, 0.f) + static_cast<float>(trips); }
float neg(float v, int64_t) { return -v; }

const std::vector<int64_t> kTrips{0, 1, 3};

// The plain model's numbers, both ways, in guard mode (a clobbered live buffer would throw).
void require_plain_numbers(const std::shared_ptr<const CompiledModel>& model) {
  Session s(model, SessionOptions{true});
  for (const int64_t trips : kTrips)
    for (const bool p : {true, false}) {
      INFO("trips " << trips << ", p " << p);
      run_if(s, p, trips);
      CHECK(output_of(s, "y") == (p ? map_x(relu_plus, trips) : map_x(neg, trips)));
    }
}

}  // namespace

TEST_CASE("a Loop's initial value is written into the If output its final value goes to: the branch frame holds no "
          "buffer for it", "[loop-initial-value]") {
  const Model m = prepared(if_model());
  const MemoryPlan p = plan_of(m);
  const GraphPlan& then = then_plan(p);
  // init is planned in the bytes of the If output that branch output 0 (loop_y) goes to, from
  // their start: the Loop writes its final value over it there.
  const PlannedBuffer* init = tensor_buffer(then, "init");
  REQUIRE(init != nullptr);
  CHECK(init->bound_output == 0);
  CHECK(init->offset == 0);
  CHECK(init->size == kRow);
  // The frame holds the Loop's region only: the counter's slot and the condition's two (the
  // body updates its state in place in the Loop's output, which is y too).
  REQUIRE(then.regions.size() == 1);
  CHECK(then.frame_bytes == 3 * kSlot);
  CHECK(then.aliased_bound_bytes == 3 * kSlot);
  // The bound without sharing counts init, beside the region with two slots for the state.
  CHECK(then.lower_bound_bytes == kRow + 3 * kSlot + 2 * kRow);
  CHECK(then.lower_bound_bytes > then.aliased_bound_bytes);
  // The main graph is y, the region and the inputs: nothing of the branch beyond the region.
  CHECK(p.graphs[0].frame_bytes == 4 * kRow + 3 * kSlot);
}

TEST_CASE("a Loop's initial value written into the If output runs to the right numbers for zero, one and three trips",
          "[loop-initial-value][runtime]") {
  TempDir dir("loop_initial_value_run");
  const auto model = CompiledModel::compile(write_model(dir, if_model()), CompileOptions{});
  // The real kernels' plan puts init there too, so the runs below write it into y.
  CHECK(home_of(then_plan(model->impl().plan), "init") == 0);
  require_plain_numbers(model);
}

TEST_CASE("a Loop's initial value written into the If output, with the state in two slots, runs to the right numbers",
          "[loop-initial-value][runtime]") {
  // The body reads s_in after it computes s_in + 1: the state cannot be updated in place; the
  // Loop's first trip reads init from y and its last slot is copied into y after the trips.
  const Model m = prepared(if_model(Then::TwoSlotBody));
  const MemoryPlan p = plan_of(m);
  CHECK(home_of(then_plan(p), "init") == 0);
  REQUIRE(then_plan(p).regions.size() == 1);
  const auto& carried = then_plan(p).regions[0].carried;
  const auto s_in = std::find_if(carried.begin(), carried.end(), [](const CarriedSlots& c) { return c.name == "s_in"; });
  REQUIRE(s_in != carried.end());
  CHECK(s_in->home == SlotHome::TwoSlots);
  TempDir dir("loop_initial_value_two_slots");
  const auto model = CompiledModel::compile(write_model(dir, if_model(Then::TwoSlotBody)), CompileOptions{});
  CHECK(home_of(then_plan(model->impl().plan), "init") == 0);
  Session s(model, SessionOptions{true});
  for (const int64_t trips : kTrips) {
    INFO("trips " << trips);
    std::vector<float> want = x_values();
    for (float& v : want) {
      v = std::max(v, 0.f);
      for (int64_t k = 0; k < trips; ++k) v = (v + 1.f) * v;
    }
    run_if(s, true, trips);
    CHECK(output_of(s, "y") == want);
    run_if(s, false, trips);
    CHECK(output_of(s, "y") == map_x(neg, trips));
  }
}

TEST_CASE("a Loop's initial value another node reads before the Loop is still written into the If output",
          "[loop-initial-value]") {
  // pre = Neg(init) reads it first (and may not write over it: the Loop reads it later); the
  // Loop is its last reader.
  const Model m = prepared(if_model(Then::ReadBeforeTheLoop));
  const MemoryPlan p = plan_of(m);
  CHECK(home_of(then_plan(p), "init") == 0);
  CHECK(refused_with(then_plan(p), "init", "read after this node"));  // pre over init
  TempDir dir("loop_initial_value_read_before");
  const auto model = CompiledModel::compile(write_model(dir, if_model(Then::ReadBeforeTheLoop)), CompileOptions{});
  CHECK(home_of(then_plan(model->impl().plan), "init") == 0);
  Session s(model, SessionOptions{true});
  for (const int64_t trips : kTrips) {
    INFO("trips " << trips);
    run_if(s, true, trips);
    CHECK(output_of(s, "y") == map_x(relu_plus, trips));
    std::vector<float> pre = map_x(relu_plus, 0);
    for (float& v : pre) v = -v;
    CHECK(output_of(s, "y2") == pre);
  }
}

TEST_CASE("a Loop's initial value keeps bytes of the branch frame when it is read after the Loop, captured by the body, "
          "dropped as a final value, a second carried value's, or read twice by the Loop", "[loop-initial-value]") {
  struct Case {
    Then t;
    const char* name;
    const char* refusal;  // the refusal recorded for init (none where no rule applies)
  };
  for (const Case& c : {Case{Then::ReadAfterTheLoop, "read after the Loop", "its bytes are read after this node, by Mul node 'read_init'"},
                        Case{Then::CapturedByTheBody, "captured by the body", "its subgraphs read those bytes ('init')"},
                        Case{Then::LoopOutputOmitted, "its final value dropped", ""},
                        Case{Then::SecondCarriedValue, "a second carried value's", ""},
                        Case{Then::TwiceInitialValue, "read twice by the Loop", "also reads those bytes as input 3"}}) {
    INFO(c.name);
    const Model m = prepared(if_model(c.t));
    const MemoryPlan p = plan_of(m);
    const GraphPlan& then = then_plan(p);
    CHECK(home_of(then, "init") == -1);
    CHECK(std::none_of(then.buffers.begin(), then.buffers.end(), [](const PlannedBuffer& b) { return b.bound_output >= 0; }));
    if (*c.refusal) CHECK(refused_with(then, "init", c.refusal));
    CHECK(then.frame_bytes >= kRow + 3 * kSlot);
  }
}

TEST_CASE("a Loop's initial value that a later node writes another branch output over goes into that If output instead",
          "[loop-initial-value]") {
  // post = Neg(init) after the Loop, written over init: init dies there, in y2's bytes.
  const Model m = prepared(if_model(Then::WrittenOverAfterTheLoop));
  const MemoryPlan p = plan_of(m);
  CHECK(home_of(then_plan(p), "init") == 1);
  CHECK(refused_with(then_plan(p), "init", "its bytes are read after this node, by Neg node 'read_init'"));  // the Loop's
  CHECK(then_plan(p).frame_bytes == 3 * kSlot);
}

TEST_CASE("a Loop's initial value that is a branch output itself is written into its own If output, not the Loop's",
          "[loop-initial-value]") {
  const Model m = prepared(if_model(Then::BranchOutputItself));
  const MemoryPlan p = plan_of(m);
  // A bound output: no buffer of the frame and no group to move.
  CHECK(tensor_buffer(then_plan(p), "init") == nullptr);
  CHECK(std::none_of(then_plan(p).buffers.begin(), then_plan(p).buffers.end(),
                     [](const PlannedBuffer& b) { return b.bound_output >= 0; }));
}

TEST_CASE("the Loop initial values kept in the branch frame still run to the right numbers",
          "[loop-initial-value][runtime]") {
  for (const Then t : {Then::ReadAfterTheLoop, Then::WrittenOverAfterTheLoop, Then::CapturedByTheBody,
                       Then::LoopOutputOmitted, Then::SecondCarriedValue, Then::BranchOutputItself,
                       Then::TwiceInitialValue}) {
    INFO("case " << static_cast<int>(t));
    TempDir dir("loop_initial_value_refused");
    const auto model = CompiledModel::compile(write_model(dir, if_model(t)), CompileOptions{});
    // Not in the bytes of y, whatever the real kernels allow otherwise.
    if (const PlannedBuffer* init = tensor_buffer(then_plan(model->impl().plan), "init")) CHECK(init->bound_output != 0);
    Session s(model, SessionOptions{true});
    for (const int64_t trips : kTrips) {
      INFO("trips " << trips);
      const float tf = static_cast<float>(trips);
      std::vector<float> relu = map_x(relu_plus, 0), want(16);
      const std::vector<float> x = x_values();
      for (size_t i = 0; i < want.size(); ++i) {
        if (t == Then::CapturedByTheBody) want[i] = relu[i] + tf * relu[i];
        else if (t == Then::LoopOutputOmitted) want[i] = x[i] + tf;  // y is the Loop's second value, from x
        else want[i] = relu[i] + tf;
      }
      run_if(s, true, trips);
      CHECK(output_of(s, "y") == want);
      if (t == Then::ReadAfterTheLoop) {
        std::vector<float> post = relu;
        for (size_t i = 0; i < post.size(); ++i) post[i] *= x[i];
        CHECK(output_of(s, "y2") == post);
      }
      if (t == Then::WrittenOverAfterTheLoop) {
        std::vector<float> post = relu;
        for (float& v : post) v = -v;
        CHECK(output_of(s, "y2") == post);
      }
      if (t == Then::BranchOutputItself) CHECK(output_of(s, "y2") == relu);
      if (t == Then::TwiceInitialValue) CHECK(output_of(s, "y2") == want);
      run_if(s, false, trips);
      CHECK(output_of(s, "y") == map_x(neg, trips));
    }
  }
}

namespace {

// outer Loop(N, "", x): its body makes init = Relu(s_in) and returns inner Loop(M, "", init)'s
// final value as its carried value; with `relu_first` false the inner Loop starts from s_in itself.
ModelBuilder loop_in_loop_model(bool relu_first = true) {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_input(b.graph(), "N", elem::kInt64, {});
  add_input(b.graph(), "M", elem::kInt64, {});
  onnx::GraphProto inner = loop_body_skeleton("inner_body", "i_");
  add_input(inner, "t_in", elem::kFloat, {1, 16});
  add_constant(inner, tensor_f32("one", {1}, {1.f}));
  add_node(inner, "Add", {"t_in", "one"}, {"t_out"}, "inner_add");
  add_output(inner, "t_out", elem::kFloat, {1, 16});
  onnx::GraphProto outer = loop_body_skeleton("outer_body", "o_");
  add_input(outer, "s_in", elem::kFloat, {1, 16});
  if (relu_first) add_node(outer, "Relu", {"s_in"}, {"init"}, "make_init");
  attr_graph(add_node(outer, "Loop", {"M", "", relu_first ? "init" : "s_in"}, {"s_out"}, "inner_loop"), "body", inner);
  add_output(outer, "s_out", elem::kFloat, {1, 16});
  attr_graph(add_node(b.graph(), "Loop", {"N", "", "x"}, {"y"}, "outer_loop"), "body", outer);
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  return b;
}

// Runs a model with inputs x, N and M (and p when given) and returns y.
std::vector<float> run_nm(Session& s, int64_t n, int64_t m, int p = -1) {
  const std::vector<float> x = x_values();
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 16}, x.data(), x.size() * sizeof(float));
  s.set_input("N", kInt64, std::vector<int64_t>{}, &n, sizeof n);
  s.set_input("M", kInt64, std::vector<int64_t>{}, &m, sizeof m);
  const uint8_t cond = p > 0 ? 1 : 0;
  if (p >= 0) s.set_input("p", kBool, std::vector<int64_t>{}, &cond, 1);
  s.run();
  return output_of(s, "y");
}

}  // namespace

TEST_CASE("a Loop's initial value in a Loop body, not an If branch, keeps its buffer", "[loop-initial-value]") {
  const Model m = prepared(loop_in_loop_model());
  const MemoryPlan p = plan_of(m);
  const GraphPlan& body = p.graphs[graph_index(p, "body", "outer_loop")];
  CHECK(home_of(body, "init") == -1);
  CHECK(body.frame_bytes >= kRow);
  // And it runs: each outer trip takes relu of the state and adds M.
  TempDir dir("loop_initial_value_loop_in_loop");
  const auto model = CompiledModel::compile(write_model(dir, loop_in_loop_model()), CompileOptions{});
  CHECK(home_of(model->impl().plan.graphs[graph_index(model->impl().plan, "body", "outer_loop")], "init") == -1);
  Session s(model, SessionOptions{true});
  for (const int64_t n : {0, 2})
    for (const int64_t trips : kTrips) {
      INFO("N " << n << ", M " << trips);
      std::vector<float> want = x_values();
      for (float& v : want)
        for (int64_t k = 0; k < n; ++k) v = relu_plus(v, trips);
      CHECK(run_nm(s, n, trips) == want);
    }
}

TEST_CASE("an If in a Loop body writes its Loop's initial value into the outer Loop's slot", "[loop-initial-value][runtime]") {
  // outer Loop(N, "", x): its body is s_out = If(p) { Loop(M, "", Relu(s_in)) } else { Neg(s_in) }:
  // the If output is a slot of the outer Loop, and init is written there.
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_input(b.graph(), "N", elem::kInt64, {});
  add_input(b.graph(), "M", elem::kInt64, {});
  add_input(b.graph(), "p", elem::kBool, {});
  onnx::GraphProto inner = loop_body_skeleton("inner_body", "i_");
  add_input(inner, "t_in", elem::kFloat, {1, 16});
  add_constant(inner, tensor_f32("one", {1}, {1.f}));
  add_node(inner, "Add", {"t_in", "one"}, {"t_out"}, "inner_add");
  add_output(inner, "t_out", elem::kFloat, {1, 16});
  onnx::GraphProto then = branch_graph("then");
  add_node(then, "Relu", {"s_in"}, {"init"}, "make_init");
  attr_graph(add_node(then, "Loop", {"M", "", "init"}, {"loop_y"}, "loop"), "body", inner);
  add_output(then, "loop_y", elem::kFloat, {1, 16});
  onnx::GraphProto els = one_node_branch("else", "Neg", {"s_in"}, value_info("e_out", elem::kFloat, {1, 16}), "else_neg");
  onnx::GraphProto outer = loop_body_skeleton("outer_body", "o_");
  add_input(outer, "s_in", elem::kFloat, {1, 16});
  add_if(outer, "p", {"s_out"}, then, els, "if");
  add_output(outer, "s_out", elem::kFloat, {1, 16});
  attr_graph(add_node(b.graph(), "Loop", {"N", "", "x"}, {"y"}, "outer_loop"), "body", outer);
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  TempDir dir("loop_initial_value_if_in_loop");
  const auto model = CompiledModel::compile(write_model(dir, b), CompileOptions{});
  CHECK(home_of(then_plan(model->impl().plan), "init") == 0);
  Session s(model, SessionOptions{true});
  for (const bool cond : {true, false})
    for (const int64_t n : {0, 1, 3})
      for (const int64_t trips : kTrips) {
        INFO("p " << cond << ", N " << n << ", M " << trips);
        std::vector<float> want = x_values();
        for (float& v : want)
          for (int64_t k = 0; k < n; ++k) v = cond ? relu_plus(v, trips) : -v;
        CHECK(run_nm(s, n, trips, cond ? 1 : 0) == want);
      }
}

TEST_CASE("a Loop's output takes the bytes of the initial value that dies at it, in any graph",
          "[loop-initial-value][runtime]") {
  // y = Loop(M, "", Relu(x)) in the main graph: y shares the Relu's bytes.
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_input(b.graph(), "M", elem::kInt64, {});
  add_node(b.graph(), "Relu", {"x"}, {"init"}, "make_init");
  attr_graph(add_node(b.graph(), "Loop", {"M", "", "init"}, {"loop_y"}, "loop"), "body", body_of(Then::TwoSlotBody));
  add_node(b.graph(), "Neg", {"loop_y"}, {"y"}, "neg");
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  const Model m = prepared(b);
  const MemoryPlan p = plan_of(m);
  const PlannedBuffer* loop_y = tensor_buffer(p.graphs[0], "loop_y");
  REQUIRE(loop_y != nullptr);
  CHECK(loop_y->alias == AliasKind::InPlace);
  REQUIRE(loop_y->group >= 0);
  CHECK(p.graphs[0].buffers[static_cast<size_t>(loop_y->group)].name == "init");
  TempDir dir("loop_initial_value_main");
  const auto model = CompiledModel::compile(write_model(dir, b), CompileOptions{});
  Session s(model, SessionOptions{true});
  const std::vector<float> x = x_values();
  for (const int64_t trips : kTrips) {
    INFO("trips " << trips);
    s.set_input("x", kFloat32, std::vector<int64_t>{1, 16}, x.data(), x.size() * sizeof(float));
    s.set_input("M", kInt64, std::vector<int64_t>{}, &trips, sizeof trips);
    s.run();
    std::vector<float> want = x;
    for (float& v : want) {
      v = std::max(v, 0.f);
      for (int64_t k = 0; k < trips; ++k) v = (v + 1.f) * v;
      v = -v;
    }
    CHECK(output_of(s, "y") == want);
  }
}

TEST_CASE("with storage sharing off, a Loop's initial value keeps bytes of the branch frame", "[loop-initial-value]") {
  const Model m = prepared(if_model());
  const MemoryPlan q = plan_memory(m, PlanOptions{});  // no alias rules
  verify_plan(m, q);
  CHECK(home_of(then_plan(q), "init") == -1);
  CHECK(then_plan(q).frame_bytes == kRow + 3 * kSlot + 2 * kRow);
  CHECK(then_plan(q).lower_bound_bytes == then_plan(plan_of(m)).lower_bound_bytes);

  TempDir dir("loop_initial_value_no_share");
  CompileOptions no_share;
  no_share.share_storage = false;
  const auto model = CompiledModel::compile(write_model(dir, if_model()), no_share);
  CHECK(home_of(then_plan(model->impl().plan), "init") == -1);
  require_plain_numbers(model);
}

TEST_CASE("the verifier rejects a Loop's initial value planted in an If output where the IR does not allow it, and one "
          "with no buffer", "[loop-initial-value][verifier]") {
  // Moves init's buffer (a group of its own) into the If output of branch output `k`.
  auto plant = [](GraphPlan& g, int32_t k) {
    PlannedBuffer* b = tensor_buffer(g, "init");
    REQUIRE(b != nullptr);
    REQUIRE(b->group == -1);
    b->bound_output = k;
    b->offset = 0;
  };
  SECTION("read after the Loop") {
    const Model m = prepared(if_model(Then::ReadAfterTheLoop));  // by Mul, which writes nothing in place
    MemoryPlan p = plan_of(m);
    plant(then_plan(p), 0);
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("'init' is read after Loop node 'loop'"));
  }
  SECTION("captured by the body") {
    const Model m = prepared(if_model(Then::CapturedByTheBody));
    MemoryPlan p = plan_of(m);
    plant(then_plan(p), 0);
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("'init' is read after Loop node 'loop'"));
  }
  SECTION("read twice by the Loop") {
    const Model m = prepared(if_model(Then::TwiceInitialValue));
    MemoryPlan p = plan_of(m);
    plant(then_plan(p), 0);
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("does not read exactly one input in those bytes"));
  }
  SECTION("in the If output of another branch output, whose writer does not read it") {
    const Model m = prepared(if_model(Then::ReadBeforeTheLoop));
    MemoryPlan p = plan_of(m);
    REQUIRE(home_of(then_plan(p), "init") == 0);
    tensor_buffer(then_plan(p), "init")->bound_output = 1;  // y2, which pre = Neg(init) is written into
    CHECK(rejected_by_verifier(m, p));
  }
  SECTION("in a Loop body, which has no If output") {
    const Model m = prepared(loop_in_loop_model());
    MemoryPlan p = plan_of(m);
    plant(p.graphs[graph_index(p, "body", "outer_loop")], 0);
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("is placed in an If output, but branch output 0 is not written into one"));
  }
  SECTION("no buffer at all") {
    const Model m = prepared(if_model());
    MemoryPlan p = plan_of(m);
    GraphPlan& then = then_plan(p);
    const PlannedBuffer* init = tensor_buffer(then, "init");
    REQUIRE(init != nullptr);
    REQUIRE(init->group == -1);
    const auto i = static_cast<int32_t>(init - then.buffers.data());
    for (const PlannedBuffer& b : then.buffers) REQUIRE(b.group != i);
    then.buffers.erase(then.buffers.begin() + i);
    for (Region& r : then.regions)
      if (r.buffer > i) --r.buffer;
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("'init' has no buffer in the plan"));
  }
}

TEST_CASE("plan files keep a Loop's initial value in the If output, and a loaded plan runs it",
          "[loop-initial-value][plan-file]") {
  const Model m = prepared(if_model());
  MemoryPlan p = plan_of(m);
  p.model_sha256 = m.sha256;
  TempDir dir("loop_initial_value_plan_file");
  write_plan_file(p, dir / "p.mplan");
  const MemoryPlan back = read_plan_file(dir / "p.mplan");
  CHECK(home_of(then_plan(back), "init") == 0);
  CHECK(tensor_buffer(then_plan(back), "init")->offset == 0);
  CHECK(then_plan(back).frame_bytes == then_plan(p).frame_bytes);
  verify_plan(m, back);

  // Through the public API: compile, save, load, run.
  const std::string path = write_model(dir, if_model());
  const auto compiled = CompiledModel::compile(path, CompileOptions{});
  compiled->save_plan(dir / "m.mplan");
  const auto loaded = CompiledModel::load(path, dir / "m.mplan");
  CHECK(home_of(then_plan(loaded->impl().plan), "init") == 0);
  CHECK(loaded->arena_bytes() == compiled->arena_bytes());
  require_plain_numbers(loaded);
}

TEST_CASE("a Loop body whose carried value an inner Loop starts from and returns updates it in place, and runs right",
          "[loop-initial-value][runtime]") {
  // outer Loop(N, "", x): its body's carried value is inner Loop(M, "", s_in)'s final value; the
  // inner Loop may write its output over s_in, so the outer state lives in the outer output.
  const ModelBuilder b = loop_in_loop_model(false);
  TempDir dir("loop_initial_value_nested");
  const auto model = CompiledModel::compile(write_model(dir, b), CompileOptions{});
  const MemoryPlan& p = model->impl().plan;
  REQUIRE(p.graphs[0].regions.size() == 1);
  bool seen = false;
  for (const CarriedSlots& c : p.graphs[0].regions[0].carried)
    if (c.name == "s_in") {
      seen = true;
      CHECK(c.home == SlotHome::NodeOutput);
      CHECK(c.writer == 1);  // the inner Loop (step 0 passes the condition on)
    }
  CHECK(seen);
  Session s(model, SessionOptions{true});
  for (const int64_t n : {0, 1, 3})
    for (const int64_t trips : kTrips) {
      INFO("N " << n << ", M " << trips);
      std::vector<float> want = x_values();
      for (float& v : want) v += static_cast<float>(n * trips);
      CHECK(run_nm(s, n, trips) == want);
    }
}
