// Runs ONNX's operator conformance suite (the backend node tests, generated from Debian's
// python3-onnx by tools/gen_conformance.sh) through memplan's public API: compile, run, compare
// with ONNX's own tolerances (rtol 1e-3, atol 1e-7). Each test runs in a child process, so a crash
// or a hang is a failure, not the end of the run. A committed list names the tests that must pass.
// Real models are compared at their own tolerance: SOURCE.json's "suggested_tolerance"
// ({"rtol": R, "atol": A}), or rtol 1e-3, atol 1e-4 for a model folder outside the node suite
// that names none.
//
//   memplan_conformance SUITE_DIR [--must-pass FILE] [--write-passing FILE] [--filter TEXT] [--timeout S]
//                       [--require-all] [--fail-on-ref]
//
// SUITE_DIR is the generated suite (its node/ folder holds the tests) or any folder of model
// folders laid out the same way (model.onnx, test_data_set_K/{input,output}_N.pb), such as
// ../shared/models. --require-all fails the run unless every test passes (no skips). --fail-on-ref
// fails a test whose model runs a node on one of oneDNN's reference (ref:) kernels.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "memplan/memplan.h"
#include "onnx/onnx_pb.h"  // before onnx-data.pb.h: it defines ONNX_API
#include "onnx/onnx-data.pb.h"
#include "onnx/tensor_proto.h"

namespace fs = std::filesystem;
using namespace memplan;

namespace {

enum Outcome { kPass = 0, kFail = 1, kSkip = 3 };

struct Tolerance {
  double rtol, atol;
};
// ONNX's node tests are compared as ONNX's own runner does; real models (computed by another
// runtime, with other summation orders) at the tolerance their folder's README suggests.
constexpr Tolerance kNodeTolerance{1e-3, 1e-7};
constexpr Tolerance kModelTolerance{1e-3, 1e-4};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string tolerance_str(const Tolerance& t) { return "rtol " + num(t.rtol) + ", atol " + num(t.atol); }

// The tolerance for one test folder: SOURCE.json's "suggested_tolerance" when it has one, else the
// node suite's or the real models' default. Throws a one-line error naming the file when
// SOURCE.json is not valid JSON or its tolerance is not two non-negative numbers.
Tolerance tolerance_for(const fs::path& dir, bool node_suite) {
  const Tolerance fallback = node_suite ? kNodeTolerance : kModelTolerance;
  const fs::path source = dir / "SOURCE.json";
  if (!fs::exists(source)) return fallback;
  std::ifstream in(source, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error(source.string() + ": cannot read");
  google::protobuf::Struct root;
  const auto status = google::protobuf::util::JsonStringToMessage(text.str(), &root);
  if (!status.ok()) {
    // Protobuf's message goes on to quote the text with a caret under the fault: keep its first line.
    std::string why(status.message().data(), status.message().size());
    why = why.substr(0, why.find('\n'));
    throw std::runtime_error(source.string() + ": malformed JSON: " + why);
  }
  const auto found = root.fields().find("suggested_tolerance");
  if (found == root.fields().end()) return fallback;
  const auto bad = [&](const std::string& what) {
    return std::runtime_error(source.string() + ": suggested_tolerance: " + what);
  };
  if (!found->second.has_struct_value()) throw bad("not an object {\"rtol\": R, \"atol\": A}");
  const auto& fields = found->second.struct_value().fields();
  Tolerance t{};
  for (auto [key, value] : {std::pair{"rtol", &t.rtol}, std::pair{"atol", &t.atol}}) {
    const auto f = fields.find(key);
    if (f == fields.end()) throw bad(std::string("no \"") + key + "\"");
    if (f->second.kind_case() != google::protobuf::Value::kNumberValue || !std::isfinite(f->second.number_value()) ||
        f->second.number_value() < 0)
      throw bad(std::string("\"") + key + "\" is not a non-negative number");
    *value = f->second.number_value();
  }
  return t;
}

std::vector<fs::path> files_named(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    auto index = [](const fs::path& p) { return std::stoi(p.stem().string().substr(p.stem().string().find('_') + 1)); };
    return index(a) < index(b);
  });
  return out;
}

