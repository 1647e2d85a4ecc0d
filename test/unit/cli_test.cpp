// The `memplan` executable on bad input: exit codes (2 invalid input, 3 unsupported, 1 usage,
// never a signal) and one-line error messages that name the file and the specific problem.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "io/npy.h"
#include "runtime/dnnl_context.h"
#include "support/cli_runner.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using memplan::test::Run;
using memplan::test::run_cli;
using memplan::test::slurp;

const fs::path kModels = fs::path(MEMPLAN_SOURCE_DIR) / "models";

size_t line_count(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

std::string describe(const std::vector<std::string>& args, const Run& r) {
  std::string cmd = "memplan";
  for (const auto& a : args) cmd += " " + a;
  return cmd + "\n  exit " + (r.signaled ? "signal " + std::to_string(r.signal) : std::to_string(r.exit_code)) +
         "\n  stderr: " + r.err + "  stdout: " + r.out.substr(0, 400);
}

// A memplan::Error reported by the CLI: the exit code, one line "memplan: error: ..." on stderr
// that contains every string of `says`, nothing on stdout.
void expect_error(const std::vector<std::string>& args, int code, const std::vector<std::string>& says) {
  Run r = run_cli(args);
  INFO(describe(args, r));
  REQUIRE_FALSE(r.signaled);
  CHECK(r.exit_code == code);
  CHECK(line_count(r.err) == 1);
  CHECK(!r.err.empty());
  CHECK(r.err.back() == '\n');
  CHECK_THAT(r.err, Catch::StartsWith("memplan: error: "));
  for (const auto& s : says) CHECK_THAT(r.err, Catch::Contains(s));
  CHECK(r.out.empty());
}

std::string model(const std::string& name) { return (kModels / name / "model.onnx").string(); }
std::string bad(const std::string& file) { return (kModels / "bad" / file).string(); }

}  // namespace

TEST_CASE("cli: --help and --version exit 0", "[cli]") {
  Run help = run_cli({"--help"});
  INFO(describe({"--help"}, help));
  REQUIRE_FALSE(help.signaled);
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("compile"));
  CHECK(help.err.empty());

  Run compile_help = run_cli({"compile", "--help"});
  INFO(describe({"compile", "--help"}, compile_help));
  CHECK(compile_help.exit_code == 0);
  CHECK_THAT(compile_help.out, Catch::Contains("--shape") && Catch::Contains("--dim") && Catch::Contains("--bound"));

  Run version = run_cli({"--version"});
  INFO(describe({"--version"}, version));
  REQUIRE_FALSE(version.signaled);
  CHECK(version.exit_code == 0);
  CHECK(version.out == std::string("memplan ") + MEMPLAN_VERSION + "\n");
  CHECK(version.err.empty());
}

TEST_CASE("cli: a bad command line exits 1", "[cli]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"compile", "--bogus", model("tiny_mlp")},
           {"--bogus"},
           {},
           {"compile"},
           {"no-such-subcommand"},
       }) {
    Run r = run_cli(args);
    INFO(describe(args, r));
    REQUIRE_FALSE(r.signaled);
    CHECK(r.exit_code == 1);
    CHECK_FALSE(r.err.empty());
    CHECK(r.out.empty());
  }
  Run r = run_cli({"compile", "--bogus", model("tiny_mlp")});
  CHECK_THAT(r.err, Catch::Contains("--bogus"));
}

TEST_CASE("cli: a nonexistent model file", "[cli]") {
  expect_error({"compile", "/nonexistent/dir/model.onnx"}, 2, {"/nonexistent/dir/model.onnx"});
}

