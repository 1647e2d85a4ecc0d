// memplan's public API: compile an ONNX model (shapes fixed, kernels chosen, memory planned and
// verified), then run it in sessions that each own one preallocated arena.
//
//   memplan::CompileOptions options;
//   options.input_shapes["x"] = {1, 3, 224, 224};
//   auto model = memplan::CompiledModel::compile("model.onnx", options);
//   memplan::Session session(model);
//   session.set_input("x", memplan::kFloat32, {1, 3, 224, 224}, data, bytes);
//   session.run();
//   memplan::TensorRef y = session.output("y");
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memplan/error.h"

namespace memplan {

// Element types use ONNX's TensorProto.DataType numbers.
constexpr int32_t kFloat32 = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10, kFloat64 = 11;

struct CompileOptions {
  std::map<std::string, std::vector<int64_t>> input_shapes;  // fix input shapes
  std::map<std::string, int64_t> dims;                       // fix symbolic dims
  std::map<std::string, std::vector<int64_t>> bounds;        // largest shapes of run-time-sized tensors
  // A tensor whose size only the run decides, with no bound, is dynamic: allocated by the session
  // outside the arena. static_only refuses such a model instead, naming the --bound that fixes it.
  bool static_only = false;
  std::string strategy = "auto";  // naive, best-fit, greedy-by-size, greedy-by-breadth, auto
  uint64_t alignment = 64;
  // Tensors share bytes where that is safe (views, outputs written in place over inputs that die
  // there); false plans every tensor its own bytes (the no-alias plan, for comparison).
  bool share_storage = true;
  // Kernels chosen for memory: "balanced" (a leaner kernel where its scratchpad would set the
  // arena's peak and it costs at most 1.25x the time, or more where the leaner kernels together
  // add at most 2% of the model's time), "memory" (whatever the time; and oneDNN's blocked and
  // channels-last layouts or plain tensors, whichever plans the smaller arena) or "speed". It also sets
  // which 3x3 convolutions run Winograd's kernels (AVX-512), whose transformed weights take more
  // bytes: under balanced those of 14x14 outputs or more while they add at most 5% of the model's
  // weights and no arena bytes, every one under speed, none under memory.
  std::string prefer = "balanced";
  // Under "balanced", the most wall-clock seconds the compile spends timing leaner kernels against
  // the fastest ones; a candidate whose estimated cost is past what is left is never run (the
  // report's "kernel choice" line says what was spent). 0 times nothing: no leaner kernel is taken.
  double tuning_seconds = 1.5;
  uint64_t max_arena = 0;  // fail to compile unless the arena fits this many bytes (0: no budget)
  // Plan no arena bytes for the main graph's inputs (nor for views of them, such as a Reshape):
  // each run reads them where the caller keeps them (Session::bind_input, zero copy). An input
  // set by copy instead goes into a buffer the session makes for it, outside the arena.
  bool external_inputs = false;
  // Fail to compile (Error::Kind::Unsupported) when a node would run on one of oneDNN's reference
  // kernels, which are tens to hundreds of times slower than its jit ones; the error names each
  // node. Either way the report lists them (MemoryPlan's kernels; `memplan compile`'s report).
  bool fail_on_reference_kernels = false;
  // OpenMP threads the oneDNN kernels are made for (oneDNN fixes a primitive's work split when it
  // is made). 0: one for a model too small to gain from a second (under about 1 MFLOP per
  // inference), else OpenMP's default (OMP_NUM_THREADS, or every CPU this process may use).
  int threads = 0;
};

// What a model input or output holds, as ONNX types it: a tensor, a sequence of tensors (a list
// whose length and element shapes the run decides), an optional tensor or an optional sequence
// (which may hold nothing). TensorInfo's dtype and shape describe a container's elements.
enum class ValueKind : uint8_t { Tensor, Sequence, Optional, OptionalSequence };

struct TensorInfo {
  ValueKind kind = ValueKind::Tensor;
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> shape;  // compile-time shape (the largest, where it varies); -1 for an unknown dim
  std::vector<std::string> dim_names;  // as declared: a symbolic dim's name ("" for a dim with none)
  bool ranked = true;          // false: the model declares no shape at all
  uint64_t capacity_bytes = 0;
};

// A view of a tensor in a session's arena (or weights): valid until the next run.
struct TensorRef {
  int32_t dtype = 0;
  std::span<const int64_t> shape;
  const void* data = nullptr;
  uint64_t bytes = 0;
};

// What runs one node: oneDNN's implementation name(s) ("brgconv:avx512_core", with its reorders),
// or "memplan..." for memplan's own loops.
struct NodeKernel {
  std::string node;   // "Conv node 'conv1'"
  std::string graph;  // the graph's path
  std::string implementation;
  bool reference = false;  // one of oneDNN's reference (ref:) kernels, tens of times slower than its jit ones
};

// Read-only and shareable: the IR, the plan, the kernels (oneDNN primitives made once, weights
// reordered once). Any number of sessions may share one CompiledModel and run at the same time,
// each on its own thread (what a run changes is the session's).
class CompiledModel {
 public:
  static std::shared_ptr<const CompiledModel> compile(const std::string& model_path, const CompileOptions& options);
  // Uses a plan written by `memplan compile -o` (or save_plan); refuses a plan for another model.
  // `threads`: as CompileOptions::threads. A plan does not fix the thread count: the kernels are
  // made for this one where the plan has room for their scratchpads, else (more threads than the
  // plan was made for) as with 0. A session of fewer threads than its model's kernels were made
  // for makes primitives of its own beside them, which loading for its count avoids.
  static std::shared_ptr<const CompiledModel> load(const std::string& model_path, const std::string& plan_path,
                                                   int threads = 0);
  ~CompiledModel();

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  uint64_t arena_bytes() const;
  bool external_inputs() const;  // compiled with CompileOptions::external_inputs (or loaded so)
  int threads() const;  // the OpenMP threads its kernels were made for
  void save_plan(const std::string& path) const;
  std::string report_text() const;
  std::string report_json(const std::string& extra_members = "") const;
  // Every node's kernel on this machine, graph by graph in execution order (If, Loop and Scan,
  // and nodes whose kernels are made at run time, are not listed).
  std::vector<NodeKernel> kernels() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  friend struct CompiledModelAccess;
  explicit CompiledModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The main-graph inputs a model declares (shapes as declared: symbolic dims are -1).
std::vector<TensorInfo> model_inputs(const std::string& model_path);

// The metadata of a model file (ModelProto's and its graph's names and descriptions).
struct ModelMetadata {
  std::string producer_name, producer_version, domain, description, graph_name, graph_description;
  int64_t version = 0;
  std::map<std::string, std::string> custom;  // metadata_props
};

// What a model file declares before any compile: the main graph's inputs and outputs (shapes as
// declared: symbolic dims are -1, their names in dim_names) and its metadata.
struct ModelDeclaration {
  std::vector<TensorInfo> inputs, outputs;
  ModelMetadata metadata;
};
ModelDeclaration declared_model(const std::string& model_path);

struct SessionOptions {
  // Guard mode: poison dead buffers, checksum every buffer when its producer finishes and check it
  // again before each read; a mismatch names the buffer and the node that clobbered it.
  bool check_memory = false;
  // Time every node (If/Loop/Scan count only their own work; their subgraphs' nodes count for
  // themselves). Read the totals with Session::profile().
  bool profile = false;
  // OpenMP threads of this session's runs: 0 = as many as the model's kernels were made for
  // (CompiledModel::threads()); fewer is allowed, more is refused. Each run sets the count for
  // the calling thread only, so sessions on different threads run side by side.
  int threads = 0;
  // With several threads: each run takes no more threads than the cores other processes (and
  // this process's other runs) leave free, measured from the machine's CPU counters (oneDNN's
  // threads wait for each other after every primitive, so on a machine whose other cores are busy
  // one thread is faster), and one where the session measured one faster. Runs at different
  // counts may differ in the last bits (oneDNN may sum in another order). false: always
  // `threads`, bitwise-repeatable runs.
  bool adapt_to_load = true;
  // Denormal floats (below 1.2e-38) read and written as zero while a run computes (x86's FTZ and
  // DAZ), as TensorFlow does: Intel cores take a microcode assist of about a hundred cycles on
  // each. The calling thread's setting is restored after each run; the OpenMP workers of its runs
  // keep the last run's. false: IEEE denormals, at their speed.
  bool flush_denormals = true;
};

// One node's share of the run time, summed over every run since the session was made.
struct NodeProfile {
  std::string node;     // node name (or its op type and index when unnamed)
  std::string op_type;
  std::string graph;    // "main", or the subgraph's owner path: "loop_1/body"
  uint64_t calls = 0;   // a node inside a Loop body is called once per iteration
  double self_ms = 0;   // wall time, subgraph nodes excluded
  // What runs it: oneDNN's implementation name(s) ("brgconv:avx512_core", a "ref:any" is its slow
  // reference kernel), "memplan..." for memplan's own loops, "control flow", or "made at run time"
  // (a node whose tensors' sizes only the run decides).
  std::string implementation;
};

// A dynamic tensor's use in a session: the most bytes any run needed for it.
struct DynamicTensorUse {
  std::string name;
  uint64_t max_bytes = 0;
};

class Session {
 public:
  explicit Session(std::shared_ptr<const CompiledModel> model, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Copies an input into its arena slot. dtype and shape must match the compiled input. The slot
  // is reused once the input has been read, so a copied input is set again before every run.
  // (With external inputs the copy goes into the session's own buffer and stays for later runs.)
  void set_input(const std::string& name, int32_t dtype, std::span<const int64_t> shape, const void* data,
                 uint64_t bytes);
  // The input's arena slot, to fill in place (e.g. straight from a file), after the same checks.
  void* input_buffer(const std::string& name, int32_t dtype, std::span<const int64_t> shape, uint64_t bytes);
  // Zero copy: the session reads the input from `data` (64-byte aligned, alive during run()).
  void bind_input(const std::string& name, int32_t dtype, std::span<const int64_t> shape, const void* data,
                  uint64_t bytes);

  // Runs one inference. After the first run, memplan allocates no heap memory (oneDNN 2.6 still
  // allocates a few small blocks inside each primitive execution). Sessions of one model run
  // concurrently; one session runs one call at a time.
  // A sequence input (or an optional sequence holding one): copies each tensor in. Their dtype must
  // be the input's; their shapes may differ. An optional tensor holding a value is set with set_input.
  void set_input_sequence(const std::string& name, std::span<const TensorRef> tensors);
  // An optional input that holds no value.
  void set_input_none(const std::string& name);

  void run();
  // A tensor output, or the tensor an optional output holds (output_has_value() first).
  TensorRef output(const std::string& name) const;
  // A sequence output's tensors, or those of the sequence an optional output holds; valid until the next run.
  std::vector<TensorRef> output_sequence(const std::string& name) const;
  // False only for an optional output that holds no value.
  bool output_has_value(const std::string& name) const;
  // Per compiled node (subgraph nodes included); empty unless SessionOptions::profile was set.
  std::vector<NodeProfile> profile() const;
  void reset_profile();  // start counting again (after warm-up runs)
  // The model's dynamic tensors (allocated outside the arena) and the largest size each took.
  std::vector<DynamicTensorUse> dynamic_tensors() const;
  // Bytes the session holds outside the arena now: its dynamic tensors' buffers (tensors whose
  // lifetimes do not overlap share one, so this is about what was live at once, not their sum) and
  // the tensors of its sequences and optionals.
  uint64_t dynamic_bytes() const;
  // [k]: how many runs so far used k threads. A session of several threads runs on fewer while
  // other processes hold the cores (SessionOptions::adapt_to_load), or where one is faster.
  std::vector<uint64_t> runs_by_threads() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace memplan
