// memplan run MODEL --input x.npy | --input NAME=x.npy ... [--plan P.mplan] [--output-dir DIR]
//                   [--threads N] [--sessions N] [--warmup N] [--repeat N] [--check-memory] [--profile]
//                   [--report text|json]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "concurrent_runs.h"
#include "container_io.h"
#include "io/npy.h"
#include "memplan/memplan.h"
#include "profile_table.h"
#include "shape_options.h"
#include "util/json.h"
#include "util/peak_rss.h"

namespace memplan::cli {

namespace {

struct RunArgs {
  std::string model, plan, output_dir = ".", report = "text", strategy = "auto";
  std::vector<std::string> inputs;
  int threads = 0, sessions = 1, repeat = 1, warmup = 0;
  bool check_memory = false, profile = false, no_share = false, fixed_threads = false, external_inputs = false,
       keep_denormals = false;
  bool fail_on_ref = false;
  std::string prefer = "balanced";
  double tuning_seconds = 1.5;
  uint64_t max_arena = 0;
  ShapeArgs shapes;
};

struct InputFile {
  std::string name, path;
  io::NpyInfo info;
  std::vector<int64_t> shape;  // as the model takes it: the file's, or [] for a one-element scalar
  std::optional<ContainerInput> container;  // a sequence or optional input (container_io.h)
};

// Output file names keep [A-Za-z0-9._-]; everything else becomes '_'.
std::string file_name_for(const std::string& tensor) {
  std::string out = tensor;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return out.empty() || out == "." || out == ".." ? "_" + out : out;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

// What ONNX Runtime accepts, and refuses, for an input: the file must have the declared element
// type and every declared static dim (symbolic dims take the file's sizes); a one-element array
// stands for a declared scalar, as the JavaScript and Python clients send it.
void check_against_declared(const std::string& model, const TensorInfo& t, InputFile& f) {
  const std::string what = model + ": input '" + t.name + "' (" + f.path + ")";
  if (f.info.dtype != static_cast<DType>(t.dtype))
    fail(what + ": the model declares " + dtype_name(static_cast<DType>(t.dtype)) + ", the file holds " +
         dtype_name(f.info.dtype));
  if (!t.ranked) return;
  // One element: every dim is 1 (a product could overflow on a hostile header).
  const bool one_element = std::all_of(f.info.shape.begin(), f.info.shape.end(), [](int64_t d) { return d == 1; });
  if (t.shape.empty() && one_element) f.shape.clear();
  bool fits = t.shape.size() == f.shape.size();
  for (size_t d = 0; fits && d < t.shape.size(); ++d) fits = t.shape[d] < 0 || t.shape[d] == f.shape[d];
  if (!fits) fail(what + ": the model declares shape " + shape_text(t.shape) + ", the file is " + shape_text(f.info.shape));
}

std::vector<InputFile> match_inputs(const RunArgs& a, const std::vector<TensorInfo>& declared) {
  std::vector<InputFile> files;
  size_t positional = 0;
  for (const std::string& spec : a.inputs) {
    InputFile f;
    const auto eq = spec.find('=');
    if (eq != std::string::npos && eq > 0 && !std::filesystem::exists(spec)) {
      f.name = spec.substr(0, eq);
      f.path = spec.substr(eq + 1);
      if (std::none_of(declared.begin(), declared.end(), [&](const TensorInfo& t) { return t.name == f.name; }))
        fail(a.model + ": --input " + spec + ": the model has no input named '" + f.name + "'");
    } else {
      while (positional < declared.size() && std::any_of(files.begin(), files.end(),
                                                         [&](const InputFile& x) { return x.name == declared[positional].name; }))
        ++positional;
      if (positional >= declared.size())
        fail(a.model + ": --input " + spec + ": more inputs given than the model has (" +
             std::to_string(declared.size()) + ")");
      f.name = declared[positional++].name;
      f.path = spec;
    }
    if (std::any_of(files.begin(), files.end(), [&](const InputFile& x) { return x.name == f.name; }))
      fail(a.model + ": input '" + f.name + "' is given twice");
    const auto t = std::find_if(declared.begin(), declared.end(), [&](const TensorInfo& d) { return d.name == f.name; });
    if (t != declared.end() && t->kind != ValueKind::Tensor) {
      f.container = read_container_input(a.model, *t, f.path);
      files.push_back(std::move(f));
      continue;
    }
    f.info = io::read_npy_info(f.path);
    f.shape = f.info.shape;
    if (t != declared.end()) check_against_declared(a.model, *t, f);
    files.push_back(std::move(f));
  }
  for (const TensorInfo& t : declared)
    if (std::none_of(files.begin(), files.end(), [&](const InputFile& f) { return f.name == t.name; }))
      fail(a.model + ": input '" + t.name + "' is missing; give it with --input " + t.name + "=FILE.npy");
  return files;
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// A given plan is checked against the model and the inputs; otherwise shapes come from the inputs,
// and new shapes mean a new plan.
// The threads each session's kernels are made for: --threads, or with several sessions the cores
// shared among them (more threads than cores would make them take turns); 0 lets memplan choose.
int compile_threads(const RunArgs& a) {
  if (a.threads > 0) return a.threads;
  return a.sessions > 1 ? std::max(1, omp_get_max_threads() / a.sessions) : 0;
}

std::shared_ptr<const CompiledModel> compiled_for(const RunArgs& a, std::vector<InputFile>& files) {
  std::shared_ptr<const CompiledModel> model;
  if (!a.plan.empty()) model = CompiledModel::load(a.model, a.plan, compile_threads(a));
  files = match_inputs(a, model ? model->inputs() : model_inputs(a.model));
  if (model) {
    for (const InputFile& f : files)
      for (const TensorInfo& t : model->inputs())
        if (t.name == f.name && !f.container && t.shape != f.shape)
          fail(a.plan + ": the plan was made for other input shapes (input '" + f.name +
               "'); compile a plan for these inputs or run without --plan");
    return model;
  }
  const ShapeOptions shapes = to_shape_options(a.shapes);
  CompileOptions options;
  options.dims = shapes.dims;
  options.bounds = shapes.bounds;
  options.static_only = shapes.static_only;
  options.strategy = a.strategy;
  options.share_storage = !a.no_share;
  options.prefer = a.prefer;
  options.tuning_seconds = a.tuning_seconds;
  options.max_arena = a.max_arena;
  options.external_inputs = a.external_inputs;
  options.fail_on_reference_kernels = a.fail_on_ref;
  options.threads = compile_threads(a);
  for (const InputFile& f : files)
    if (!f.container) options.input_shapes[f.name] = f.shape;
  return CompiledModel::compile(a.model, options);
}

// Warm-up runs, then the timed ones. Inputs are read from their files straight into their arena
// slots before every run (a slot is reused once its input has been read).
Timings run_timed(const RunArgs& a, Session& session, const std::vector<InputFile>& files) {
  auto load_inputs = [&] {
    for (const InputFile& f : files) {
      if (f.container) {
        set_container_input(session, *f.container);
        continue;
      }
      void* slot = session.input_buffer(f.name, static_cast<int32_t>(f.info.dtype), f.shape, f.info.data_bytes);
      io::read_npy_data(f.path, f.info, slot, f.info.data_bytes);
    }
  };
  for (int r = 0; r < a.warmup; ++r) {
    load_inputs();
    session.run();
  }
  if (a.profile) session.reset_profile();
  std::vector<double> times;
  for (int r = 0; r < a.repeat; ++r) {
    load_inputs();
    const auto t0 = std::chrono::steady_clock::now();
    session.run();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return summarize(std::move(times));
}

// A session's threads: --threads, or (a plan loaded with every core) the cores shared among the
// sessions; 0 is the model's own count.
int session_threads(const RunArgs& a, const CompiledModel& model) {
  const int want = compile_threads(a);
  return want > 0 ? std::min(want, model.threads()) : 0;
}

std::vector<LoadedInput> load_inputs(const std::vector<InputFile>& files) {
  std::vector<LoadedInput> out;
  for (const InputFile& f : files) {
    if (f.container) fail("input '" + f.name + "': a sequence or optional input runs in one session (no --sessions)");
    LoadedInput in{f.name, static_cast<int32_t>(f.info.dtype), f.shape, std::vector<unsigned char>(f.info.data_bytes)};
    io::read_npy_data(f.path, f.info, in.bytes.data(), f.info.data_bytes);
    out.push_back(std::move(in));
  }
  return out;
}

std::string timings_json(const Timings& t) {
  return "{\"min\": " + ms(t.min) + ", \"median\": " + ms(t.median) + ", \"max\": " + ms(t.max) + "}";
}

std::string rate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::vector<std::string> write_outputs(const RunArgs& a, const CompiledModel& model, const Session& session) {
  std::filesystem::create_directories(a.output_dir);
  std::vector<std::string> written;
  for (const TensorInfo& o : model.outputs()) {
    if (o.kind != ValueKind::Tensor) {
      for (std::string& p : write_container_output(a.output_dir, file_name_for(o.name), o, session))
        written.push_back(std::move(p));
      continue;
    }
    TensorRef ref = session.output(o.name);
    const std::string path = (std::filesystem::path(a.output_dir) / (file_name_for(o.name) + ".npy")).string();
    io::write_npy(path, static_cast<DType>(ref.dtype), ref.shape, ref.data, ref.bytes);
    written.push_back(path);
  }
  return written;
}

// What several concurrent sessions add to the report (`sessions` empty for one session).
struct Throughput {
  double per_s = 0;
  std::vector<Timings> sessions;
};

// The sessions' runs (warm-up included) by the threads each used: [k] for k threads.
std::vector<uint64_t> runs_by_threads(const std::vector<const Session*>& sessions) {
  std::vector<uint64_t> total;
  for (const Session* s : sessions) {
    const std::vector<uint64_t> runs = s->runs_by_threads();
    total.resize(std::max(total.size(), runs.size()), 0);
    for (size_t k = 0; k < runs.size(); ++k) total[k] += runs[k];
  }
  return total;
}

// "runs on k threads": {"2": 30, "1": 12} in JSON, "30 on 2, 12 on 1" in text; most threads first.
std::string runs_by_threads_text(const std::vector<uint64_t>& runs, bool json) {
  std::string out;
  for (size_t k = runs.size(); k-- > 1;) {
    if (runs[k] == 0) continue;
    if (!out.empty()) out += ", ";
    out += json ? "\"" + std::to_string(k) + "\": " + std::to_string(runs[k])
                : std::to_string(runs[k]) + " on " + std::to_string(k);
  }
  return out;
}

void print_report(const RunArgs& a, const CompiledModel& model, const Session& session, const Timings& t,
                  const Throughput& tp, const std::vector<uint64_t>& by_threads,
                  const std::vector<std::string>& written) {
  const std::vector<DynamicTensorUse> dynamic = session.dynamic_tensors();
  const int threads = session_threads(a, model) > 0 ? session_threads(a, model) : model.threads();
  if (a.report == "json") {
    std::string per_session;
    for (const Timings& s : tp.sessions) per_session += (per_session.empty() ? "" : ", ") + timings_json(s);
    std::string dynamic_json;
    for (const DynamicTensorUse& d : dynamic)
      dynamic_json += (dynamic_json.empty() ? "" : ", ") + json_string(d.name) + ": " + std::to_string(d.max_bytes);
    std::cout << model.report_json("\"run_ms\": " + timings_json(t) + ", \"runs\": " + std::to_string(t.runs) +
                                   ", \"threads\": " + std::to_string(threads) +
                                   ", \"kernel_threads\": " + std::to_string(model.threads()) +
                                   ", \"runs_by_threads\": {" + runs_by_threads_text(by_threads, true) + "}" +
                                   ", \"sessions\": " + std::to_string(std::max<size_t>(tp.sessions.size(), 1)) +
                                   ", \"throughput_per_s\": " + rate(tp.per_s) +
                                   (tp.sessions.empty() ? "" : ", \"session_run_ms\": [" + per_session + "]") +
                                   ", \"dynamic_tensor_max_bytes\": {" + dynamic_json + "}" +
                                   ", \"dynamic_bytes_held\": " + std::to_string(session.dynamic_bytes()) +
                                   ", \"peak_rss_bytes\": " + std::to_string(process_peak_rss_bytes()) +
                                   (a.profile ? ", " + profile_json(session.profile(), a.repeat) : ""));
    return;
  }
  std::cout << model.report_text();
  for (const DynamicTensorUse& d : dynamic)
    std::cout << "dynamic tensor '" << d.name << "': at most " << d.max_bytes << " bytes in these runs\n";
  if (!dynamic.empty())
    std::cout << "dynamic tensors, sequences and optionals: " << session.dynamic_bytes()
              << " bytes held by the session (dynamic tensors whose lifetimes do not overlap share a buffer)\n";
  std::cout << "inference: min " << ms(t.min) << " ms, median " << ms(t.median) << " ms, max " << ms(t.max)
            << " ms over " << t.runs << " run(s), " << threads << " thread(s) per session\n";
  if (threads > 1)
    std::cout << "threads per run (warm-up included; fewer while other processes hold the cores): "
              << runs_by_threads_text(by_threads, false) << "\n";
  for (size_t k = 0; k < tp.sessions.size(); ++k)
    std::cout << "session " << k << ": median " << ms(tp.sessions[k].median) << " ms over " << tp.sessions[k].runs
              << " run(s)\n";
  std::cout << "throughput: " << rate(tp.per_s) << " inferences/s"
            << (tp.sessions.empty() ? "" : " (" + std::to_string(tp.sessions.size()) + " concurrent sessions)") << "\n";
  if (a.profile) std::cout << profile_text(session.profile(), a.repeat);
  std::cout << "process peak resident memory: " << process_peak_rss_bytes() << " bytes\n";
  for (const std::string& p : written) std::cout << "wrote " << p << "\n";
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Run a model on .npy inputs inside one planned arena");
  sub->add_option("model", a->model, "The .onnx file")->required();
  sub->add_option("-i,--input", a->inputs,
                  "An input: FILE.npy (in the model's input order) or NAME=FILE.npy; a sequence: a folder of 0.npy, "
                  "1.npy, ...; an optional holding nothing: none")
      ->allow_extra_args(false);
  sub->add_option("--plan", a->plan, "Use this plan (from `memplan compile -o`) instead of planning again");
  sub->add_option("--output-dir", a->output_dir,
                  "Where to write <output name>.npy, or a sequence's <output name>/0.npy, ... (default: .)");
  sub->add_option("--threads", a->threads,
                  "OpenMP threads per session (default: 1 for a model under 1 MFLOP, else the cores, shared "
                  "among --sessions)")
      ->check(CLI::Range(1, 1024));
  CLI::Option* sessions =
      sub->add_option("--sessions", a->sessions,
                      "Run N sessions of the model at once, each --repeat inferences on its own thread, and report "
                      "the throughput")
          ->check(CLI::Range(1, 256));
  sub->add_option("--repeat", a->repeat, "Run this many inferences and report min/median/max time")
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--warmup", a->warmup, "Run this many untimed inferences first (not in the times or the profile)")
      ->check(CLI::Range(0, 1000000));
  sub->add_flag("--fixed-threads", a->fixed_threads,
                "Run every inference at the session's thread count, instead of one thread while other processes "
                "hold the cores (bitwise-repeatable runs)");
  sub->add_flag("--keep-denormals", a->keep_denormals,
                "Compute with IEEE denormal floats (below 1.2e-38) instead of flushing them to zero, at their "
                "speed (SessionOptions::flush_denormals = false)");
  sub->add_flag("--check-memory", a->check_memory, "Guard mode: detect any buffer clobbered while live");
  sub->add_flag("--profile", a->profile, "Time every node (subgraphs included) and print the totals by op type")
      ->excludes(sessions);
  sub->add_option("--report", a->report, "Report format: text or json")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--strategy", a->strategy, "Planning strategy (see compile)")
      ->check(CLI::IsMember({"naive", "best-fit", "greedy-by-size", "greedy-by-breadth", "auto"}));
  sub->add_flag("--no-share", a->no_share, "Give every tensor its own bytes (see compile)");
  sub->add_option("--prefer", a->prefer, "balanced, memory or speed (see compile)")
      ->check(CLI::IsMember({"balanced", "memory", "speed"}));
  sub->add_option("--tuning-seconds", a->tuning_seconds, "Most seconds balanced spends timing leaner kernels (see compile)");
  sub->add_option("--max-arena", a->max_arena, "Fail unless the arena fits in this many bytes");
  sub->add_flag("--external-inputs", a->external_inputs,
                "Plan no arena bytes for the inputs; they are read from the files' buffers (see compile)");
  sub->add_flag("--fail-on-ref", a->fail_on_ref, "Fail when a node would run on a oneDNN reference kernel (see compile)");
  add_shape_options(*sub, a->shapes);
  add_action(sub, [a] {
    std::vector<InputFile> files;
    const std::shared_ptr<const CompiledModel> model = compiled_for(*a, files);
    const SessionOptions options{a->check_memory, a->profile, session_threads(*a, *model), !a->fixed_threads,
                                 !a->keep_denormals};
    if (a->sessions == 1) {
      Session session(model, options);
      const Timings t = run_timed(*a, session, files);
      // One session: its runs one after another, so the throughput is runs over their total time.
      const double per_s = t.sum_ms > 0 ? static_cast<double>(t.runs) * 1000 / t.sum_ms : 0;
      print_report(*a, *model, session, t, Throughput{per_s, {}}, runs_by_threads({&session}),
                   write_outputs(*a, *model, session));
      return;
    }
    std::vector<std::unique_ptr<Session>> sessions;
    for (int k = 0; k < a->sessions; ++k) sessions.push_back(std::make_unique<Session>(model, options));
    const ConcurrentResult r = run_concurrently(sessions, load_inputs(files), a->warmup, a->repeat);
    std::vector<const Session*> all;
    for (const auto& s : sessions) all.push_back(s.get());
    print_report(*a, *model, *sessions[0], r.all, Throughput{r.throughput_per_s, r.sessions}, runs_by_threads(all),
                 write_outputs(*a, *model, *sessions[0]));
  });
}

}  // namespace memplan::cli