TEST_CASE("cli: every file in models/bad is refused with one clear line", "[cli]") {
  struct Expect {
    int code;
    std::vector<std::string> says;
    std::vector<std::string> extra_args;
  };
  // Keyed by the path under models/bad. Every file there must be listed, so a new bad model
  // cannot go untested.
  const std::map<std::string, Expect> expect{
      {"random_bytes.onnx", {2, {"not a valid ONNX model", "protobuf parse failed"}, {}}},
      {"truncated.onnx", {2, {"not a valid ONNX model"}, {}}},
      {"cycle.onnx", {2, {"cycle"}, {}}},
      {"dangling_input.onnx", {2, {"'nowhere'", "'add_nowhere'"}, {}}},
      {"unknown_domain.onnx", {3, {"Foo", "com.example.unknown"}, {}}},
      {"opset24.onnx", {3, {"opset 24", "docs/OPSETS.md"}, {}}},
      {"float8.onnx", {3, {"'w8'", "float8e4m3fn"}, {}}},
      {"reduce_runtime_axes.onnx", {3, {"ReduceMean node 'mean_runtime_axes'", "ReduceMean-18", "computed at run time"}, {}}},
      {"reduce_float_axes.onnx", {3, {"ReduceMean node 'mean_float_axes'", "float32", "int64"}, {}}},
      {"negative_dim.onnx", {2, {"'x'", "-5"}, {}}},
      {"overflow_dims.onnx", {2, {"'x'", "overflows"}, {}}},
      {"deep_if_1000.onnx", {3, {"nested more than 64 levels"}, {}}},
      {"external_outside/model.onnx", {2, {"'w'", "../../secret.bin", "model's folder"}, {}}},
      {"symbolic_dim.onnx", {2, {"'x'", "--dim N"}, {}}},
      // Not SSA; memplan resolves the inner use to the inner value and accepts it.
      {"shadow_node_output.onnx", {0, {}, {}}},
  };
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(kModels / "bad"))
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), kModels / "bad").generic_string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 12);
  for (const auto& f : files) {
    INFO("models/bad/" << f);
    auto it = expect.find(f);
    REQUIRE(it != expect.end());
    const Expect& e = it->second;
    std::vector<std::string> args{"compile", bad(f)};
    args.insert(args.end(), e.extra_args.begin(), e.extra_args.end());
    if (e.code == 0) {
      Run r = run_cli(args);
      INFO(describe(args, r));
      REQUIRE_FALSE(r.signaled);
      CHECK(r.exit_code == 0);
      CHECK(r.err.empty());
      continue;
    }
    std::vector<std::string> says = e.says;
    says.push_back(bad(f));  // the message names the file
    expect_error(args, e.code, says);
  }
}

TEST_CASE("cli: symbolic_dim compiles once N is given", "[cli]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"compile", bad("symbolic_dim.onnx"), "--dim", "N=4"},
           {"compile", bad("symbolic_dim.onnx"), "--shape", "x=4x3"},
       }) {
    Run r = run_cli(args);
    INFO(describe(args, r));
    REQUIRE_FALSE(r.signaled);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
}

TEST_CASE("cli: a data-dependent scan output is dynamic, or refused with --static", "[cli]") {
  const std::string m = model("loop_data_dependent_scan");
  Run dynamic = run_cli({"compile", m});
  INFO(describe({"compile", m}, dynamic));
  REQUIRE_FALSE(dynamic.signaled);
  CHECK(dynamic.exit_code == 0);
  CHECK_THAT(dynamic.out, Catch::Contains("dynamic tensors") && Catch::Contains("'sums'") &&
                              Catch::Contains("'sums' [?] from while; a bound for it would plan it in the arena"));
  expect_error({"compile", m, "--static"}, 2, {m, "'sums'", "--bound sums=", "--static"});
  Run bounded = run_cli({"compile", m, "--bound", "sums=64", "--static"});
  INFO(describe({"compile", m, "--bound", "sums=64", "--static"}, bounded));
  REQUIRE_FALSE(bounded.signaled);
  CHECK(bounded.exit_code == 0);
  CHECK(bounded.err.empty());
  CHECK_THAT(bounded.out, !Catch::Contains("dynamic tensors"));
}

TEST_CASE("cli: bad --shape, --dim and --bound values", "[cli]") {
  const std::string mlp = model("tiny_mlp");
  const std::string sym = bad("symbolic_dim.onnx");
  expect_error({"compile", mlp, "--shape", "nope=1x64"}, 2, {mlp, "a shape is given for 'nope'", "inputs: x"});
  expect_error({"compile", mlp, "--shape", "x=1x2x3"}, 2, {"input 'x' is declared [1, 64]", "[1, 2, 3]"});
  expect_error({"compile", mlp, "--shape", "x=2x64"}, 2, {"input 'x' is declared [1, 64]", "[2, 64]"});
  expect_error({"compile", sym, "--dim", "N=4", "--dim", "M=3"}, 2, {sym, "a value is given for dim 'M'"});
  expect_error({"compile", sym, "--dim", "N=abc"}, 2, {"--dim N", "'abc'"});
  expect_error({"compile", sym, "--dim", "N=-4"}, 2, {"--dim N", "'-4'"});
  expect_error({"compile", sym, "--dim", "N=2x2"}, 2, {"--dim N=2x2"});
  expect_error({"compile", sym, "--dim", "N"}, 2, {"--dim N", "NAME=VALUE"});
  expect_error({"compile", sym, "--shape", "x=4x"}, 2, {"--shape x", "'4x'"});
  expect_error({"compile", model("loop_data_dependent_scan"), "--bound", "sums=x"}, 2, {"--bound sums"});
}

