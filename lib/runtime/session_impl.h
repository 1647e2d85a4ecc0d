// A session: one arena, a view per value, and the executor that walks graphs, If/Loop/Scan
// included. Everything it needs during run() is allocated when the session is made.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "memplan/memplan.h"
#include "runtime/compiled_model_impl.h"
#include "runtime/container_value.h"
#include "runtime/dnnl_context.h"
#include "runtime/dynamic_exec.h"
#include "runtime/kernel.h"
#include "runtime/run_threads.h"

namespace memplan {

struct Session::Impl {
  Impl(std::shared_ptr<const CompiledModel> model, SessionOptions options);
  ~Impl();

  void run();
  void run_graph(const Graph& g);
  void run_node(const NodeExec& ne);
  void run_node_timed(const NodeExec& ne);
  void run_node_untimed(const NodeExec& ne);
  void run_if(const NodeExec& ne);
  void run_loop(const NodeExec& ne);
  void run_scan(const NodeExec& ne);
  void run_dynamic(const NodeExec& ne);
  void run_container_op(const NodeExec& ne);  // runtime/container_exec.cpp
  // Copies a tensor into value `id`: a dynamic tensor's buffer grown to fit, or its planned bytes.
  void write_tensor(int32_t id, const rt::TensorView& src, const Node& node, const char* what);
  // Makes a dynamic value's buffer (its slot's, or its own) hold `bytes` (growing it, keeping its
  // contents when `keep`).
  void reserve_dynamic(int32_t id, uint64_t bytes, bool keep);

  // Guard mode (SessionOptions::check_memory).
  void guard_before(const NodeExec& ne);
  void guard_after(const NodeExec& ne);

  void mark_input(const Value* v, bool zero_copy);
  // Where an input set by copy goes: its arena slot, or for an external input the session's own
  // buffer (made on first use, then kept), which its values are pointed at.
  std::byte* input_slot(const Value* v);
  // Points main-graph input k's values at `data`: itself, and with external inputs its views.
  void point_input(size_t k, std::byte* data);
  rt::TensorView& view(int32_t id) { return views[static_cast<size_t>(id)]; }
  // Copies src's bytes and shape into dst (which must have the capacity); names `what` on overflow.
  void copy_into(rt::TensorView& dst, const rt::TensorView& src, const Node& node, const char* what);

  std::shared_ptr<const CompiledModel> owner;
  const CompiledModel::Impl& m;
  SessionOptions options;
  std::byte* arena = nullptr;
  uint64_t arena_bytes = 0;
  std::vector<rt::TensorView> views;        // current view of every value
  // Per NodeExec: what its kernel changes while it runs (oneDNN memories re-pointed at this
  // session's arena); the kernels themselves are the model's, shared and unchanged.
  std::vector<std::unique_ptr<rt::KernelState>> kernel_states;
  dnnl::stream stream;  // this session's: a oneDNN stream is used by one thread at a time
  int run_threads = 1;  // OpenMP threads of each run (run_threads.h)
  std::vector<uint64_t> runs_by_threads;  // [k]: runs that used k threads
  LoadAdaptiveThreads adaptive{1, false};  // one thread while other processes hold the cores
  std::vector<rt::TensorView> in_scratch;   // KernelArgs arrays, reused
  std::vector<rt::TensorView> out_scratch;
  std::vector<uint64_t> checksums;          // guard mode: per value
  std::vector<uint8_t> written;             // guard mode: per value, produced in this run
  // Per main-graph input: 1 when it holds fresh data for the next run. An input's arena slot is
  // reused once it has been read, so a copied input must be set again before each run.
  std::vector<uint8_t> input_ready;
  std::vector<uint8_t> input_bound;  // zero-copy inputs stay valid across runs
  std::vector<std::byte*> input_copies;  // external inputs set by copy: per input, null until then
  // Profiling (SessionOptions::profile): per NodeExec, calls and self time; nested_ns collects the
  // time of the nodes run inside the current control-flow node, to subtract from its own.
  std::vector<uint64_t> profile_calls, profile_ns;
  uint64_t nested_ns = 0;

  // Dynamic tensors (Value::dynamic): their memory, outside the arena, grown as runs need.
  struct DynamicBuffer {
    std::byte* data = nullptr;
    uint64_t capacity = 0;
    uint64_t peak = 0;  // the most bytes any run needed
  };
  std::vector<DynamicBuffer> dynamic_buffers;              // per value id (empty when none)
  std::vector<DynamicBuffer> slot_buffers;  // per CompiledModel::Impl::dynamic_slot (their peak unused)
  std::vector<std::unique_ptr<rt::DynamicNode>> dynamic_nodes;  // per NodeExec index
  std::unique_ptr<rt::DnnlContext> dynamic_dnnl;          // for kernels made at run time
  // Sequences and optionals (Home::Container), per value id; empty for a model without them.
  std::vector<rt::ContainerValue> containers;
  rt::ContainerValue& container(int32_t id) { return containers[static_cast<size_t>(id)]; }
};

}  // namespace memplan
