// External inputs (CompileOptions::external_inputs): the main graph's inputs, and views of them,
// take no bytes of the arena; each run reads them where the caller keeps them. Tiny models with
// the alias rules typed in pin down the plan exactly; the verifier rejects planted external
// buffers; plan files keep them; sessions read bound and copied inputs alike, and never write them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

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

MemoryPlan external_plan(const Model& m, bool external, const plan::AliasRules& rules = view_and_in_place_rules) {
  PlanOptions o;
  o.aliasing = rules;
  o.external_inputs = external;
  MemoryPlan p = plan_memory(m, o);
  verify_plan(m, p);
  return p;
}

// r = Relu(x); y = Add(r, x): x is read after r is made, so with x in the arena two tensors are live.
ModelBuilder relu_add() {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_node(b.graph(), "Relu", {"x"}, {"r"}, "relu");
  add_node(b.graph(), "Add", {"r", "x"}, {"y"}, "add");
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  return b;
}

// v = Reshape(x, [4, 4]); y = Relu(v).
ModelBuilder reshape_relu() {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_initializer(b.graph(), tensor_i64("shape", {2}, {4, 4}));
  add_node(b.graph(), "Reshape", {"x", "shape"}, {"v"}, "reshape");
  add_node(b.graph(), "Relu", {"v"}, {"y"}, "relu");
  add_output(b.graph(), "y", elem::kFloat, {4, 4});
  return b;
}

const PlannedBuffer& buffer(const MemoryPlan& p, const std::string& name) {
  for (const PlannedBuffer& b : p.graphs.at(0).buffers)
    if (b.name == name) return b;
  FAIL("no buffer " << name);
  throw;
}

PlannedBuffer& buffer(MemoryPlan& p, const std::string& name) {
  return const_cast<PlannedBuffer&>(buffer(static_cast<const MemoryPlan&>(p), name));
}

bool refused_with(const MemoryPlan& p, const std::string& value, const std::string& reason) {
  const auto& r = p.graphs.at(0).refused_aliases;
  return std::any_of(r.begin(), r.end(), [&](const RefusedAlias& a) {
    return a.source == value && a.reason.find(reason) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("an external input takes no bytes of the arena: only what the graph makes is planned", "[external-inputs]") {
  const Model m = prepared(relu_add());
  const MemoryPlan inside = external_plan(m, false);
  const MemoryPlan outside = external_plan(m, true);
  CHECK(inside.arena_bytes == 2 * kUnitBytes);  // x beside r (y is written over r)
  CHECK(outside.arena_bytes == kUnitBytes);     // r and y, in place
  CHECK(outside.external_inputs);
  const PlannedBuffer& x = buffer(outside, "x");
  CHECK(x.external);
  CHECK(x.offset == 0);
  CHECK_FALSE(x.in_frame());
  CHECK_FALSE(buffer(outside, "r").external);
  CHECK(buffer(outside, "y").alias == AliasKind::InPlace);
  // The bounds count the arena's tensors only: x is the caller's in every plan.
  CHECK(outside.lower_bound_bytes == 2 * kUnitBytes);
  CHECK(inside.lower_bound_bytes == 3 * kUnitBytes);
}

TEST_CASE("an external input is never written in place, and the refusal says why", "[external-inputs]") {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_node(b.graph(), "Relu", {"x"}, {"y"}, "relu");
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  const MemoryPlan p = external_plan(prepared(b), true);
  CHECK(buffer(p, "y").alias == AliasKind::None);
  CHECK(p.arena_bytes == kUnitBytes);
  CHECK(refused_with(p, "x", "is a graph input or a view of one: never written in place"));
}

TEST_CASE("a view of an external input is the caller's bytes too, and is not written in place", "[external-inputs]") {
  const Model m = prepared(reshape_relu());
  const MemoryPlan p = external_plan(m, true);
  const PlannedBuffer& v = buffer(p, "v");
  CHECK(v.external);
  CHECK(v.alias == AliasKind::View);
  CHECK(v.offset == 0);
  CHECK(p.arena_bytes == kUnitBytes);  // y only
  CHECK(refused_with(p, "v", "never written in place"));
  // Without sharing the view is a copy, in the arena.
  const MemoryPlan copied = external_plan(m, true, {});
  CHECK_FALSE(buffer(copied, "v").external);
  CHECK(copied.arena_bytes == 2 * kUnitBytes);
}

TEST_CASE("the verifier rejects external buffers that are no input's, and inputs that should be external",
          "[external-inputs]") {
  const Model m = prepared(relu_add());
  {
    MemoryPlan p = external_plan(m, true);
    buffer(p, "r").external = true;
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("'r' is planned in the caller's bytes, but it is no main-graph input"));
  }
  {
    MemoryPlan p = external_plan(m, true);
    buffer(p, "x").external = false;
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("'x' is not planned in the caller's bytes"));
  }
  {
    MemoryPlan p = external_plan(m, false);
    buffer(p, "x").external = true;  // a plan whose inputs are in the arena
    CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("the plan's inputs are in the arena"));
  }
  {
    const Model views = prepared(reshape_relu());
    MemoryPlan p = external_plan(views, true);
    buffer(p, "v").external = false;  // a member out of its group's bytes
    CHECK_THROWS_WITH(verify_plan(views, p), Catch::Contains("disagree on being in the caller's bytes"));
  }
}

