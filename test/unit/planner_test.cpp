// The whole-model planner and the independent verifier, on the example models.
#include <catch2/catch.hpp>

#include "support/cli_runner.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "memplan/error.h"
#include "pipeline/compile_pipeline.h"
#include "plan/plan_file.h"
#include "plan/plan_peak.h"
#include "plan_file.pb.h"
#include "util/sha256.h"
#include "plan/verifier.h"

using namespace memplan;

namespace {

std::string model_path(const std::string& name) { return std::string(MEMPLAN_SOURCE_DIR) + "/models/" + name + "/model.onnx"; }

Compilation compile(const std::string& name, plan::Strategy s = plan::Strategy::Auto) {
  PlanOptions o;
  o.strategy = s;
  return compile_model(model_path(name), {}, o);
}

GraphPlan* graph_owned_by(MemoryPlan& p, const std::string& node, const std::string& attr) {
  for (auto& g : p.graphs)
    if (g.owner_node == node && g.owner_attribute == attr) return &g;
  return nullptr;
}

bool rejected(const Model& m, const MemoryPlan& p) {
  try {
    verify_plan(m, p);
    return false;
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Verification);
    return true;
  }
}

}  // namespace

TEST_CASE("every example model plans, verifies, and auto is no worse than any strategy", "[planner]") {
  for (const char* name : {"example", "nested_if_loop_if", "loop_scan_outputs", "loop_data_dependent_exit",
                           "if_different_shapes", "capture_two_levels", "scan_sum", "tiny_mlp"}) {
    INFO(name);
    Compilation c = compile(name);
    const auto& p = c.plan;
    CHECK(p.arena_bytes >= p.aliased_bound_bytes);  // shared storage can go below the no-alias bound
    CHECK(p.aliased_bound_bytes <= p.lower_bound_bytes);
    CHECK(p.arena_bytes <= p.naive_bytes);
    for (const auto& [strategy, bytes] : p.strategy_bytes) CHECK(p.arena_bytes <= bytes);
    for (plan::Strategy s : plan::concrete_strategies()) verify_plan(c.model, compile(name, s).plan);
  }
}

TEST_CASE("an If region is the larger of its branch frames, and branches share its bytes", "[planner]") {
  Compilation c = compile("example");
  auto& p = c.plan;
  const auto* then_g = graph_owned_by(p, "if0", "then_branch");
  const auto* else_g = graph_owned_by(p, "if0", "else_branch");
  REQUIRE(then_g);
  REQUIRE(else_g);
  CHECK(then_g->base_offset == else_g->base_offset);
  const auto& main = p.graphs[0];
  REQUIRE(main.regions.size() == 1);
  const auto& region = main.buffers[static_cast<size_t>(main.regions[0].buffer)];
  CHECK(region.size == std::max(then_g->frame_bytes, else_g->frame_bytes));
  CHECK(region.first == region.last);
  verify_plan(c.model, p);  // two branches sharing bytes are accepted
}

TEST_CASE("a Loop region is the body frame plus two slots per carried value", "[planner]") {
  Compilation c = compile("loop_scan_outputs");
  const auto& main = c.plan.graphs[0];
  REQUIRE(main.regions.size() == 1);
  const auto& r = main.regions[0];
  const auto& body = c.plan.graphs[r.subgraphs[0]];
  uint64_t slots = 0;
  for (const auto& s : r.carried) slots += (s.slot0 == s.slot1 ? 1 : 2) * ((s.size + 63) / 64 * 64);
  CHECK(main.buffers[r.buffer].size == body.frame_bytes + slots);
  CHECK(r.carried.size() == 3);  // iteration counter, condition, one carried value
}

TEST_CASE("the verifier rejects a buffer moved onto a live neighbour", "[planner][verifier]") {
  Compilation c = compile("tiny_mlp");
  auto& main = c.plan.graphs[0];
  // Find two buffers live at the same step and put the second onto the first.
  bool moved = false;
  for (size_t i = 0; i < main.buffers.size() && !moved; ++i)
    for (size_t j = 0; j < main.buffers.size() && !moved; ++j) {
      auto& a = main.buffers[i];
      auto& b = main.buffers[j];
      if (i != j && a.first <= b.last && b.first <= a.last && a.size && b.size) {
        b.offset = a.offset;
        moved = true;
      }
    }
  REQUIRE(moved);
  CHECK(rejected(c.model, c.plan));
}

