// Storage groups: which tensors share bytes (views, outputs written in place), on tiny hand-built
// graphs with the alias rules typed in, so each rule and each refusal is pinned down exactly; then
// the verifier against planted wrong aliases, the plan file, and whole models run both ways.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "memplan/error.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "plan/storage_groups.h"
#include "plan/verifier.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"
#include "support/typed_plans.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// Kernels as the tests declare them: Reshape is a view; Relu and Add may write over input 0;
// "both" (Add named so) over either input.
plan::NodeAliasing typed_rules(const Node& n) {
  plan::NodeAliasing a;
  if (n.op_type == "Reshape") a.view_of = 0;
  if (n.op_type == "Relu") a.in_place = {0};
  if (n.op_type == "Add") a.in_place = n.name == "both" ? std::vector<size_t>{0, 1} : std::vector<size_t>{0};
  a.concat = n.op_type == "Concat";
  return a;
}

constexpr uint64_t kTensor = 4 * 16;  // a [1, 16] float tensor: 64 bytes, one alignment unit

// A chain of nodes over [1, 16] floats; `nodes` are {op, inputs, output, name}.
struct Node4 {
  std::string op;
  std::vector<std::string> inputs;
  std::string output, name;
};

Model chain(const std::vector<Node4>& nodes, const std::vector<std::string>& outputs) {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_initializer(b.graph(), tensor_i64("shape", {2}, {1, 16}));
  for (const Node4& n : nodes) add_node(b.graph(), n.op, n.inputs, {n.output}, n.name);
  for (const std::string& o : outputs) add_output(b.graph(), o, elem::kFloat, {1, 16});
  return prepared(b);
}

MemoryPlan plan_of(const Model& m) { return typed_plan(m, typed_rules); }

const PlannedBuffer& buffer(const MemoryPlan& p, const std::string& name) {
  for (const auto& b : p.graphs[0].buffers)
    if (b.name == name) return b;
  FAIL("no buffer " << name);
  throw;
}

bool shares(const MemoryPlan& p, const std::string& a, const std::string& b) {
  const auto& x = buffer(p, a);
  const auto& y = buffer(p, b);
  const auto root = [&](const PlannedBuffer& v) { return v.group >= 0 ? v.group : static_cast<int32_t>(&v - p.graphs[0].buffers.data()); };
  return root(x) == root(y) && x.offset == y.offset;
}

// Plants buffer `member` into the group of buffer `root`, at root's offset, as `kind`.
PlannedBuffer& plant(MemoryPlan& p, const std::string& member, const std::string& root, AliasKind kind) {
  auto& bufs = p.graphs[0].buffers;
  const auto r = static_cast<int32_t>(&buffer(p, root) - bufs.data());
  auto& b = const_cast<PlannedBuffer&>(buffer(p, member));
  b.group = r;
  b.alias = kind;
  b.offset = bufs[static_cast<size_t>(r)].offset;
  return b;
}

