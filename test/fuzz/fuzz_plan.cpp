// fuzz_plan: bytes -> a .mplan file -> read_plan_file, then what `memplan inspect` prints (text and
// JSON reports, the peak summary, the SVG) and, when the plan names one of the small models in
// models/, what `memplan verify` and `memplan run --plan` do: verify it against the model and, if
// it verifies and its arena is small, load it and run on zero inputs.
//
// An input that starts with the plan magic is a whole file. Anything else is a payload: the
// harness adds the header and the checksum, so the fuzzer reaches the parser and the structure
// checks behind the checksum. A memplan::Error is an expected outcome; anything else is a finding.
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_support.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "plan/plan_file.h"
#include "report/plan_report.h"
#include "report/plan_svg.h"
#include "util/sha256.h"

namespace {

using namespace memplan;

constexpr uint64_t kMaxRunArena = 64ull << 20;
constexpr char kMagic[] = "MEMPLAN\n";

// The models a plan may be verified against: (sha256 of the file, path).
std::vector<std::pair<std::string, std::string>>& models() {
  static std::vector<std::pair<std::string, std::string>> m;
  return m;
}

void load_models() {
  for (const char* name : {"tiny_mlp", "scan_sum", "loop_scan_outputs", "nested_if_loop_if", "capture_two_levels",
                           "loop_growing_state", "cnn_stem"}) {
    const std::string path = std::string(MEMPLAN_SOURCE_DIR) + "/models/" + name + "/model.onnx";
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz_plan: %s is missing; plans are not verified against it\n", path.c_str());
      continue;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    models().emplace_back(sha256_hex(bytes), path);
  }
}

std::string wrap(const uint8_t* data, size_t size) {
  const std::string payload(reinterpret_cast<const char*>(data), size);
  std::string file(kMagic, 8);
  for (int i = 0; i < 8; ++i) file += static_cast<char>((uint64_t(size) >> (8 * i)) & 0xff);
  return file + payload + sha256_hex(payload);
}

void run_on_zeros(const std::string& model_path, const std::string& plan_path) {
  auto model = CompiledModel::load(model_path, plan_path);
  Session session(model);
  for (const TensorInfo& in : model->inputs()) {
    void* slot = session.input_buffer(in.name, in.dtype, in.shape, in.capacity_bytes);
    if (in.capacity_bytes) std::memset(slot, 0, in.capacity_bytes);
  }
  session.run();
  for (const TensorInfo& out : model->outputs()) (void)session.output(out.name);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  memplan::fuzz::quiet();
  load_models();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static memplan::fuzz::ScratchCleanup cleanup;
  const std::string path = memplan::fuzz::scratch_path("plan.mplan");
  if (size >= 8 && std::memcmp(data, kMagic, 8) == 0) {
    memplan::fuzz::write_file(path, data, size);
  } else {
    const std::string file = wrap(data, size);
    memplan::fuzz::write_file(path, reinterpret_cast<const uint8_t*>(file.data()), file.size());
  }
  MemoryPlan plan;
  bool ok = false;
  memplan::fuzz::expect_only_errors("read", [&] {
    plan = read_plan_file(path);
    ok = true;
  });
  if (!ok) return 0;
  memplan::fuzz::expect_only_errors("inspect", [&] {
    (void)plan_report_text(plan);
    (void)plan_report_json(plan);
    (void)plan_peak_summary(plan);
    (void)plan_svg(plan);
  });
  for (const auto& known : models()) {
    if (known.first != plan.model_sha256) continue;
    const std::string& model_path = known.second;
    bool verified = false;
    memplan::fuzz::expect_only_errors("verify", [&] {
      (void)load_compilation(model_path, plan, path);  // what `memplan verify` does, the verifier included
      verified = true;
    });
    if (verified && plan.arena_bytes <= kMaxRunArena)
      memplan::fuzz::expect_only_errors("run", [&] { run_on_zeros(model_path, path); });
  }
  return 0;
}