TEST_CASE("the verifier rejects a loop-carried slot reused inside the body", "[planner][verifier]") {
  Compilation c = compile("loop_scan_outputs");
  auto& main = c.plan.graphs[0];
  auto& r = main.regions[0];
  auto& body = c.plan.graphs[static_cast<size_t>(r.subgraphs[0])];
  REQUIRE(body.buffers.size() > 0);
  // Grow the body frame over the slots and move a body buffer onto the carried value's slot 0.
  const auto& carried = r.carried[2];
  auto& victim = body.buffers[0];
  victim.offset = carried.slot0;
  body.frame_bytes = carried.slot0 + victim.size;
  CHECK(rejected(c.model, c.plan));
}

TEST_CASE("the verifier rejects misaligned offsets and frames that leave the arena", "[planner][verifier]") {
  Compilation c = compile("tiny_mlp");
  auto copy = c.plan;
  copy.graphs[0].buffers[0].offset = c.plan.graphs[0].buffers[0].offset + 8;
  CHECK(rejected(c.model, copy));
  copy = c.plan;
  copy.arena_bytes = copy.arena_bytes / 2;
  CHECK(rejected(c.model, copy));
}

TEST_CASE("plan files round-trip and refuse truncation, corruption and other models", "[planner][planfile]") {
  Compilation c = compile("example");
  const std::string path = std::string(MEMPLAN_BINARY_DIR) + "/test_example.mplan";
  write_plan_file(c.plan, path);
  MemoryPlan back = read_plan_file(path);
  CHECK(back.arena_bytes == c.plan.arena_bytes);
  CHECK(back.graphs.size() == c.plan.graphs.size());
  const Compilation loaded = load_compilation(model_path("example"), back, path);
  verify_plan(loaded.model, loaded.plan);

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << b;
  };
  write(bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(read_plan_file(path), Catch::Contains("truncated"));
  std::string corrupt = bytes;
  corrupt[20] = static_cast<char>(corrupt[20] ^ 0x55);
  write(corrupt);
  CHECK_THROWS_WITH(read_plan_file(path), Catch::Contains("corrupt"));
  write("not a plan at all");
  CHECK_THROWS_WITH(read_plan_file(path), Catch::Contains("not a memplan plan file"));
  {  // a well-formed file of format version 1 (plans named things by name then)
    planfile::Plan old;
    old.set_format_version(1);
    const std::string payload = old.SerializeAsString();
    std::string file = "MEMPLAN\n";
    for (int i = 0; i < 8; ++i) file += static_cast<char>((payload.size() >> (8 * i)) & 0xff);
    write(file + payload + sha256_hex(payload));
    CHECK_THROWS_WITH(read_plan_file(path), Catch::Contains("plan format version 1 is not supported") &&
                                                Catch::Contains("compile the model again"));
  }
  CHECK_THROWS_WITH(load_compilation(model_path("tiny_mlp"), back, path), Catch::Contains("another model"));
}

TEST_CASE("plan files with a valid checksum but a broken structure are refused before anything walks them",
          "[planner][planfile]") {
  Compilation c = compile("example");
  REQUIRE(c.plan.graphs.size() >= 3);
  const std::string path = std::string(MEMPLAN_BINARY_DIR) + "/test_broken.mplan";
  auto refused = [&](MemoryPlan p, const std::string& says) {
    write_plan_file(p, path);  // a correct checksum: only the structure is wrong
    INFO(says);
    CHECK_THROWS_WITH(read_plan_file(path), Catch::Contains("plan file is invalid") && Catch::Contains(says));
    memplan::test::Run r = memplan::test::run_cli({"inspect", path});
    CHECK_FALSE(r.signaled);
    CHECK(r.exit_code == 2);
  };
  MemoryPlan p = c.plan;
  p.graphs[1].parent = 1000;  // out of range: the report indexed past the graphs
  refused(p, "graph 1 names parent 1000");
  p = c.plan;
  p.graphs[1].parent = 2;  // with graph 2's parent 1, a cycle: inspect looped forever
  refused(p, "graph 1 names parent 2");
  p = c.plan;
  p.graphs[0].buffers[0].offset = UINT64_MAX - 8;  // offset + size wraps around
  refused(p, "lies outside its frame");
  p = c.plan;
  p.graphs[0].regions[0].buffer = -1;
  refused(p, "has no buffer");
  p = c.plan;
  p.graphs[0].frame_bytes = p.arena_bytes + 1;
  refused(p, "its frame leaves the arena");
  p = c.plan;
  p.alignment = 3;
  refused(p, "alignment");
  p = c.plan;
  p.graphs[0].buffers[0].kind = static_cast<BufferKind>(7);  // enums hold any integer on the wire
  refused(p, "a buffer of unknown kind");
  p = c.plan;
  p.graphs[0].buffers[0].node = 1000;
  refused(p, "names no value or step of its graph");
}