const RefusedAlias* refusal(const MemoryPlan& p, const std::string& value) {
  for (const auto& r : p.graphs[0].refused_aliases)
    if (r.value == value) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("a view shares its input's bytes, and an output written in place over a dying input joins them",
          "[storage]") {
  // x -> Relu a -> Reshape b (view of a) -> Relu c (over b, which dies there) -> output
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Reshape", {"a", "shape"}, "b", "v"}, {"Relu", {"b"}, "c", "r2"}}, {"c"});
  MemoryPlan p = plan_of(m);
  CHECK(buffer(p, "b").alias == AliasKind::View);
  CHECK(buffer(p, "c").alias == AliasKind::InPlace);
  CHECK(shares(p, "a", "b"));
  CHECK(shares(p, "a", "c"));
  CHECK_FALSE(shares(p, "x", "a"));
  // x and one group: two buffers, where every tensor its own bytes needs four, live two at a time.
  CHECK(p.arena_bytes == 2 * kTensor);
  CHECK(p.aliased_bound_bytes == 2 * kTensor);
  CHECK(p.lower_bound_bytes == 2 * kTensor);
  CHECK(p.naive_bytes == 4 * kTensor);
}

TEST_CASE("a graph input, or a view of one, is never written in place", "[storage]") {
  Model m = chain({{"Reshape", {"x", "shape"}, "v", "view"}, {"Relu", {"v"}, "y", "relu"}}, {"y"});
  MemoryPlan p = plan_of(m);
  CHECK(shares(p, "x", "v"));  // reading the caller's bytes is fine
  CHECK_FALSE(shares(p, "v", "y"));
  const RefusedAlias* r = refusal(p, "y");
  REQUIRE(r);
  CHECK(r->source == "v");
  CHECK(r->node == "relu");
  CHECK_THAT(r->reason, Catch::Contains("graph input") && Catch::Contains("never written in place"));
}

TEST_CASE("an input that is read after the node is not written over, and the refusal names the reader",
          "[storage]") {
  // b = Relu(a) cannot overwrite a (c reads a later); c = Add(a, b) overwrites a, which dies there.
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Relu", {"a"}, "b", "r2"}, {"Add", {"a", "b"}, "c", "add"}}, {"c"});
  MemoryPlan p = plan_of(m);
  CHECK_FALSE(shares(p, "a", "b"));
  const RefusedAlias* r = refusal(p, "b");
  REQUIRE(r);
  CHECK_THAT(r->reason, Catch::Contains("read after this node") && Catch::Contains("'add'"));
  CHECK(shares(p, "a", "c"));
  CHECK(buffer(p, "c").alias == AliasKind::InPlace);
}

TEST_CASE("a node that reads the same bytes twice is not written over them", "[storage]") {
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Add", {"a", "a"}, "y", "both"}}, {"y"});
  MemoryPlan p = plan_of(m);
  CHECK_FALSE(shares(p, "a", "y"));
  const RefusedAlias* r = refusal(p, "y");
  REQUIRE(r);
  CHECK_THAT(r->reason, Catch::Contains("also reads those bytes as input"));
}

TEST_CASE("a graph output is never written over, even where nothing else reads it", "[storage]") {
  // a is returned, and read by y = Relu(a): y cannot take a's bytes.
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Relu", {"a"}, "y", "r2"}}, {"a", "y"});
  MemoryPlan p = plan_of(m);
  CHECK_FALSE(shares(p, "a", "y"));
  REQUIRE(refusal(p, "y"));
  CHECK_THAT(refusal(p, "y")->reason, Catch::Contains("graph output"));
}

TEST_CASE("a weight is never shared: it lives outside the arena", "[storage]") {
  ModelBuilder b;
  add_initializer(b.graph(), tensor_f32("w", {1, 16}, std::vector<float>(16, 1.f)));
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_node(b.graph(), "Add", {"w", "x"}, {"y"}, "add");
  add_output(b.graph(), "y", elem::kFloat, {1, 16});
  Model m = b.import();
  prepare_model(m, {});
  MemoryPlan p = plan_of(m);
  REQUIRE(refusal(p, "y"));
  CHECK_THAT(refusal(p, "y")->reason, Catch::Contains("weight"));
}

TEST_CASE("without alias rules every tensor has bytes of its own", "[storage]") {
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Reshape", {"a", "shape"}, "b", "v"}, {"Relu", {"b"}, "c", "r2"}}, {"c"});
  MemoryPlan p = plan_memory(m, {});
  for (const auto& buf : p.graphs[0].buffers) {
    CHECK(buf.group == -1);
    CHECK(buf.alias == AliasKind::None);
  }
  CHECK(p.graphs[0].refused_aliases.empty());
  CHECK(p.arena_bytes == 2 * kTensor);  // a, b, c still reuse each other's bytes in time
}

// x [1, 16] -> a = Relu(x), b = Relu(x), d = Relu(x); c1 = Concat(a, b) [1, 32]; c2 = Concat(c1, d) [1, 48].
Model concat_chain(bool second_concat_reads_input = false) {
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {1, 16});
  add_node(b.graph(), "Relu", {"x"}, {"a"}, "ra");
  add_node(b.graph(), "Relu", {"x"}, {"b"}, "rb");
  add_node(b.graph(), "Relu", {"x"}, {"d"}, "rd");
  attr_int(add_node(b.graph(), "Concat", {"a", "b"}, {"c1"}, "cat1"), "axis", 1);
  attr_int(add_node(b.graph(), "Concat", {"c1", second_concat_reads_input ? "x" : "d"}, {"c2"}, "cat2"), "axis", 1);
  add_output(b.graph(), "c2", elem::kFloat, {1, 48});
  Model m = b.import();
  prepare_model(m, {});
  return m;
}

TEST_CASE("producers write straight into their slices of a Concat, and a chain of Concats is one buffer",
          "[storage]") {
  Model m = concat_chain();
  MemoryPlan p = plan_of(m);
  const uint64_t at = buffer(p, "c2").offset;
  CHECK(buffer(p, "c1").alias == AliasKind::ConcatSlice);
  CHECK(buffer(p, "a").alias == AliasKind::ConcatSlice);
  CHECK(buffer(p, "a").offset == at);
  CHECK(buffer(p, "b").offset == at + kTensor);
  CHECK(buffer(p, "c1").offset == at);
  CHECK(buffer(p, "d").offset == at + 2 * kTensor);
  // x and the one buffer of c2: below the no-alias bound, where c1 and c2 are live together.
  CHECK(p.arena_bytes == kTensor + 3 * kTensor);
  CHECK(p.arena_bytes < p.lower_bound_bytes);
}

TEST_CASE("a Concat of a graph input copies all its inputs, and says why", "[storage]") {
  Model m = concat_chain(true);
  MemoryPlan p = plan_of(m);
  CHECK(buffer(p, "c1").alias == AliasKind::None);  // cat2 copies; cat1, the next in the chain, goes in place
  CHECK(buffer(p, "a").alias == AliasKind::ConcatSlice);
  bool said = false;
  for (const auto& r : p.graphs[0].refused_aliases)
    said = said || (r.node == "cat2" && r.reason.find("'x': it is a graph input") != std::string::npos);
  CHECK(said);
}

