// A branch's storage group that dies where a branch output is written over it in place lives in
// the bytes of the If output that branch output goes to, not in the branch's frame. Tiny If
// models with the alias rules typed in pin down when that happens and why it is refused; the
// verifier rejects planted wrong placements; plan files keep them; and the real pipeline runs the
// design example (Conv, then a Loop starting from it) that way in guard mode.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>

#include "memplan/error.h"
#include "memplan/memplan.h"
#include "plan/plan_file.h"
#include "runtime/compiled_model_impl.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"
#include "support/typed_plans.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// y = If(cond) { then: `then_nodes`, returning "t_out" } { else: Add(x, two) } over [1, 16]
// floats; x is a main-graph input the branches read. `extra_output` also returns that value of
// the then-branch as the If's second output (and the else-branch returns x + two twice).
ModelBuilder if_model(const std::vector<std::array<std::string, 3>>& then_nodes, const std::string& extra_output = "") {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_input(b.graph(), "cond", elem::kBool, {});
  add_initializer(b.graph(), tensor_f32("two", {1}, {2.f}));
  onnx::GraphProto then_g = branch_graph("then");
  for (const auto& [op, input, output] : then_nodes)
    add_node(then_g, op, op == "Relu" ? std::vector<std::string>{input} : std::vector<std::string>{input, "two"}, {output},
             output);
  add_output(then_g, "t_out", elem::kFloat, {1, 16});
  onnx::GraphProto else_g = branch_graph("else");
  add_node(else_g, "Add", {"x", "two"}, {"e_out"}, "e_add");
  add_output(else_g, "e_out", elem::kFloat, {1, 16});
  std::vector<std::string> outs{"y"};
  if (!extra_output.empty()) {
    add_output(then_g, extra_output, elem::kFloat, {1, 16});
    add_output(else_g, "e_out", elem::kFloat, {1, 16});
    outs.push_back("y2");
  }
  add_if(b.graph(), "cond", outs, then_g, else_g);
  for (const std::string& o : outs) add_output(b.graph(), o, elem::kFloat, {1, 16});
  return b;
}

const GraphPlan& branch(const MemoryPlan& p, const std::string& attribute) {
  for (const GraphPlan& g : p.graphs)
    if (g.owner_attribute == attribute) return g;
  FAIL("no " << attribute);
  throw;
}

const PlannedBuffer& buffer(const GraphPlan& g, const std::string& name) {
  for (const PlannedBuffer& b : g.buffers)
    if (b.name == name) return b;
  FAIL("no buffer " << name);
  throw;
}

bool refused_with(const GraphPlan& g, const std::string& value, const std::string& reason) {
  return std::any_of(g.refused_aliases.begin(), g.refused_aliases.end(), [&](const RefusedAlias& r) {
    return r.source == value && r.reason.find(reason) != std::string::npos;
  });
}

// then: a = x * 2 (bytes of its own: Mul writes nothing in place), b = a + 2 over a, t_out = Relu(b).
const std::vector<std::array<std::string, 3>> kChain{{"Mul", "x", "a"}, {"Add", "a", "b"}, {"Relu", "b", "t_out"}};

}  // namespace

TEST_CASE("a branch's group that dies where its output is written over it lives in the If output: the frame holds none of it",
          "[if-output]") {
  const Model m = prepared(if_model(kChain));
  const MemoryPlan p = typed_plan(m, view_and_in_place_rules);
  const GraphPlan& then_g = branch(p, "then_branch");
  CHECK(then_g.frame_bytes == 0);
  for (const std::string name : {"a", "b"}) {
    INFO(name);
    CHECK(buffer(then_g, name).bound_output == 0);
    CHECK(buffer(then_g, name).offset == 0);
  }
  // The bound without aliasing still gives each its own bytes.
  CHECK(then_g.lower_bound_bytes == 2 * kUnitBytes);
  CHECK(then_g.aliased_bound_bytes == 0);
  // The else-branch's Add reads the enclosing graph's x: nothing of its own to move.
  CHECK(refused_with(branch(p, "else_branch"), "x", "lives in the memory of the enclosing graph"));
}

TEST_CASE("a branch's group still read after the output is written keeps bytes of the frame, and the refusal says why",
          "[if-output]") {
  // t_out = Relu(b) over b, but the branch also returns b * 2 (the If's second output) after it.
  const Model m = prepared(if_model({{"Mul", "x", "a"}, {"Add", "a", "b"}, {"Relu", "b", "t_out"}, {"Mul", "b", "t2"}}, "t2"));
  const MemoryPlan p = typed_plan(m, view_and_in_place_rules);
  const GraphPlan& then_g = branch(p, "then_branch");
  CHECK(buffer(then_g, "b").bound_output == -1);
  CHECK(then_g.frame_bytes == kUnitBytes);
  CHECK(refused_with(then_g, "b", "written into the If output: its bytes are read after this node"));
}

