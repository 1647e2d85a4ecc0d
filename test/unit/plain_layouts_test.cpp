// Layouts as a memory choice: preferring memory, a model is planned with oneDNN's blocked and
// channels-last layouts and with every float tensor plain, and keeps the smaller arena (the
// layouts at a tie); the report says which and what the other had; a plan records the choice and
// loading assigns the same layouts. Through the public API, on two of models/patterns' converter
// patterns with ONNX Runtime's outputs. Both hold at AVX-512 and at AVX2 (ctest runs [isa] again
// under DNNL_MAX_CPU_ISA=AVX2).
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "memplan/memplan.h"
#include "plan/plan_file.h"
#include "support/temp_dir.h"
#include "support/test_data_set.h"

using namespace memplan;
using namespace memplan::test;
namespace fs = std::filesystem;

namespace {

const fs::path kPatterns = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "patterns";

std::shared_ptr<const CompiledModel> compiled(const fs::path& model, const std::string& prefer) {
  CompileOptions o;
  o.prefer = prefer;
  return CompiledModel::compile(model.string(), o);
}

// In guard mode (every kernel checked to stay in its own bytes), against ONNX Runtime's outputs.
void require_patterns_outputs(const std::shared_ptr<const CompiledModel>& m, const fs::path& folder) {
  const DataSet d = read_data_set(folder / "test_data_set_0");
  REQUIRE(!d.outputs.empty());
  SessionOptions guard;
  guard.check_memory = true;
  Session session(m, guard);
  set_inputs(session, d);
  session.run();
  require_outputs_close(session, d, abs_rel(1e-4, 1e-3));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("preferring memory, a model whose layouts' copies make the larger arena is planned plain, and its plan "
          "loads plain again", "[layouts][plan][isa]") {
  // Paddle's hard-swish block: a Conv reading the plain graph input, channel counts no block
  // divides, a plain graph output. With the layouts, the Convs copy what they read into the layout
  // their kernels take (491,520 bytes at AVX-512, 393,216 at AVX2); plain, the Convs run on GEMM and
  // copy nothing (344,064).
  const fs::path folder = kPatterns / "paddle_hardswish";
  const auto memory = compiled(folder / "model.onnx", "memory");
  const auto balanced = compiled(folder / "model.onnx", "balanced");
  INFO(memory->report_text());
  CHECK(memory->arena_bytes() < balanced->arena_bytes());
  CHECK(contains(memory->report_text(), "layouts: plain, the smaller arena ("));
  CHECK(contains(memory->report_json(), "\"plain_layouts\": true"));
  CHECK_FALSE(contains(balanced->report_text(), "layouts:"));  // balanced keeps the faster layouts untried
  CHECK(contains(balanced->report_json(), "\"plain_layouts\": false, \"other_layouts_arena_bytes\": 0"));
  require_patterns_outputs(memory, folder);

  TempDir dir("plain_layouts");
  const std::string plan = dir / "plain.mplan";
  memory->save_plan(plan);
  const MemoryPlan saved = read_plan_file(plan);
  CHECK(saved.plain_layouts);
  CHECK(saved.other_layouts_arena_bytes > saved.arena_bytes);
  const auto loaded = CompiledModel::load((folder / "model.onnx").string(), plan);
  CHECK(loaded->arena_bytes() == memory->arena_bytes());
  CHECK(contains(loaded->report_text(), "layouts: plain"));
  require_patterns_outputs(loaded, folder);

  // The same plan told it had the layouts no longer fits the kernels they bring: loading refuses
  // it rather than running them in bytes the plan never gave them.
  MemoryPlan with_layouts = saved;
  with_layouts.plain_layouts = false;
  write_plan_file(with_layouts, plan);
  CHECK_THROWS_AS(CompiledModel::load((folder / "model.onnx").string(), plan), Error);
}

TEST_CASE("preferring memory, a model whose layouts make the smaller arena, or tie, keeps them and reports the plain "
          "arena", "[layouts][isa]") {
  // MediaPipe's block (explicit Pad, 5x5 depthwise, MaxPool, residual Add): its layouts copy
  // nothing, and plain tensors would hold the Pad's and the pooling's copies (1,638,400 bytes at
  // AVX-512 against 1,310,720; at AVX2 a tie).
  const fs::path folder = kPatterns / "mediapipe_block";
  const auto memory = compiled(folder / "model.onnx", "memory");
  INFO(memory->report_text());
  CHECK(contains(memory->report_text(), "layouts: oneDNN's blocked and channels-last, the smaller arena or a tie ("));
  CHECK(contains(memory->report_json(), "\"plain_layouts\": false"));
  CHECK(memory->arena_bytes() <= compiled(folder / "model.onnx", "balanced")->arena_bytes());
  require_patterns_outputs(memory, folder);
}
