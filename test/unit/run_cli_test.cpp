// `memplan run` through the CLI: outputs, reports, plans, and every kind of bad input.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/npy.h"
#include "support/cli_runner.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;

namespace {

using memplan::test::Run;
using memplan::test::run_cli;
using memplan::test::slurp;
using memplan::test::TempDir;

void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& says) {
  Run r = run_cli(args);
  INFO("stderr: " << r.err << "stdout: " << r.out.substr(0, 300));
  REQUIRE_FALSE(r.signaled);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  for (const auto& s : says) CHECK_THAT(r.err, Catch::Contains(s));
}

std::string model(const std::string& name) { return std::string(MEMPLAN_SOURCE_DIR) + "/models/" + name + "/model.onnx"; }
std::string input(const std::string& name, const std::string& set, const std::string& tensor) {
  return std::string(MEMPLAN_SOURCE_DIR) + "/models/" + name + "/" + set + "/inputs/" + tensor + ".npy";
}

// The float .npy at `path` holds model `name`'s expected output `tensor` (test_data_set_0), within
// rtol 1e-3 and atol 1e-4.
void require_expected(const std::string& path, const std::string& name, const std::string& tensor) {
  auto got = memplan::io::read_npy(path);
  auto want = memplan::io::read_npy(std::string(MEMPLAN_SOURCE_DIR) + "/models/" + name + "/test_data_set_0/expected/" +
                                    tensor + ".npy");
  REQUIRE(got.info.shape == want.info.shape);
  const float* g = reinterpret_cast<const float*>(got.data.data());
  const float* w = reinterpret_cast<const float*>(want.data.data());
  for (size_t i = 0; i < got.data.size() / 4; ++i) REQUIRE(std::abs(g[i] - w[i]) <= 1e-4f + 1e-3f * std::abs(w[i]));
}

void write_floats(const std::string& path, std::vector<int64_t> shape, const std::vector<float>& v) {
  memplan::io::write_npy(path, memplan::DType::Float32, shape, v.data(), v.size() * 4);
}

}  // namespace

TEST_CASE("run: writes every output as <name>.npy, reports memory and time", "[run-cli]") {
  TempDir out("run_test");
  Run r = run_cli({"run", model("example"), "--input", "input=" + input("example", "test_data_set_0", "input"),
                   "--input", "cond=" + input("example", "test_data_set_0", "cond"), "--input",
                   "add_in=" + input("example", "test_data_set_0", "add_in"), "--output-dir", out.path.string(),
                   "--repeat", "3", "--check-memory"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("arena"));
  CHECK_THAT(r.out, Catch::Contains("over 3 run(s)"));
  CHECK_THAT(r.out, Catch::Contains("wrote " + (out / "output.npy")));
  require_expected(out / "output.npy", "example", "output");
}

TEST_CASE("run: --report json holds the plan report and run_ms", "[run-cli]") {
  TempDir out("run_test");
  Run r = run_cli({"run", model("tiny_mlp"), "--input", input("tiny_mlp", "test_data_set_0", "x"), "--output-dir",
                   out.path.string(), "--report", "json", "--threads", "1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* key : {"\"arena_bytes\"", "\"lower_bound_bytes\"", "\"run_ms\"", "\"median\"", "\"graphs\""})
    CHECK_THAT(r.out, Catch::Contains(key));
}

TEST_CASE("run: --profile times every node, subgraph nodes under their owner's path", "[run-cli]") {
  TempDir out("run_test");
  const std::vector<std::string> args = {"run", model("nested_if_loop_if"), "--input",
                                         "x=" + input("nested_if_loop_if", "test_data_set_0", "x"), "--input",
                                         "cond=" + input("nested_if_loop_if", "test_data_set_0", "cond"),
                                         "--output-dir", out.path.string(), "--warmup", "3", "--repeat", "2", "--threads", "1",
                                         "--profile"};
  Run r = run_cli(args);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("profile: "));
  CHECK_THAT(r.out, Catch::Contains("over 2 run(s)"));  // the warm-up runs are neither timed nor profiled
  // The loop runs 4 iterations; its body's If picks Add twice and Mul twice.
  CHECK_THAT(r.out, Catch::Contains("(outer_if/then_branch/loop/body/inner_if/then_branch)"));
  auto json_args = args;
  json_args.insert(json_args.end(), {"--report", "json"});
  Run j = run_cli(json_args);
  REQUIRE(j.exit_code == 0);
  CHECK_THAT(j.out, Catch::Contains("{\"op_type\": \"Mod\", \"nodes\": 1, \"calls_per_run\": 4.000"));
  CHECK_THAT(j.out, Catch::Contains("{\"op_type\": \"Loop\", \"nodes\": 1, \"calls_per_run\": 1.000"));
  CHECK_THAT(j.out, Catch::Contains("\"node\": \"inner_mul\", \"op_type\": \"Mul\", "
                                    "\"graph\": \"outer_if/then_branch/loop/body/inner_if/else_branch\", \"calls_per_run\": 2.000"));
  // What runs each node: control flow, oneDNN's implementation, or memplan's own loops.
  CHECK_THAT(j.out, Catch::Contains("\"op_type\": \"Loop\", \"graph\": \"outer_if/then_branch\", \"calls_per_run\": 1.000, "
                                    "\"ms_per_run\": "));
  CHECK_THAT(j.out, Catch::Contains("\"implementation\": \"control flow\"}"));
  CHECK_THAT(r.out, Catch::Contains("  slowest nodes:"));
}