TEST_CASE("without storage sharing a branch's values keep bytes of the frame", "[if-output]") {
  const Model m = prepared(if_model(kChain));
  const MemoryPlan p = plan_memory(m, PlanOptions{});  // no alias rules: --no-share
  verify_plan(m, p);
  const GraphPlan& then_g = branch(p, "then_branch");
  CHECK(buffer(then_g, "a").bound_output == -1);
  CHECK(buffer(then_g, "b").bound_output == -1);
  CHECK(then_g.frame_bytes == 2 * kUnitBytes);
}

TEST_CASE("the verifier rejects a group planted in an If output that the output's writer does not read last",
          "[if-output]") {
  const Model m = prepared(if_model({{"Mul", "x", "a"}, {"Add", "a", "b"}, {"Relu", "b", "t_out"}, {"Mul", "b", "t2"}}, "t2"));
  MemoryPlan p = typed_plan(m, view_and_in_place_rules);
  GraphPlan& then_g = const_cast<GraphPlan&>(branch(p, "then_branch"));
  // Plant the group of a and b in the If output: t2 = b * 2 reads b after t_out is written.
  for (PlannedBuffer& b : then_g.buffers)
    if (b.name == "a" || b.name == "b") {
      b.bound_output = 0;
      b.offset = 0;
    }
  CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("is read after"));

  MemoryPlan q = typed_plan(m, view_and_in_place_rules);
  GraphPlan& then_q = const_cast<GraphPlan&>(branch(q, "then_branch"));
  for (PlannedBuffer& b : then_q.buffers)
    if (b.name == "a" || b.name == "b") b.bound_output = 5;  // a branch output that does not exist
  CHECK_THROWS_WITH(verify_plan(m, q), Catch::Contains("is not written into one"));
}

TEST_CASE("plan files keep a group's place in an If output", "[if-output][plan-file]") {
  const Model m = prepared(if_model(kChain));
  MemoryPlan p = typed_plan(m, view_and_in_place_rules);
  p.model_sha256 = m.sha256;
  TempDir dir("if_output_groups");
  write_plan_file(p, dir / "p.mplan");
  const MemoryPlan back = read_plan_file(dir / "p.mplan");
  CHECK(buffer(branch(back, "then_branch"), "a").bound_output == 0);
  CHECK(buffer(branch(back, "then_branch"), "b").bound_output == 0);
  verify_plan(m, back);
}

TEST_CASE("the design example's then-branch writes its Conv straight into the If output and matches in guard mode",
          "[if-output][runtime]") {
  const std::string model = std::string(MEMPLAN_SOURCE_DIR) + "/models/example/model.onnx";
  CompileOptions o;
  o.prefer = "memory";
  const auto compiled = CompiledModel::compile(model, o);
  const MemoryPlan& p = compiled->impl().plan;
  CHECK(buffer(branch(p, "then_branch"), "then_conv").bound_output == 0);
  // add_in, relu_out and if_out are live across the If whatever the plan: the branch adds its
  // scratchpads only.
  CHECK(p.arena_bytes < 3 * 401408 + 100 * 1024);
  CompileOptions plain;
  plain.prefer = "speed";
  plain.share_storage = false;
  const auto reference = CompiledModel::compile(model, plain);
  const std::vector<int64_t> shape{1, 8, 112, 112};
  std::vector<float> x(8 * 112 * 112), add(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 7919) % 1000) / 500.f - 1.f;
    add[i] = static_cast<float>((i * 104729) % 1000) / 1000.f;
  }
  for (const bool take_then : {true, false}) {
    INFO("cond " << take_then);
    std::vector<std::vector<float>> outs;
    for (const auto& [m, guard] : {std::pair{compiled, true}, std::pair{reference, false}}) {
      SessionOptions so;
      so.check_memory = guard;
      Session s(m, so);
      const uint8_t cond = take_then ? 1 : 0;
      s.set_input("input", kFloat32, shape, x.data(), x.size() * sizeof(float));
      s.set_input("cond", kBool, std::span<const int64_t>(), &cond, 1);
      s.set_input("add_in", kFloat32, shape, add.data(), add.size() * sizeof(float));
      s.run();
      const TensorRef y = s.output("output");
      const auto* f = static_cast<const float*>(y.data);
      outs.emplace_back(f, f + y.bytes / sizeof(float));
    }
    REQUIRE(outs[0].size() == outs[1].size());
    float worst = 0;
    for (size_t i = 0; i < outs[0].size(); ++i) worst = std::max(worst, std::abs(outs[0][i] - outs[1][i]));
    CHECK(worst < 1e-4f);
  }
}