TEST_CASE("the verifier catches Concat slices planted in each other's places", "[storage][verifier]") {
  Model m = concat_chain();
  MemoryPlan p = plan_of(m);
  std::swap(const_cast<PlannedBuffer&>(buffer(p, "a")).offset, const_cast<PlannedBuffer&>(buffer(p, "b")).offset);
  CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("do not lie end to end"));
}

TEST_CASE("the verifier catches a planted in-place alias over bytes still to be read", "[storage][verifier]") {
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Relu", {"a"}, "b", "r2"}, {"Add", {"a", "b"}, "c", "add"}}, {"c"});
  MemoryPlan p = plan_of(m);
  plant(p, "b", "a", AliasKind::InPlace);
  CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("written in place at step 1 over 'a', which is read until step 2"));
}

TEST_CASE("the verifier catches a planted view whose node is no view, and a member off its root's bytes",
          "[storage][verifier]") {
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Relu", {"a"}, "b", "r2"}}, {"b"});
  MemoryPlan p = plan_of(m);
  PlannedBuffer& b = plant(p, "b", "a", AliasKind::View);
  CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("planned as a view") && Catch::Contains("r2"));
  b.alias = AliasKind::InPlace;
  b.offset += 64;
  CHECK_THROWS_WITH(verify_plan(m, p), Catch::Contains("does not lie on the bytes of its group's root"));
}

TEST_CASE("plan files keep storage groups and refusals, a group naming a wrong root is refused",
          "[storage][planfile]") {
  TempDir dir("storage_groups");
  Model m = chain({{"Relu", {"x"}, "a", "r1"}, {"Reshape", {"a", "shape"}, "b", "v"}, {"Relu", {"a"}, "c", "r2"},
                   {"Add", {"b", "c"}, "d", "add"}},
                  {"d"});
  MemoryPlan p = plan_of(m);
  const std::string path = dir / "p.mplan";
  write_plan_file(p, path);
  MemoryPlan back = read_plan_file(path);
  REQUIRE(back.graphs[0].buffers.size() == p.graphs[0].buffers.size());
  for (size_t i = 0; i < p.graphs[0].buffers.size(); ++i) {
    CHECK(back.graphs[0].buffers[i].group == p.graphs[0].buffers[i].group);
    CHECK(back.graphs[0].buffers[i].alias == p.graphs[0].buffers[i].alias);
  }
  CHECK(back.aliased_bound_bytes == p.aliased_bound_bytes);
  REQUIRE(back.graphs[0].refused_aliases.size() == p.graphs[0].refused_aliases.size());
  REQUIRE_FALSE(p.graphs[0].refused_aliases.empty());  // c cannot overwrite a: b, a view of a, is read by add
  CHECK(back.graphs[0].refused_aliases[0].reason == p.graphs[0].refused_aliases[0].reason);
  verify_plan(m, back);

  auto& b = p.graphs[0].buffers[static_cast<size_t>(&buffer(p, "b") - p.graphs[0].buffers.data())];
  b.group = 1000;
  write_plan_file(p, path);
  CHECK_THROWS_WITH(read_plan_file(path), Catch::Contains("names group 1000, past the buffers"));
}

TEST_CASE("a real model runs with shared storage in a smaller arena, in guard mode, to the same outputs",
          "[storage][runtime]") {
  // blazeface: Conv + Add residuals (the Conv accumulates into its addend), Relu and Pad
  const std::string model = std::string(MEMPLAN_SOURCE_DIR) + "/models/real/blazeface_back_256/model.onnx";
  CompileOptions shared, own;
  own.share_storage = false;
  // The same kernels for both, bit for bit: kernel selection could take a leaner variant for one
  // arena and not the other, and its sums come in another order.
  shared.prefer = own.prefer = "speed";
  auto with = CompiledModel::compile(model, shared);
  auto without = CompiledModel::compile(model, own);
  CHECK(with->arena_bytes() < without->arena_bytes());
  Session a(with, SessionOptions{true});  // guard mode: a clobbered live buffer would throw
  Session b(without, SessionOptions{true});
  for (const auto& in : with->inputs()) {
    std::vector<std::byte> bytes(in.capacity_bytes);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 37 + 11) % 251 & 0x3f);
    a.set_input(in.name, in.dtype, in.shape, bytes.data(), bytes.size());
    b.set_input(in.name, in.dtype, in.shape, bytes.data(), bytes.size());
  }
  a.run();
  b.run();
  for (const auto& out : with->outputs()) {
    const TensorRef x = a.output(out.name), y = b.output(out.name);
    REQUIRE(x.bytes == y.bytes);
    CHECK(std::memcmp(x.data, y.data, x.bytes) == 0);
  }
}