TEST_CASE("run: output file names keep only [A-Za-z0-9._-]", "[run-cli]") {
  using namespace memplan::test;
  TempDir dir("run_test");
  ModelBuilder b;
  add_input(b.graph(), "x", elem::kFloat, {2});
  add_node(b.graph(), "Relu", {"x"}, {"out/put:0"});
  add_output(b.graph(), "out/put:0", elem::kFloat, {2});
  std::ofstream(dir / "m.onnx", std::ios::binary) << b.bytes();
  write_floats(dir / "x.npy", {2}, {-1.f, 2.f});
  Run r = run_cli({"run", dir / "m.onnx", "--input", dir / "x.npy", "--output-dir", dir.path.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto y = memplan::io::read_npy(dir / "out_put_0.npy");
  CHECK(reinterpret_cast<const float*>(y.data.data())[1] == 2.f);
}

TEST_CASE("run: a plan is reused, and refused for other shapes or another model", "[run-cli]") {
  TempDir dir("run_test");
  REQUIRE(run_cli({"compile", model("tiny_mlp"), "-o", dir / "mlp.mplan"}).exit_code == 0);
  Run ok = run_cli({"run", model("tiny_mlp"), "--plan", dir / "mlp.mplan", "--input",
                    input("tiny_mlp", "test_data_set_0", "x"), "--output-dir", dir.path.string()});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  write_floats(dir / "x2.npy", {2, 64}, std::vector<float>(128, 0.f));
  // tiny_mlp declares x as [1, 64]: another shape is refused before any plan is looked at.
  expect_error({"run", model("tiny_mlp"), "--plan", dir / "mlp.mplan", "--input", dir / "x2.npy"},
               {"input 'x'", dir / "x2.npy", "declares shape [1, 64]", "[2, 64]"});
  expect_error({"run", model("example"), "--plan", dir / "mlp.mplan", "--input", dir / "x2.npy"}, {"another model"});
}

TEST_CASE("run: bad inputs get one clear line and exit 2", "[run-cli]") {
  TempDir dir("run_test");
  const std::string mlp = model("tiny_mlp");
  std::vector<int64_t> ints(64, 1);
  memplan::io::write_npy(dir / "ints.npy", memplan::DType::Int64, std::vector<int64_t>{1, 64}, ints.data(), 512);
  expect_error({"run", mlp, "--input", dir / "ints.npy"}, {"'x'", "float32", "int64"});
  write_floats(dir / "rank3.npy", {1, 1, 64}, std::vector<float>(64, 0.f));
  expect_error({"run", mlp, "--input", dir / "rank3.npy"}, {"'x'", dir / "rank3.npy", "declares shape [1, 64]", "[1, 1, 64]"});
  expect_error({"run", mlp, "--input", "nope=" + (dir / "rank3.npy")}, {"no input named 'nope'"});
  expect_error({"run", model("example"), "--input", "input=" + input("example", "test_data_set_0", "input")},
               {"'cond' is missing"});
  write_floats(dir / "x.npy", {1, 64}, std::vector<float>(64, 0.f));
  const std::string bytes = slurp(dir / "x.npy");
  std::ofstream(dir / "short.npy", std::ios::binary) << bytes.substr(0, bytes.size() - 10);
  expect_error({"run", mlp, "--input", dir / "short.npy"}, {"short.npy"});
}

TEST_CASE("run: Gather indices out of range are refused, never read out of bounds", "[run-cli]") {
  using namespace memplan::test;
  TempDir dir("run_test");
  ModelBuilder b;
  add_input(b.graph(), "data", elem::kFloat, {4});
  add_input(b.graph(), "idx", elem::kInt64, {2});
  add_node(b.graph(), "Gather", {"data", "idx"}, {"y"}, "gather");
  add_output(b.graph(), "y", elem::kFloat, {2});
  std::ofstream(dir / "g.onnx", std::ios::binary) << b.bytes();
  write_floats(dir / "data.npy", {4}, {1, 2, 3, 4});
  std::vector<int64_t> idx = {1, 7};
  memplan::io::write_npy(dir / "idx.npy", memplan::DType::Int64, std::vector<int64_t>{2}, idx.data(), 16);
  expect_error({"run", dir / "g.onnx", "--input", dir / "data.npy", "--input", dir / "idx.npy", "--output-dir",
                dir.path.string()},
               {"gather", "7"});
  CHECK_FALSE(fs::exists(dir / "y.npy"));
}

TEST_CASE("run: NaN inputs propagate as NaN", "[run-cli]") {
  TempDir dir("run_test");
  std::vector<float> x(64, 0.f);
  x[3] = std::nanf("");
  write_floats(dir / "x.npy", {1, 64}, x);
  Run r = run_cli({"run", model("tiny_mlp"), "--input", dir / "x.npy", "--output-dir", dir.path.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto y = memplan::io::read_npy(dir / "probs.npy");
  CHECK(std::isnan(reinterpret_cast<const float*>(y.data.data())[0]));
}

namespace {

// y = x * s, with s a declared scalar (as Silero VAD's sample rate), written into `dir`.
std::string scale_model(const TempDir& dir) {
  using namespace memplan::test;
  ModelBuilder b("scale", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {"n"});
  add_input(g, "s", elem::kFloat, {});
  add_node(g, "Mul", {"x", "s"}, {"y"}, "scale");
  add_output(g, "y", elem::kFloat, {"n"});
  std::ofstream(dir / "scale.onnx", std::ios::binary) << b.bytes();
  return dir / "scale.onnx";
}

std::vector<float> read_floats(const std::string& path) {
  memplan::io::NpyInfo info = memplan::io::read_npy_info(path);
  std::vector<float> v(info.data_bytes / 4);
  memplan::io::read_npy_data(path, info, v.data(), info.data_bytes);
  return v;
}

}  // namespace

TEST_CASE("run: ONNX Runtime's input conventions: a one-element array for a scalar, symbolic dims bind",
          "[run-cli]") {
  TempDir dir("run_test");
  const std::string m = scale_model(dir);
  write_floats(dir / "x.npy", {3}, {1, 2, 3});
  write_floats(dir / "s1.npy", {1}, {2});  // what the JavaScript clients send for a scalar
  write_floats(dir / "s11.npy", {1, 1}, {3});
  write_floats(dir / "s2.npy", {2}, {2, 2});
  for (const auto& [file, factor] : {std::pair{"s1.npy", 2.f}, std::pair{"s11.npy", 3.f}}) {
    Run r = run_cli({"run", m, "--input", "x=" + (dir / "x.npy"), "--input", "s=" + (dir / file), "--output-dir",
                     dir.path.string()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_floats(dir / "y.npy") == std::vector<float>{factor, 2 * factor, 3 * factor});
  }
  // Two elements are no scalar: the error names the input, its file, and both shapes.
  expect_error({"run", m, "--input", "x=" + (dir / "x.npy"), "--input", "s=" + (dir / "s2.npy")},
               {"input 's'", dir / "s2.npy", "declares shape []", "[2]"});
}

TEST_CASE("run: an input that contradicts a declared static dim is refused, naming the file", "[run-cli]") {
  TempDir dir("run_test");
  write_floats(dir / "x.npy", {1, 1024}, std::vector<float>(1024, 0.f));
  expect_error({"run", model("tiny_mlp"), "--input", dir / "x.npy"},
               {"input 'x'", dir / "x.npy", "declares shape [1, 64]", "[1, 1024]"});
}

TEST_CASE("run: a model with no inputs runs without --input", "[run-cli]") {
  using namespace memplan::test;
  TempDir dir("run_test");
  ModelBuilder b("constant", 13);
  add_constant(b.graph(), tensor_f32("c", {2}, {1.5f, -2.f}));
  add_node(b.graph(), "Neg", {"c"}, {"y"}, "neg");
  add_output(b.graph(), "y", elem::kFloat, {2});
  std::ofstream(dir / "constant.onnx", std::ios::binary) << b.bytes();
  Run r = run_cli({"run", dir / "constant.onnx", "--output-dir", dir.path.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_floats(dir / "y.npy") == std::vector<float>{-1.5f, 2.f});
}

TEST_CASE("run: a dynamic tensor's largest size is in the text and JSON reports", "[run-cli][dynamic]") {
  TempDir dir("run_test");
  const std::string m = model("loop_data_dependent_scan");
  Run compile = run_cli({"compile", m});
  REQUIRE(compile.exit_code == 0);
  std::vector<std::string> args{"run", m, "--output-dir", dir.path.string()};
  for (const auto& e : fs::directory_iterator(fs::path(MEMPLAN_SOURCE_DIR) / "models/loop_data_dependent_scan/test_data_set_0/inputs"))
    args.push_back("--input=" + e.path().stem().string() + "=" + e.path().string());
  Run text = run_cli(args);
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("dynamic tensor 'sums': at most "));
  args.insert(args.end(), {"--report", "json"});
  Run json = run_cli(args);
  REQUIRE(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"dynamic_tensor_max_bytes\": {\"sums\": "));
}

TEST_CASE("run: an arena larger than memory is named with its bytes and its peak, exit 2", "[run-cli]") {
  using namespace memplan::test;
  TempDir dir("run_test");
  // Expand makes a 4 TiB tensor from one float: compile plans it (and warns), a session cannot.
  ModelBuilder b("huge", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {1});
  add_initializer(g, tensor_i64("shape", {2}, {int64_t{1} << 20, int64_t{1} << 20}));
  add_node(g, "Expand", {"x", "shape"}, {"big"}, "expand");
  auto* sum = add_node(g, "ReduceSum", {"big"}, {"total"}, "total");
  attr_int(sum, "keepdims", 0);
  add_output(g, "total", elem::kFloat, {});
  std::ofstream(dir / "huge.onnx", std::ios::binary) << b.bytes();
  Run compile = run_cli({"compile", dir / "huge.onnx"});
  CHECK(compile.exit_code == 0);
  CHECK_THAT(compile.err, Catch::Contains("warning") && Catch::Contains("more than this machine's") &&
                              Catch::Contains("'big' (4398046511104 bytes)"));
  write_floats(dir / "x.npy", {1}, {1});
  // AddressSanitizer aborts on an allocation this large unless told to return null, as malloc does.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved = asan ? asan : "";
  setenv("ASAN_OPTIONS", (saved + (saved.empty() ? "" : ":") + "allocator_may_return_null=1").c_str(), 1);
  Run r = run_cli({"run", dir / "huge.onnx", "--input", dir / "x.npy"});
  if (asan) setenv("ASAN_OPTIONS", saved.c_str(), 1);
  else unsetenv("ASAN_OPTIONS");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("cannot allocate the arena of") && Catch::Contains("'big' (4398046511104 bytes)"));
}

namespace {

// The number after `"key": ` in a JSON report (-1 when absent).
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::stod(json.substr(at + key.size() + 4));
}

std::vector<std::string> example_args(const fs::path& out) {
  return {"run", model("example"), "--input", "input=" + input("example", "test_data_set_0", "input"), "--input",
          "cond=" + input("example", "test_data_set_0", "cond"), "--input",
          "add_in=" + input("example", "test_data_set_0", "add_in"), "--output-dir", out.string()};
}

}  // namespace

TEST_CASE("run: --sessions N runs N sessions at once, reports the throughput and each session's median",
          "[run-cli][concurrent]") {
  TempDir out("run_sessions");
  auto args = example_args(out.path);
  args.insert(args.end(), {"--sessions", "3", "--warmup", "1", "--repeat", "4"});
  Run r = run_cli(args);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  for (const char* line : {"session 0: median ", "session 1: median ", "session 2: median ", "over 12 run(s)",
                           "(3 concurrent sessions)"})
    CHECK_THAT(r.out, Catch::Contains(line));
  CHECK_THAT(r.out, !Catch::Contains("session 3:"));
  // The outputs are session 0's, and right.
  auto got = memplan::io::read_npy(out / "output.npy");
  auto want = memplan::io::read_npy(std::string(MEMPLAN_SOURCE_DIR) + "/models/example/test_data_set_0/expected/output.npy");
  REQUIRE(got.info.shape == want.info.shape);
  const float* g = reinterpret_cast<const float*>(got.data.data());
  const float* w = reinterpret_cast<const float*>(want.data.data());
  for (size_t i = 0; i < got.data.size() / 4; ++i) REQUIRE(std::abs(g[i] - w[i]) <= 1e-4f + 1e-3f * std::abs(w[i]));

  args.insert(args.end(), {"--report", "json"});
  Run j = run_cli(args);
  INFO(j.err << j.out);
  REQUIRE(j.exit_code == 0);
  CHECK(json_number(j.out, "sessions") == 3);
  CHECK(json_number(j.out, "runs") == 12);
  // 3 sessions on a machine of fewer cores share them: one thread each on 2 cores.
  CHECK(json_number(j.out, "threads") >= 1);
  CHECK(json_number(j.out, "throughput_per_s") > 0);
  const auto per_session = j.out.find("\"session_run_ms\": [");
  REQUIRE(per_session != std::string::npos);
  const std::string list = j.out.substr(per_session, j.out.find(']', per_session) - per_session);
  size_t medians = 0;
  for (size_t at = list.find("\"median\""); at != std::string::npos; at = list.find("\"median\"", at + 1)) ++medians;
  CHECK(medians == 3);
}

TEST_CASE("run: one session reports its throughput too, and bad --sessions are usage errors", "[run-cli][concurrent]") {
  TempDir out("run_sessions");
  auto args = example_args(out.path);
  args.insert(args.end(), {"--repeat", "3", "--report", "json"});
  Run j = run_cli(args);
  INFO(j.err);
  REQUIRE(j.exit_code == 0);
  CHECK(json_number(j.out, "sessions") == 1);
  CHECK(json_number(j.out, "throughput_per_s") > 0);
  CHECK_THAT(j.out, !Catch::Contains("session_run_ms"));

  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--sessions", "0"},
                                              std::vector<std::string>{"--sessions", "two"},
                                              std::vector<std::string>{"--sessions", "2", "--profile"}}) {
    auto b = example_args(out.path);
    b.insert(b.end(), bad.begin(), bad.end());
    Run r = run_cli(b);
    INFO(bad.back() << ": " << r.err);
    CHECK(r.exit_code == 1);
  }
}