TEST_CASE("plan files keep external inputs", "[external-inputs][plan-file]") {
  const Model m = prepared(reshape_relu());
  MemoryPlan p = external_plan(m, true);
  p.model_sha256 = m.sha256;
  TempDir dir("external_inputs");
  write_plan_file(p, dir / "p.mplan");
  const MemoryPlan back = read_plan_file(dir / "p.mplan");
  CHECK(back.external_inputs);
  CHECK(buffer(back, "x").external);
  CHECK(buffer(back, "v").external);
  CHECK_FALSE(buffer(back, "y").external);
  verify_plan(m, back);
}

namespace {

struct AlignedFloats {
  explicit AlignedFloats(size_t n) : size(n), data(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))) {}
  ~AlignedFloats() { std::free(data); }
  size_t size;
  float* data;
};

std::vector<float> output_of(const Session& s, const std::string& name) {
  const TensorRef y = s.output(name);
  const auto* f = static_cast<const float*>(y.data);
  return {f, f + y.bytes / sizeof(float)};
}

}  // namespace

TEST_CASE("a session reads bound and copied external inputs, never writes them, and matches an arena plan",
          "[external-inputs][runtime]") {
  TempDir dir("external_inputs_run");
  {
    std::ofstream(dir / "reshape_relu.onnx", std::ios::binary) << reshape_relu().bytes();
  }
  const std::string path = dir / "reshape_relu.onnx";
  CompileOptions o;
  o.external_inputs = true;
  const auto external = CompiledModel::compile(path, o);
  const auto arena = CompiledModel::compile(path, {});
  CHECK(external->external_inputs());
  CHECK_FALSE(arena->external_inputs());
  CHECK(external->arena_bytes() < arena->arena_bytes());

  AlignedFloats x(16);
  for (size_t i = 0; i < x.size; ++i) x.data[i] = static_cast<float>(i) - 7.5f;
  const std::vector<float> before(x.data, x.data + x.size);
  const std::vector<int64_t> shape{1, 16};
  SessionOptions guard;
  guard.check_memory = true;

  Session reference(arena, guard);
  reference.set_input("x", kFloat32, shape, x.data, 64);
  reference.run();
  const std::vector<float> want = output_of(reference, "y");

  Session bound(external, guard);
  bound.bind_input("x", kFloat32, shape, x.data, 64);
  bound.run();
  CHECK(output_of(bound, "y") == want);
  CHECK(std::equal(before.begin(), before.end(), x.data));
  bound.run();  // a bound input stays bound
  CHECK(output_of(bound, "y") == want);

  // Set by copy: the session's own buffer, kept for later runs; the caller's array may change.
  Session copied(external, guard);
  copied.set_input("x", kFloat32, shape, x.data, 64);
  std::fill(x.data, x.data + x.size, 100.f);
  copied.run();
  CHECK(output_of(copied, "y") == want);
  copied.run();
  CHECK(output_of(copied, "y") == want);

  // A misaligned zero-copy buffer is refused by name.
  std::vector<float> loose(17);
  CHECK_THROWS_WITH(bound.bind_input("x", kFloat32, shape, loose.data() + 1, 64), Catch::Contains("64-byte aligned"));
  Session unset(external);
  CHECK_THROWS_WITH(unset.run(), Catch::Contains("input 'x' is not set"));
}

TEST_CASE("the design example with external inputs needs the arena of its intermediates only, and matches in guard mode",
          "[external-inputs][runtime]") {
  const std::string model = std::string(MEMPLAN_SOURCE_DIR) + "/models/example/model.onnx";
  CompileOptions o;
  o.prefer = "memory";
  o.external_inputs = true;
  const auto external = CompiledModel::compile(model, o);
  o.external_inputs = false;
  const auto inside = CompiledModel::compile(model, o);
  // relu_out and the If output (401,408 bytes each) are live across the If whatever the plan; the
  // branch adds its Conv's scratchpad only, one row at a time. The inputs (two of 401,408 bytes)
  // are the caller's. The design reports this graph at 823,104 bytes.
  CHECK(external->arena_bytes() <= 823104);
  CHECK(inside->arena_bytes() >= external->arena_bytes() + 401408);

  const std::vector<int64_t> shape{1, 8, 112, 112};
  AlignedFloats x(8 * 112 * 112), add(x.size);
  for (size_t i = 0; i < x.size; ++i) {
    x.data[i] = static_cast<float>((i * 7919) % 1000) / 500.f - 1.f;
    add.data[i] = static_cast<float>((i * 104729) % 1000) / 1000.f;
  }
  const std::vector<float> x_before(x.data, x.data + x.size), add_before(add.data, add.data + add.size);
  for (const bool take_then : {true, false}) {
    INFO("cond " << take_then);
    const uint8_t cond = take_then ? 1 : 0;
    std::vector<std::vector<float>> outs;
    for (const auto& m : {external, inside}) {
      SessionOptions so;
      so.check_memory = true;
      Session s(m, so);
      s.bind_input("input", kFloat32, shape, x.data, x.size * sizeof(float));
      s.set_input("cond", kBool, std::span<const int64_t>(), &cond, 1);
      s.bind_input("add_in", kFloat32, shape, add.data, add.size * sizeof(float));
      s.run();
      outs.push_back(output_of(s, "output"));
    }
    REQUIRE(outs[0].size() == outs[1].size());
    float worst = 0;  // the two plans may take different (leaner) kernels
    for (size_t i = 0; i < outs[0].size(); ++i) worst = std::max(worst, std::abs(outs[0][i] - outs[1][i]));
    CHECK(worst < 1e-4f);
    CHECK(std::equal(x_before.begin(), x_before.end(), x.data));
    CHECK(std::equal(add_before.begin(), add_before.end(), add.data));
  }
}