TEST_CASE("cli: every example model compiles", "[cli]") {
  for (const auto& entry : fs::directory_iterator(kModels)) {
    if (!entry.is_directory() || entry.path().filename() == "bad" || !fs::exists(entry.path() / "model.onnx"))
      continue;
    std::vector<std::string> args{"compile", (entry.path() / "model.onnx").string()};
    if (entry.path().filename() == "loop_data_dependent_scan") args.insert(args.end(), {"--bound", "sums=64"});
    Run r = run_cli(args);
    INFO(describe(args, r));
    REQUIRE_FALSE(r.signaled);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK_FALSE(r.out.empty());
  }
}

TEST_CASE("cli: a name with a newline in it does not split the error line", "[cli]") {
  using namespace memplan::test;
  ModelBuilder b("graph\nname");
  add_input(b.graph(), "x", elem::kFloat, {2});
  add_node(b.graph(), "Add", {"x", "no\nwhere"}, {"y"}, "add\nnode");
  add_output(b.graph(), "y", elem::kFloat, {2});
  TempDir dir("cli_test");
  const fs::path file = dir.path / "ctl.onnx";
  {
    std::ofstream out(file, std::ios::binary);
    out << b.bytes();
  }
  expect_error({"compile", file.string()}, 2, {file.string()});
}

TEST_CASE("cli: compile reports the bound with storage groups and the refused aliases, --no-share plans none",
          "[cli][storage]") {
  const std::string m = std::string(MEMPLAN_SOURCE_DIR) + "/models/real/blazeface_back_256/model.onnx";
  Run shared = run_cli({"compile", m});
  INFO(describe({"compile", m}, shared));
  REQUIRE_FALSE(shared.signaled);
  REQUIRE(shared.exit_code == 0);
  CHECK_THAT(shared.out, Catch::Contains("aliased bound") && Catch::Contains("outputs in place and") &&
                             Catch::Contains("shared with"));
  Run own = run_cli({"compile", m, "--no-share", "--report", "json"});
  INFO(describe({"compile", m, "--no-share"}, own));
  REQUIRE(own.exit_code == 0);
  CHECK_THAT(own.out, Catch::Contains("\"alias\": \"own\"") && !Catch::Contains("\"alias\": \"in place\""));
  Run json = run_cli({"compile", m, "--report", "json"});
  REQUIRE(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"alias\": \"in place\"") && Catch::Contains("\"refused_aliases\": ["));
}

TEST_CASE("cli: --prefer memory swaps a kernel whose scratchpad sets the peak, and its plan loads with it",
          "[cli][storage]") {
  const std::string m = std::string(MEMPLAN_SOURCE_DIR) + "/models/real/light_resnet50/model.onnx";
  auto arena = [](const std::string& json) {
    const auto at = json.find("\"arena_bytes\": ");
    REQUIRE(at != std::string::npos);
    return std::stoull(json.substr(at + 15));
  };
  Run speed = run_cli({"compile", m, "--prefer", "speed", "--report", "json"});
  REQUIRE(speed.exit_code == 0);
  const fs::path plan = fs::temp_directory_path() / "memplan_cli_prefer_memory.mplan";
  Run memory = run_cli({"compile", m, "--prefer", "memory", "--report", "json", "-o", plan.string()});
  INFO(memory.err);
  REQUIRE(memory.exit_code == 0);
  CHECK(arena(memory.out) < arena(speed.out));
  Run verify = run_cli({"verify", plan.string(), m});
  INFO(verify.err);
  CHECK(verify.exit_code == 0);
  fs::remove(plan);
}

TEST_CASE("cli: --max-arena fails naming the smallest arena it can reach and its peak", "[cli][storage]") {
  const std::string m = model("tiny_mlp");
  expect_error({"compile", m, "--max-arena", "64"}, 2, {m, "the smallest arena memplan can plan is", "over the budget of 64 bytes", "its peak is at step"});
  Run fits = run_cli({"compile", m, "--max-arena", "100000"});
  CHECK(fits.exit_code == 0);
}