std::pair<std::string, Tensor> read_tensor(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) fail(path.string() + ": not a TensorProto (sequence or optional data?)");
  return {proto.name(), tensor_from_proto(proto, path.parent_path(), path.string())};
}

// A test's input or output: a tensor, or the tensors of a sequence, or an optional's (none when
// it holds no value). Which proto the file holds follows from the model's declared kind: the
// files are numbered in the order the model declares its inputs and outputs.
struct TestValue {
  std::string name;
  bool present = true;
  std::vector<Tensor> tensors;  // one for a tensor
};

TestValue read_value(const fs::path& path, ValueKind kind) {
  if (kind == ValueKind::Tensor) {
    auto [name, t] = read_tensor(path);
    TestValue v{name, true, {}};
    v.tensors.push_back(std::move(t));
    return v;
  }
  std::ifstream in(path, std::ios::binary);
  auto sequence = [&](const onnx::SequenceProto& seq, TestValue& v) {
    if (seq.elem_type() != onnx::SequenceProto::TENSOR && seq.tensor_values_size() == 0 && seq.elem_type() != 0)
      fail(path.string() + ": a sequence of other than tensors");
    for (const auto& t : seq.tensor_values()) v.tensors.push_back(tensor_from_proto(t, path.parent_path(), path.string()));
  };
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromIstream(&in)) fail(path.string() + ": not a SequenceProto");
    TestValue v{seq.name(), true, {}};
    sequence(seq, v);
    return v;
  }
  onnx::OptionalProto opt;
  if (!opt.ParseFromIstream(&in)) fail(path.string() + ": not an OptionalProto");
  TestValue v{opt.name(), opt.has_tensor_value() || opt.has_sequence_value(), {}};
  if (opt.has_tensor_value()) v.tensors.push_back(tensor_from_proto(opt.tensor_value(), path.parent_path(), path.string()));
  if (opt.has_sequence_value()) sequence(opt.sequence_value(), v);
  return v;
}

// Compares like ONNX's runner: same dtype and shape, |got - want| <= atol + rtol * |want|, NaN == NaN.
// ONNX 1.12 writes bfloat16 test data as uint16 bit patterns (numpy has no bfloat16) and its runner
// compares those patterns as uint16 numbers, so a bfloat16 output against uint16 data is compared
// the same way. (Its expected Cast results truncate where ONNX's Cast rounds to nearest even: as
// numbers, the patterns differ by 1, well within rtol.)
std::string compare(const TensorRef& got, const Tensor& want, const Tolerance& tol) {
  const bool bfloat16_bits = got.dtype == static_cast<int32_t>(DType::BFloat16) && want.dtype == DType::Uint16;
  if (got.dtype != static_cast<int32_t>(want.dtype) && !bfloat16_bits)
    return "dtype " + dtype_name(static_cast<DType>(got.dtype)) + ", expected " + dtype_name(want.dtype);
  if (std::vector<int64_t>(got.shape.begin(), got.shape.end()) != want.dims) return "shape differs";
  Tensor g = want;
  g.bytes.assign(static_cast<const std::byte*>(got.data), static_cast<const std::byte*>(got.data) + got.bytes);
  // The first element out of tolerance is named; the largest difference tells how far off it all is.
  std::string first;
  uint64_t bad = 0;
  double max_abs = 0;
  for (uint64_t i = 0; i < want.element_count(); ++i) {
    const double a = g.float_at(i), b = want.float_at(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) && a == b) continue;
    const double diff = std::abs(a - b);
    max_abs = std::isnan(diff) ? diff : std::max(max_abs, diff);  // once NaN, it stays NaN
    if (!(diff <= tol.atol + tol.rtol * std::abs(b)) && bad++ == 0)
      first = "element " + std::to_string(i) + " is " + num(a) + ", expected " + num(b);
  }
  if (bad == 0) return "";
  return first + " (" + std::to_string(bad) + " of " + std::to_string(want.element_count()) +
         " elements out of tolerance, max |diff| " + num(max_abs) + ")";
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool g_fail_on_ref = false;  // --fail-on-ref

