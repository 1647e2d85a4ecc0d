// fuzz_onnx: bytes -> a .onnx file -> import, shapes, passes, kernels, plan, verify (what
// `memplan compile` does) and, when the arena is small and every loop is bounded, a run on zero
// inputs (what `memplan run` does). A memplan::Error is an expected outcome; a crash, a sanitizer
// report, a foreign exception or a hang (-timeout) is a finding.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_support.h"
#include "ir/graph.h"
#include "memplan/memplan.h"
#include "runtime/compiled_model_impl.h"

namespace {

using namespace memplan;

constexpr uint64_t kMaxRunArena = 64ull << 20;  // run only models whose arena is at most 64 MiB
constexpr uint64_t kMaxRunIterations = 10000;   // product of the trip counts of nested loops

// The most iterations any chain of nested Loops runs, or 0 when a Loop's trip count is not a
// small constant (a while loop on zeros could legitimately run for ever).
uint64_t loop_iterations(const Graph& g) {
  uint64_t most = 1;
  for (const auto& n : g.nodes) {
    uint64_t own = 1;
    if (n->op_type == "Loop") {
      const Value* m = n->inputs.empty() ? nullptr : n->inputs[0];
      if (!m || !m->constant || m->constant->bytes.size() != sizeof(int64_t)) return 0;
      int64_t trips = 0;
      std::memcpy(&trips, m->constant->bytes.data(), sizeof trips);
      if (trips < 0 || static_cast<uint64_t>(trips) > kMaxRunIterations) return 0;
      own = std::max<uint64_t>(static_cast<uint64_t>(trips), 1);
    }
    uint64_t inner = 1;
    for (const auto& sub : n->subgraphs) {
      const uint64_t s = loop_iterations(*sub);
      if (s == 0) return 0;
      inner = std::max(inner, s);
    }
    if (own * inner > kMaxRunIterations) return 0;
    most = std::max(most, own * inner);
  }
  return most;
}

void run_on_zeros(const std::shared_ptr<const CompiledModel>& model) {
  if (model->arena_bytes() > kMaxRunArena) return;
  if (loop_iterations(*model->impl().model.main) == 0) return;
  Session session(model);
  for (const TensorInfo& in : model->inputs()) {
    // A sequence starts empty, an optional holds nothing: the ops on them still run, and refuse.
    if (in.kind == ValueKind::Sequence || in.kind == ValueKind::OptionalSequence) {
      session.set_input_sequence(in.name, {});
      continue;
    }
    if (in.kind == ValueKind::Optional) {
      session.set_input_none(in.name);
      continue;
    }
    if (in.capacity_bytes > kMaxRunArena) return;
    void* slot = session.input_buffer(in.name, in.dtype, in.shape, in.capacity_bytes);
    if (in.capacity_bytes) std::memset(slot, 0, in.capacity_bytes);
  }
  session.run();
  for (const TensorInfo& out : model->outputs()) {
    if (!session.output_has_value(out.name)) continue;
    std::vector<TensorRef> refs;
    if (out.kind == ValueKind::Sequence || out.kind == ValueKind::OptionalSequence) refs = session.output_sequence(out.name);
    else refs.push_back(session.output(out.name));
    for (const TensorRef& r : refs) {
    // Touch every byte the output claims, so a view past its memory is caught by ASan.
    volatile unsigned char sum = 0;
    for (uint64_t i = 0; i < r.bytes; ++i) sum = sum + static_cast<const unsigned char*>(r.data)[i];
    (void)sum;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  memplan::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static memplan::fuzz::ScratchCleanup cleanup;
  const std::string path = memplan::fuzz::scratch_path("model.onnx");
  memplan::fuzz::write_file(path, data, size);
  std::shared_ptr<const CompiledModel> model;
  memplan::fuzz::expect_only_errors("compile", [&] { model = CompiledModel::compile(path, {}); });
  if (!model) return 0;
  memplan::fuzz::expect_only_errors("report", [&] {
    (void)model->report_text();
    (void)model->report_json();
  });
  memplan::fuzz::expect_only_errors("run", [&] { run_on_zeros(model); });
  return 0;
}