TEST_CASE("the verifier finds buffers by value and step: every loop slot once, no buffer for a value that needs none",
          "[planner][verifier]") {
  Compilation c = compile("loop_scan_outputs");
  REQUIRE_NOTHROW(verify_plan(c.model, c.plan));
  MemoryPlan p = c.plan;
  p.graphs[0].regions[0].carried.pop_back();  // a carried value without slots
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].regions[0].carried[1].slot = 0;  // the counter's slot twice, the condition's never
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].buffers[0].value = 100000;  // a value the graph does not have
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].buffers.push_back(p.graphs[0].buffers[0]);  // a tensor with two buffers
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].num_steps += 1;  // a plan for a graph with another node count
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].regions[0].carried.clear();  // a loop whose slots the executor would look for in vain
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].regions.clear();  // a loop with no region at all
  CHECK(rejected(c.model, p));
  p = c.plan;
  p.graphs[0].regions[0].subgraphs.clear();  // a region that holds no body
  CHECK(rejected(c.model, p));
  p = c.plan;
  PlannedBuffer second_scratchpad;
  second_scratchpad.kind = BufferKind::Scratchpad;
  second_scratchpad.node = second_scratchpad.first = second_scratchpad.last = 0;
  second_scratchpad.name = "x";
  p.graphs[0].buffers.push_back(second_scratchpad);
  p.graphs[0].buffers.push_back(second_scratchpad);  // the runtime would bind the last, the smaller
  CHECK_THROWS_WITH(verify_plan(c.model, p), Catch::Contains("has two scratchpads"));
}

TEST_CASE("ONNX's control-flow conformance models compile and verify", "[planner][conformance]") {
  const char* env = std::getenv("MEMPLAN_CONFORMANCE_DIR");
  const std::string dir = env ? env : std::string(MEMPLAN_SOURCE_DIR) + "/build/conformance";
  INFO("generate the suite with tools/gen_conformance.sh " << dir);
  for (const char* name : {"test_if", "test_loop11", "test_scan_sum", "test_scan9_sum"}) {
    INFO(name);
    const std::string path = dir + "/node/" + name + "/model.onnx";
    REQUIRE(std::filesystem::exists(path));
    ShapeOptions shapes;
    if (std::string(name) == "test_loop11") {
      // The trip count is a run-time input, so the scan output is dynamic; in strict mode it needs
      // a bound, and a clear error names the option. The body's Slice by the iteration number is
      // bounded by its input.
      Compilation dynamic = compile_model(path, shapes, {});
      REQUIRE(dynamic.plan.dynamic_tensors.size() == 1);
      CHECK(dynamic.plan.dynamic_tensors[0].name == "res_scan");
      shapes.static_only = true;
      CHECK_THROWS_WITH(compile_model(path, shapes, {}), Catch::Contains("bounds[res_scan] = <dims>"));
      shapes.bounds["res_scan"] = {5, 1};
    }
    Compilation c = compile_model(path, shapes, {});
    // Below the bound where every tensor has bytes of its own (a Scan's sum updated in place in
    // one slot), never below the bound over storage groups.
    CHECK(c.plan.arena_bytes >= c.plan.aliased_bound_bytes);
    CHECK(c.plan.aliased_bound_bytes <= c.plan.lower_bound_bytes);
    CHECK(c.plan.graphs.size() >= 2);
  }
}

TEST_CASE("the peak of a frame whose buffers are near 2^64 bytes each is counted without overflow (found by "
          "fuzz_onnx: the live sum overflowed int64)", "[planner]") {
  memplan::GraphPlan g;
  memplan::PlannedBuffer a, b;
  a.size = uint64_t{1} << 63;
  a.first = 0;
  a.last = 1;
  b.size = (uint64_t{1} << 63) + 4096;
  b.first = 1;
  b.last = 2;
  g.buffers = {a, b};
  const memplan::plan::Peak peak = memplan::plan::peak_of(g);
  CHECK(peak.step == 1);
  CHECK(peak.bytes == UINT64_MAX);  // both live at step 1: more than 64 bits hold, so it saturates
  CHECK(peak.live.size() == 2);
  g.buffers[1].first = 2;  // one at a time: the larger is the peak
  CHECK(memplan::plan::peak_of(g).bytes == b.size);
  CHECK(memplan::plan::peak_of(g).step == 2);
}