TEST_CASE("cli: --external-inputs plans no arena bytes for the inputs, its plan loads and runs to the expected answer",
          "[cli][external-inputs]") {
  const fs::path dir = kModels / "example";
  const std::string m = (dir / "model.onnx").string();
  auto number = [](const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\": ");
    REQUIRE(at != std::string::npos);
    return std::stoull(json.substr(at + key.size() + 4));
  };
  Run inside = run_cli({"compile", m, "--prefer", "memory", "--report", "json"});
  REQUIRE(inside.exit_code == 0);
  memplan::test::TempDir tmp("cli_external_inputs");
  const std::string plan = tmp / "example.mplan";
  Run outside = run_cli({"compile", m, "--prefer", "memory", "--external-inputs", "--report", "json", "-o", plan});
  INFO(outside.err);
  REQUIRE(outside.exit_code == 0);
  CHECK_THAT(outside.out, Catch::Contains("\"external_inputs\": true"));
  CHECK(number(outside.out, "external_input_bytes") == 2 * 401408 + 64);  // input, add_in, cond
  CHECK(number(inside.out, "arena_bytes") >= number(outside.out, "arena_bytes") + 401408);
  Run text = run_cli({"inspect", plan});
  CHECK_THAT(text.out, Catch::Contains("(external: read from the caller's buffers, outside the arena)"));
  const fs::path data = dir / "test_data_set_0";
  std::vector<std::string> args{"run", m, "--plan", plan, "--check-memory", "--output-dir", tmp / "out"};
  for (const std::string name : {"input", "cond", "add_in"})
    args.push_back("--input=" + name + "=" + (data / "inputs" / (name + ".npy")).string());
  Run run = run_cli(args);
  INFO(describe(args, run));
  REQUIRE(run.exit_code == 0);
  const memplan::io::NpyArray got = memplan::io::read_npy((fs::path(tmp / "out") / "output.npy").string());
  const memplan::io::NpyArray want = memplan::io::read_npy((data / "expected" / "output.npy").string());
  REQUIRE(got.info == want.info);
  const auto* g = reinterpret_cast<const float*>(got.data.data());
  const auto* w = reinterpret_cast<const float*>(want.data.data());
  float worst = 0;
  for (size_t i = 0; i < got.data.size() / sizeof(float); ++i) worst = std::max(worst, std::abs(g[i] - w[i]));
  CHECK(worst < 1e-4f);
}

TEST_CASE("cli: the report names what runs each node, and --fail-on-ref refuses a node on a oneDNN reference kernel",
          "[cli][kernels]") {
  // LRN over 3 channels: oneDNN 2.6 has jit LRN kernels for 5 only, else its reference kernel,
  // which names itself "lrn_ref:any".
  memplan::test::ModelBuilder mb;
  auto& g = mb.graph();
  memplan::test::add_input(g, "x", memplan::test::elem::kFloat, {1, 8, 9, 9});
  auto* lrn = memplan::test::add_node(g, "LRN", {"x"}, {"y"}, "lrn");
  memplan::test::attr_int(lrn, "size", 3);
  memplan::test::add_output(g, "y", memplan::test::elem::kFloat, {1, 8, 9, 9});
  memplan::test::TempDir tmp("cli_fail_on_ref");
  const std::string m = tmp / "lrn.onnx";
  std::ofstream(m, std::ios::binary) << mb.bytes();

  Run text = run_cli({"compile", m});
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("kernels: 1 on oneDNN (" + memplan::rt::dnnl_isa_name() +
                                       "), 0 on memplan's own loops; 1 on oneDNN reference (ref:) kernels:"));
  CHECK_THAT(text.out, Catch::Contains("  LRN node 'lrn' in "));
  Run json = run_cli({"compile", m, "--report", "json"});
  CHECK_THAT(json.out, Catch::Contains("\"reference_kernels\": 1, \"kernels\": [{\"node\": \"LRN node 'lrn'\""));
  expect_error({"compile", m, "--fail-on-ref"}, 3, {m, "1 node(s) run on oneDNN reference kernels: LRN node 'lrn' (lrn_ref:any)"});

  // A model on jit kernels only compiles either way, and its report says so.
  Run clean = run_cli({"compile", model("tiny_mlp"), "--fail-on-ref"});
  CHECK(clean.exit_code == 0);
  CHECK_THAT(clean.out, Catch::Contains("no oneDNN reference (ref:) kernel"));
}