// Runs one test (in the child). Writes the reason to `why`.
Outcome run_test(const fs::path& dir, const Tolerance& tol, std::string& why) {
  try {
    const std::string model_path = (dir / "model.onnx").string();
    const auto declared = model_inputs(model_path);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) {
      why = "no test data";
      return kSkip;
    }
    for (const fs::path& set : sets) {
      std::vector<std::pair<std::string, Tensor>> feeds;
      const auto inputs = files_named(set, "input_");
      CompileOptions options;
      std::vector<TestValue> container_feeds;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (i < declared.size() && declared[i].kind != ValueKind::Tensor) {
          TestValue v = read_value(inputs[i], declared[i].kind);
          if (v.name.empty()) v.name = declared[i].name;
          container_feeds.push_back(std::move(v));
          continue;
        }
        auto [name, t] = read_tensor(inputs[i]);
        if (name.empty() && i < declared.size()) name = declared[i].name;
        auto decl = std::find_if(declared.begin(), declared.end(), [&wanted = name](const TensorInfo& d) { return d.name == wanted; });
        if (decl != declared.end()) {
          // bfloat16 data is written as uint16 bit patterns (see compare()).
          if (decl->dtype == static_cast<int32_t>(DType::BFloat16) && t.dtype == DType::Uint16) t.dtype = DType::BFloat16;
          // Data that contradicts a fully static declared shape is a broken test, not a memplan
          // failure (ONNX 1.12's CastLike bfloat16 tests declare 'like' [3, 4] and feed [1]).
          const bool is_static = !decl->shape.empty() &&
                                 std::all_of(decl->shape.begin(), decl->shape.end(), [](int64_t d) { return d >= 0; });
          if (is_static && decl->shape != t.dims) {
            why = "invalid test data: input '" + name + "' is declared " + dims_str(decl->shape) + ", its data is " +
                  dims_str(t.dims);
            return kSkip;
          }
        }
        options.input_shapes[name] = t.dims;
        feeds.emplace_back(name, std::move(t));
      }
      // Graph outputs whose size only the data decides (a Loop with a run-time trip count) are
      // bounded by the expected output's shape, as a user would with --bound.
      const auto outputs_pb = files_named(set, "output_");
      const auto declared_outputs = declared_model(model_path).outputs;
      auto output_kind = [&](size_t i) { return i < declared_outputs.size() ? declared_outputs[i].kind : ValueKind::Tensor; };
      for (size_t i = 0; i < outputs_pb.size(); ++i) {
        if (output_kind(i) != ValueKind::Tensor) continue;
        auto [name, t] = read_tensor(outputs_pb[i]);
        if (!name.empty()) options.bounds[name] = t.dims;
      }
      auto model = CompiledModel::compile(model_path, options);
      if (g_fail_on_ref)
        for (const NodeKernel& k : model->kernels())
          if (k.reference) {
            why = k.node + " in " + k.graph + " runs on oneDNN's reference kernel " + k.implementation;
            return kFail;
          }
      Session session(model, SessionOptions{true});
      for (auto& [name, t] : feeds) {
        const auto bytes = t.materialize();
        session.set_input(name, static_cast<int32_t>(t.dtype), t.dims, bytes.data(), bytes.size());
      }
      for (const TestValue& v : container_feeds) {
        const ValueKind kind = std::find_if(declared.begin(), declared.end(), [&](const TensorInfo& d) {
                                 return d.name == v.name;
                               })->kind;
        std::vector<std::vector<std::byte>> bytes;
        std::vector<TensorRef> refs;
        for (const Tensor& t : v.tensors) bytes.push_back(t.materialize());
        for (size_t k = 0; k < v.tensors.size(); ++k)
          refs.push_back({static_cast<int32_t>(v.tensors[k].dtype), v.tensors[k].dims, bytes[k].data(), bytes[k].size()});
        if (!v.present) session.set_input_none(v.name);
        else if (kind == ValueKind::Optional) session.set_input(v.name, refs[0].dtype, refs[0].shape, refs[0].data, refs[0].bytes);
        else session.set_input_sequence(v.name, refs);
      }
      session.run();
      for (size_t i = 0; i < outputs_pb.size(); ++i) {
        TestValue want = read_value(outputs_pb[i], output_kind(i));
        std::string& name = want.name;
        if (name.empty() && i < model->outputs().size()) name = model->outputs()[i].name;
        std::string diff;
        if (session.output_has_value(name) != want.present) {
          diff = want.present ? "holds no value, expected one" : "holds a value, expected none";
        } else if (want.present) {
          const bool sequence = output_kind(i) == ValueKind::Sequence || output_kind(i) == ValueKind::OptionalSequence;
          const std::vector<TensorRef> got = sequence ? session.output_sequence(name) : std::vector<TensorRef>{session.output(name)};
          if (got.size() != want.tensors.size())
            diff = "a sequence of " + std::to_string(got.size()) + " tensors, expected " + std::to_string(want.tensors.size());
          for (size_t k = 0; diff.empty() && k < got.size(); ++k) {
            diff = compare(got[k], want.tensors[k], tol);
            if (!diff.empty() && sequence) diff = "tensor " + std::to_string(k) + ": " + diff;
          }
        }
        if (!diff.empty()) {
          why = "output '" + name + "': " + diff;
          return kFail;
        }
      }
    }
    return kPass;
  } catch (const Error& e) {
    why = e.what();
    return e.kind() == ErrorKind::Unsupported ? kSkip : kFail;
  } catch (const std::exception& e) {
    why = std::string("exception: ") + e.what();
    return kFail;
  }
}