TEST_CASE("run: the report says the threads per session: --threads, or 1 for a tiny model", "[run-cli][concurrent]") {
  TempDir out("run_threads");
  auto args = example_args(out.path);
  args.insert(args.end(), {"--threads", "2", "--report", "json"});
  Run j = run_cli(args);
  INFO(j.err);
  REQUIRE(j.exit_code == 0);
  CHECK(json_number(j.out, "threads") == 2);
  // tiny_mlp is a few thousand FLOP: a second thread would only cost.
  Run t = run_cli({"run", model("tiny_mlp"), "--input", input("tiny_mlp", "test_data_set_0", "x"), "--output-dir",
                   out.path.string(), "--report", "json"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  CHECK(json_number(t.out, "threads") == 1);
}

TEST_CASE("run: with a saved plan the kernels are made for --threads, not for every core", "[run-cli][concurrent]") {
  // A plan fixes no thread count. Kernels made for every core, run at fewer, would make a second
  // set of oneDNN primitives for the session's count, and hold both.
  TempDir out("run_plan_threads");
  // --prefer speed: the fastest kernels, whatever the machine's load while the compile times them.
  REQUIRE(run_cli({"compile", model("example"), "--prefer", "speed", "-o", out / "example.mplan"}).exit_code == 0);
  auto args = example_args(out.path);
  args.insert(args.end(), {"--plan", out / "example.mplan", "--report", "json"});
  auto with_threads = [&](int threads) {
    auto a = args;
    a.insert(a.end(), {"--threads", std::to_string(threads)});
    Run r = run_cli(a);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  const std::string one = with_threads(1);
  CHECK(json_number(one, "kernel_threads") == 1);
  CHECK(json_number(one, "threads") == 1);
  // More threads than the plan's scratchpads hold: made for the plan's count, as without --threads.
  Run all = run_cli(args);
  REQUIRE(all.exit_code == 0);
  const std::string many = with_threads(64);
  CHECK(json_number(many, "kernel_threads") <= 64);
  CHECK(json_number(many, "kernel_threads") >= json_number(all.out, "kernel_threads"));
}

TEST_CASE("run: --fixed-threads runs every inference at --threads, the same bits each time", "[run-cli][concurrent]") {
  // --prefer speed: the kernels do not depend on timings taken at compile (balanced's do, so two
  // processes on a busy machine may choose different ones).
  TempDir a("run_fixed_a"), b("run_fixed_b");
  std::vector<std::string> args = example_args(a.path);
  args.insert(args.end(), {"--threads", "2", "--fixed-threads", "--prefer", "speed", "--repeat", "12", "--report", "json"});
  Run first = run_cli(args);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(json_number(first.out, "threads") == 2);
  CHECK(first.out.find("\"runs_by_threads\": {\"2\": 12}") != std::string::npos);  // every run on both
  std::vector<std::string> again = example_args(b.path);
  again.insert(again.end(), {"--threads", "2", "--fixed-threads", "--prefer", "speed"});
  REQUIRE(run_cli(again).exit_code == 0);
  CHECK(slurp(a / "output.npy") == slurp(b / "output.npy"));
  // Not a flag of compile.
  CHECK(run_cli({"compile", model("example"), "--fixed-threads"}).exit_code != 0);
}

TEST_CASE("run: preferring speed, a 3x3 convolution runs Winograd's kernel on AVX-512, from a plan too", "[run-cli][winograd]") {
  TempDir out("run_winograd");
  const std::string plan = out / "stem.mplan";
  Run c = run_cli({"compile", model("cnn_stem"), "--prefer", "speed", "-o", plan, "--report", "json"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  // oneDNN 2.6 has Winograd kernels on AVX-512 only: the plan records one convolution there.
  const bool avx512 = c.out.find("\"isa\": \"avx512") != std::string::npos;
  CHECK((c.out.find("\"runs\": true") != std::string::npos) == avx512);
  Run r = run_cli({"run", model("cnn_stem"), "--plan", plan, "--input", "x=" + input("cnn_stem", "test_data_set_0", "x"),
                   "--output-dir", out.path.string(), "--check-memory", "--profile"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK((r.out.find("winograd: 1 of 1 convolutions chosen run Winograd's kernels") != std::string::npos) == avx512);
  require_expected(out / "y.npy", "cnn_stem", "y");
  // Preferring memory, none is chosen.
  Run m = run_cli({"compile", model("cnn_stem"), "--prefer", "memory"});
  REQUIRE(m.exit_code == 0);
  CHECK(m.out.find("winograd:") == std::string::npos);
}

TEST_CASE("run: a budget below the whole tensors' arena runs the first layers in patches, from a plan too",
          "[run-cli][patches]") {
  TempDir out("run_patches");
  const std::string plan = out / "stem.mplan";
  Run c = run_cli({"compile", model("cnn_stem"), "--max-arena", "200000", "-o", plan});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.out, Catch::Contains("patch regions (layers run tile by tile"));
  CHECK_THAT(c.out, Catch::Contains("  conv1 .. "));
  Run r = run_cli({"run", model("cnn_stem"), "--plan", plan, "--input", "x=" + input("cnn_stem", "test_data_set_0", "x"),
                   "--output-dir", out.path.string(), "--check-memory"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  require_expected(out / "y.npy", "cnn_stem", "y");
  // Whole tensors need 294912 bytes; no region reaches 1000.
  expect_error({"compile", model("cnn_stem"), "--max-arena", "1000"},
               {"cnn_stem/model.onnx: the smallest arena memplan can plan is", "with the patch region conv1 .. "});
  // A model whose first node patches cannot carry says why no region can be made.
  expect_error({"compile", model("tiny_mlp"), "--max-arena", "64"},
               {"no patch region can be made: the main graph has no Conv, MaxPool or pointwise op patches can carry"});
}