TEST_CASE("cli: the report says which instruction set oneDNN ran at and what timing leaner kernels cost the compile",
          "[cli][kernels][tuning]") {
  // seg_fcn_256_dyn's int8 convolutions stage copies that set the arena's peak: Balanced times
  // their leaner variants, within the budget.
  const std::string m = model("quant/seg_fcn_256_dyn");
  Run json = run_cli({"compile", m, "--report", "json"});
  INFO(json.err);
  REQUIRE(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"isa\": \"" + memplan::rt::dnnl_isa_name() + "\""));
  CHECK_THAT(json.out, Catch::Contains("\"kernel_tuning\": {\"budget_seconds\": 1.5, \"seconds\": "));
  Run text = run_cli({"compile", m, "--tuning-seconds", "0.5"});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("s of a 0.50 s budget; "));
  // No budget: nothing is timed and no leaner kernel taken, so the arena is --prefer speed's.
  Run none = run_cli({"compile", m, "--tuning-seconds", "0", "--report", "json"});
  Run speed = run_cli({"compile", m, "--prefer", "speed", "--report", "json"});
  REQUIRE(none.exit_code == 0);
  REQUIRE(speed.exit_code == 0);
  const auto arena = [](const std::string& out) { return out.substr(out.find("\"arena_bytes\""), 40); };
  CHECK(arena(none.out) == arena(speed.out));
  CHECK_THAT(none.out, Catch::Contains("\"candidates_timed\": 0"));
  expect_error({"compile", m, "--tuning-seconds", "-1"}, 2, {"--tuning-seconds"});

  // --prefer memory takes the leaner variants untimed: the report names them and what they saved,
  // and so does the plan file.
  memplan::test::TempDir tmp("cli_leaner_report");
  const std::string plan = tmp / "lean.mplan";
  Run memory = run_cli({"compile", m, "--prefer", "memory", "-o", plan});
  REQUIRE(memory.exit_code == 0);
  CHECK_THAT(memory.out, Catch::Contains("nodes run a leaner variant than their fastest kernel:"));
  CHECK_THAT(memory.out, Catch::Contains("ConvInteger node '"));
  CHECK_THAT(memory.out, Catch::Contains(", the fastest kernel's "));
  CHECK_THAT(memory.out, !Catch::Contains("kernel choice:"));  // nothing timed
  Run inspected = run_cli({"inspect", plan});
  REQUIRE(inspected.exit_code == 0);
  const auto leaner = [](const std::string& out) { return out.substr(out.find("leaner kernels:"), 200); };
  CHECK(leaner(inspected.out) == leaner(memory.out));
}

TEST_CASE("cli: a sequence input is a folder of numbered .npy files, a sequence output is written as one",
          "[cli][containers]") {
  const fs::path dir = kModels / "sequence_list";
  const fs::path data = dir / "test_data_set_0";
  memplan::test::TempDir tmp("cli_sequences");
  const std::string out = tmp / "out";
  // A stale tensor past the end of this run's list must not survive it.
  fs::create_directories(fs::path(out) / "halves");
  std::ofstream(fs::path(out) / "halves" / "7.npy") << "stale";
  const std::vector<std::string> args{"run", (dir / "model.onnx").string(), "--input",
                                      "parts=" + (data / "inputs" / "parts").string(), "--check-memory",
                                      "--output-dir", out};
  Run r = run_cli(args);
  INFO(describe(args, r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("'parts' sequence of [?, 3], a graph input: its tensors are the session's copies"));
  auto same = [](const fs::path& got, const fs::path& want) {
    const memplan::io::NpyArray g = memplan::io::read_npy(got.string()), w = memplan::io::read_npy(want.string());
    return g.info.dtype == w.info.dtype && g.info.shape == w.info.shape && g.data == w.data;
  };
  for (const char* name : {"count", "doubled", "last"})
    CHECK(same(fs::path(out) / (std::string(name) + ".npy"), data / "expected" / (std::string(name) + ".npy")));
  size_t pieces = 0;
  for (const auto& e : fs::directory_iterator(fs::path(out) / "halves")) {
    ++pieces;
    CHECK(same(e.path(), data / "expected" / "halves" / e.path().filename()));
  }
  CHECK(pieces == 3);

  // Bad lists: a gap in the numbering, a file where a folder belongs, none for a sequence, a tensor
  // of another element type.
  const fs::path gap = tmp / "gap";
  fs::create_directories(gap);
  fs::copy_file(data / "inputs" / "parts" / "0.npy", gap / "0.npy");
  fs::copy_file(data / "inputs" / "parts" / "1.npy", gap / "2.npy");
  const std::string m = (dir / "model.onnx").string();
  expect_error({"run", m, "--input", "parts=" + gap.string()}, 2, {"input 'parts'", "no 1.npy"});
  expect_error({"run", m, "--input", "parts=" + (data / "inputs" / "parts" / "0.npy").string()}, 2,
               {"input 'parts'", "a folder of 0.npy"});
  expect_error({"run", m, "--input", "parts=none"}, 2, {"input 'parts'", "only an optional input may be none"});
  const fs::path ints = tmp / "ints";
  fs::create_directories(ints);
  const int64_t one = 1;
  memplan::io::write_npy((ints / "0.npy").string(), memplan::DType::Int64, std::vector<int64_t>{1}, &one, 8);
  expect_error({"run", m, "--input", "parts=" + ints.string()}, 2, {"0.npy", "float32", "int64"});
}