struct Result {
  Outcome outcome;
  std::string why;
};

// Forks, runs the test in the child, reads its verdict through a pipe; a signal or a timeout fails.
Result run_isolated(const fs::path& dir, const Tolerance& tol, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return {kFail, "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why;
    const Outcome o = run_test(dir, tol, why);
    const std::string msg = std::to_string(static_cast<int>(o)) + " " + why;
    [[maybe_unused]] auto n = write(fds[1], msg.data(), msg.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string msg;
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  bool done = false;
  while (!done) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
    if (waitpid(pid, &status, WNOHANG) == pid) {
      while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
      done = true;
    } else if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(fds[0]);
      return {kFail, "hang: no result after " + std::to_string(timeout_s) + " s"};
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  close(fds[0]);
  if (WIFSIGNALED(status)) return {kFail, "crash: signal " + std::to_string(WTERMSIG(status))};
  if (msg.empty()) return {kFail, "crash: no verdict"};
  const int code = std::stoi(msg.substr(0, msg.find(' ')));
  return {static_cast<Outcome>(code), msg.find(' ') == std::string::npos ? "" : msg.substr(msg.find(' ') + 1)};
}

// The reason a test was skipped, shortened to what was unsupported (for the summary by kind).
std::string skip_kind(const std::string& why) {
  for (const char* key : {"no kernel for ", "opset ", "sequence", "string", "IR version", "unknown ops"}) {
    auto at = why.find(key);
    if (at == std::string::npos) continue;
    std::string rest = why.substr(at);
    if (std::string(key) == "no kernel for ") return rest.substr(0, rest.find(" x"));
    if (std::string(key) == "opset ") return rest.substr(0, rest.find(' ', 6));
    if (std::string(key) == "sequence") return "sequence/map/optional types";
    return key;
  }
  auto colon = why.rfind(": ");
  return colon == std::string::npos ? why : why.substr(colon + 2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: memplan_conformance SUITE_DIR [--must-pass FILE] [--write-passing FILE] [--filter TEXT] "
                 "[--timeout S] [--require-all] [--fail-on-ref]\n";
    return 2;
  }
  const fs::path suite = fs::is_directory(fs::path(argv[1]) / "node") ? fs::path(argv[1]) / "node" : fs::path(argv[1]);
  // ONNX lays its node tests out as <suite>/node/<test>: those keep ONNX's own tolerance.
  const bool node_suite = fs::weakly_canonical(suite).filename() == "node";
  std::string must_pass_file, write_file, filter;
  int timeout_s = 60;
  bool require_all = false;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--require-all" || flag == "--fail-on-ref") {
      (flag == "--require-all" ? require_all : g_fail_on_ref) = true;
      --i;  // takes no value
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "memplan_conformance: " << flag << " needs a value\n";
      return 2;
    }
    if (flag == "--must-pass") must_pass_file = argv[i + 1];
    else if (flag == "--write-passing") write_file = argv[i + 1];
    else if (flag == "--filter") filter = argv[i + 1];
    else if (flag == "--timeout") timeout_s = std::stoi(argv[i + 1]);
  }
  if (!fs::is_directory(suite)) {
    std::cerr << "memplan_conformance: " << suite << " does not exist; generate it with tools/gen_conformance.sh\n";
    return 1;
  }
  std::set<std::string> must_pass;
  if (!must_pass_file.empty()) {
    std::ifstream in(must_pass_file);
    if (!in) {
      std::cerr << "memplan_conformance: cannot read " << must_pass_file << "\n";
      return 1;
    }
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') must_pass.insert(line);
  }

  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(suite))
    if (fs::exists(e.path() / "model.onnx") && e.path().filename().string().find(filter) != std::string::npos)
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());

  const auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skip_kinds;
  std::vector<std::string> passing, failures;
  for (const fs::path& t : tests) {
    const std::string name = t.filename().string();
    // A SOURCE.json that cannot be read fails its test (without a tolerance to name).
    std::string tol_text;
    Result r;
    try {
      const Tolerance tol = tolerance_for(t, node_suite);
      tol_text = " (" + tolerance_str(tol) + ")";
      r = run_isolated(t, tol, timeout_s);
    } catch (const std::exception& e) {
      r = {kFail, e.what()};
    }
    if (r.outcome == kPass) {
      ++passed;
      passing.push_back(name);
    } else if (r.outcome == kSkip) {
      ++skipped;
      ++skip_kinds[skip_kind(r.why)];
      std::cout << "SKIP " << name << ": " << r.why << "\n";
    } else {
      ++failed;
      failures.push_back(name);
      std::cout << "FAIL " << name << tol_text << ": " << r.why << "\n";
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << "\nskipped, by what is unsupported:\n";
  std::vector<std::pair<int, std::string>> kinds;
  for (const auto& [k, n] : skip_kinds) kinds.emplace_back(n, k);
  std::sort(kinds.rbegin(), kinds.rend());
  for (const auto& [n, k] : kinds) std::cout << "  " << n << "  " << k << "\n";

  int exit_code = 0;
  if (!must_pass.empty()) {
    std::set<std::string> passing_set(passing.begin(), passing.end());
    std::vector<std::string> regressions, newly;
    for (const auto& t : must_pass)
      if (!passing_set.count(t)) regressions.push_back(t);
    for (const auto& t : passing)
      if (!must_pass.count(t)) newly.push_back(t);
    for (const auto& t : regressions) std::cout << "MUST-PASS FAILED " << t << "\n";
    if (!newly.empty()) {
      std::cout << "passing but not on the must-pass list (add them):";
      for (const auto& t : newly) std::cout << " " << t;
      std::cout << "\n";
    }
    std::cout << "must-pass: " << must_pass.size() - regressions.size() << " of " << must_pass.size() << " pass\n";
    if (!regressions.empty()) exit_code = 1;
  }
  if (!write_file.empty()) {
    std::ofstream out(write_file);
    out << "# ONNX node tests that must pass (generated with memplan_conformance --write-passing)\n";
    for (const auto& t : passing) out << t << "\n";
  }
  if (require_all && (failed > 0 || skipped > 0 || tests.empty())) {
    std::cout << "--require-all: " << (tests.empty() ? "no tests found" : "not every test passed") << "\n";
    exit_code = 1;
  }
  std::printf("conformance time: %.1f s for %zu tests\n", seconds, tests.size());
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return exit_code;
}
