#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "memplan/error.h"
#include "report/plan_report.h"
#include "runtime/denormals.h"
#include "runtime/free_cores.h"
#include "runtime/session_impl.h"

namespace memplan {

namespace {

constexpr uint64_t kArenaAlignment = 64;

// 64-byte-aligned memory for `bytes` (at least one byte), rounded up to the alignment; null when
// the allocation fails (or the rounding would overflow: the size may come from a plan file).
std::byte* allocate_aligned(uint64_t bytes) {
  if (bytes > UINT64_MAX - kArenaAlignment) return nullptr;
  const uint64_t alloc = (std::max<uint64_t>(bytes, 1) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  return static_cast<std::byte*>(std::aligned_alloc(kArenaAlignment, alloc));
}

const Value* main_input(const CompiledModel::Impl& m, const std::string& name) {
  for (const Value* v : m.model.main->inputs)
    if (v->name == name) return v;
  std::string names;
  for (const Value* v : m.model.main->inputs) names += (names.empty() ? "" : ", ") + v->name;
  fail(m.model.path + ": the model has no input named '" + name + "' (inputs: " + names + ")");
}

size_t input_index(const CompiledModel::Impl& m, const Value* v) {
  const auto& inputs = m.model.main->inputs;
  return static_cast<size_t>(std::find(inputs.begin(), inputs.end(), v) - inputs.begin());
}

// The container input `v` holds, after checking that it is one of `kinds`.
rt::ContainerValue& container_input(Session::Impl& s, const Value* v, std::initializer_list<Container> kinds,
                                    const char* use) {
  if (std::find(kinds.begin(), kinds.end(), v->type.container) == kinds.end())
    fail(s.m.model.path + ": input '" + v->name + "' is " + a_container(v->type.container) + "; " + use);
  s.mark_input(v, false);
  return s.container(s.m.id(v));
}

// An element of a container input: any shape, the input's element type.
rt::TensorView element_view(const CompiledModel::Impl& m, const Value* v, const TensorRef& t) {
  if (t.dtype != static_cast<int32_t>(v->type.dtype) && v->type.dtype != DType::Undefined)
    fail(m.model.path + ": input '" + v->name + "' holds " + dtype_name(v->type.dtype) + " tensors, got " +
         dtype_name(static_cast<DType>(t.dtype)));
  if (t.shape.size() > static_cast<size_t>(rt::kMaxRank))
    fail(m.model.path + ": input '" + v->name + "': a tensor of rank " + std::to_string(t.shape.size()));
  // The element shape the model declares (known dims) holds for every tensor: what reads them
  // was planned for it.
  bool fits = !v->type.has_rank || v->type.dims.size() == t.shape.size();
  for (size_t d = 0; fits && v->type.has_rank && d < t.shape.size(); ++d)
    fits = !v->type.dims[d].known() || v->type.dims[d].value == t.shape[d];
  if (!fits) {
    std::string given = "[";
    for (size_t d = 0; d < t.shape.size(); ++d) given += (d ? ", " : "") + std::to_string(t.shape[d]);
    TensorType element = v->type;
    element.container = Container::None;
    fail(m.model.path + ": input '" + v->name + "' holds tensors of shape " + element.shape_string() + ", got " +
         given + "]");
  }
  rt::TensorView view;
  view.data = static_cast<std::byte*>(const_cast<void*>(t.data));
  view.dtype = static_cast<DType>(t.dtype);
  view.rank = static_cast<int>(t.shape.size());
  std::copy(t.shape.begin(), t.shape.end(), view.dims.begin());
  // Inputs are set before every run: no message is built (allocated) unless it fails.
  uint64_t need = dtype_size(view.dtype);
  bool fits_bytes = true;
  for (int64_t d : t.shape) fits_bytes = fits_bytes && d >= 0 && !__builtin_mul_overflow(need, static_cast<uint64_t>(d), &need);
  if (!fits_bytes || t.bytes != need)
    fail(m.model.path + ": input '" + v->name + "': a tensor of its shape has " +
         (fits_bytes ? std::to_string(need) : std::string("more than 2^64")) + " bytes, got " + std::to_string(t.bytes));
  view.capacity = t.bytes;
  return view;
}

// Allocation-free unless it fails: inputs are set before every run.
void check_input(const CompiledModel::Impl& m, const Value* v, int32_t dtype, std::span<const int64_t> shape,
                 uint64_t bytes) {
  auto what = [&] { return m.model.path + ": input '" + v->name + "'"; };
  if (v->type.is_container()) fail(what() + " is " + a_container(v->type.container) + "; it is copied in, not bound");
  if (dtype != static_cast<int32_t>(v->type.dtype))
    fail(what() + " is " + dtype_name(v->type.dtype) + ", got " + dtype_name(static_cast<DType>(dtype)));
  // A one-element array stands for a scalar input, as ONNX Runtime accepts it.
  // (Every dim 1: a product of caller-given dims could overflow.)
  const bool one_element = std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d == 1; });
  if (v->type.dims.empty() && one_element) shape = {};
  if (shape.size() != v->type.dims.size())
    fail(what() + " has rank " + std::to_string(v->type.dims.size()) + ", got rank " + std::to_string(shape.size()));
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != v->type.dims[d].value)
      fail(what() + " was compiled for shape " + v->type.shape_string() + "; a new shape needs a new plan");
  if (bytes != v->capacity_bytes)
    fail(what() + " needs " + std::to_string(v->capacity_bytes) + " bytes, got " + std::to_string(bytes));
}

// A session's threads: at most what the model's kernels were made for (their scratchpads hold
// per-thread parts for that many).
int session_threads(const CompiledModel::Impl& m, const SessionOptions& o) {
  if (o.threads < 0) fail("SessionOptions::threads must be 0 (the model's) or positive, not " + std::to_string(o.threads));
  if (o.threads > m.threads)
    fail(m.model.path + ": a session of " + std::to_string(o.threads) + " threads, but the model was compiled for " +
         std::to_string(m.threads) + "; compile it with CompileOptions::threads = " + std::to_string(o.threads));
  return o.threads > 0 ? o.threads : m.threads;
}

}  // namespace

Session::Impl::Impl(std::shared_ptr<const CompiledModel> model, SessionOptions opts)
    : owner(std::move(model)), m(owner->impl()), options(opts), stream(m.dnnl->engine) {
  arena_bytes = m.plan.arena_bytes;
  arena = allocate_aligned(arena_bytes);
  if (!arena)
    fail(m.model.path + ": cannot allocate the arena of " + std::to_string(arena_bytes) + " bytes; the peak is at " +
         plan_peak_summary(m.plan));
  // A constructor that throws runs no destructor: if what follows refuses the model (a rank above
  // kMaxRank), the arena is freed on the way out.
  struct FreeOnThrow {
    std::byte*& arena;
    bool constructed = false;
    ~FreeOnThrow() {
      if (!constructed) std::free(std::exchange(arena, nullptr));
    }
  } guard{arena};
  views.resize(m.values.size());
  for (size_t i = 0; i < m.values.size(); ++i) {
    const Value* v = m.values[i];
    rt::TensorView& tv = views[i];
    tv.dtype = v->type.dtype;
    if (v->type.dims.size() > static_cast<size_t>(rt::kMaxRank))
      fail_unsupported(m.model.path + ": tensor '" + v->name + "' has rank " + std::to_string(v->type.dims.size()) +
                       "; memplan supports up to " + std::to_string(rt::kMaxRank));
    tv.rank = static_cast<int>(v->type.dims.size());
    for (int d = 0; d < tv.rank; ++d) tv.dims[d] = std::max<int64_t>(v->type.dims[d].value, 0);
    tv.capacity = m.capacities[i];
    if (m.homes[i] == CompiledModel::Impl::Home::Arena) tv.data = arena + m.offsets[i];
    if (m.homes[i] == CompiledModel::Impl::Home::Weight) tv.data = const_cast<std::byte*>(m.weights[i]);
  }
  if (std::find(m.homes.begin(), m.homes.end(), CompiledModel::Impl::Home::Dynamic) != m.homes.end()) {
    dynamic_buffers.resize(m.values.size());
    slot_buffers.resize(static_cast<size_t>(m.dynamic_slots));
    dynamic_nodes.resize(m.nodes.size());
    dynamic_dnnl = std::make_unique<rt::DnnlContext>();
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (m.nodes[i].dynamic && !m.nodes[i].node->is_control_flow() && !m.nodes[i].container_op)
        dynamic_nodes[i] = std::make_unique<rt::DynamicNode>(*m.nodes[i].node);
  }
  if (std::find(m.homes.begin(), m.homes.end(), CompiledModel::Impl::Home::Container) != m.homes.end())
    containers.resize(m.values.size());
  input_ready.assign(m.model.main->inputs.size(), 0);
  input_bound.assign(m.model.main->inputs.size(), 0);
  input_copies.assign(m.model.main->inputs.size(), nullptr);
  // What the kernels change while they run is this session's: sessions of one model run at once.
  // Made with the session's thread count in effect (a oneDNN kernel made for more threads makes
  // the session a primitive of its own).
  run_threads = session_threads(m, options);
  adaptive = LoadAdaptiveThreads(run_threads, options.adapt_to_load);
  runs_by_threads.assign(static_cast<size_t>(run_threads) + 1, 0);
  kernel_states.resize(m.nodes.size());
  {
    const ThreadScope threads(run_threads);
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (m.nodes[i].kernel) kernel_states[i] = m.nodes[i].kernel->make_state();
  }
  in_scratch.resize(m.max_inputs);
  out_scratch.resize(m.max_outputs);
  if (options.profile) {
    profile_calls.assign(m.nodes.size(), 0);
    profile_ns.assign(m.nodes.size(), 0);
  }
  if (options.check_memory) {
    checksums.assign(m.values.size(), 0);
    written.assign(m.values.size(), 0);
  }
  guard.constructed = true;
}

Session::Impl::~Impl() {
  for (DynamicBuffer& b : dynamic_buffers) std::free(b.data);
  for (DynamicBuffer& b : slot_buffers) std::free(b.data);
  for (std::byte* copy : input_copies) std::free(copy);
  std::free(arena);
}

void Session::Impl::reserve_dynamic(int32_t id, uint64_t bytes, bool keep) {
  DynamicBuffer& own = dynamic_buffers[static_cast<size_t>(id)];
  own.peak = std::max(own.peak, bytes);
  const int32_t slot = m.dynamic_slot[static_cast<size_t>(id)];
  DynamicBuffer& b = slot >= 0 ? slot_buffers[static_cast<size_t>(slot)] : own;
  rt::TensorView& v = view(id);
  if (bytes > b.capacity) {
    // Doubling keeps a growing scan output's copies linear in its final size.
    const uint64_t want = std::max(bytes, b.capacity * 2);
    auto* grown = allocate_aligned(want);
    if (!grown)
      fail(m.model.path + ": dynamic tensor '" + m.values[static_cast<size_t>(id)]->name + "' needs " +
           std::to_string(bytes) + " bytes, which could not be allocated");
    if (keep && b.data) std::memcpy(grown, b.data, b.capacity);
    std::free(b.data);
    b.data = grown;
    b.capacity = want;
  }
  v.data = b.data;
  v.capacity = b.capacity;
}

void Session::Impl::run_dynamic(const NodeExec& ne) {
  const size_t index = static_cast<size_t>(&ne - m.nodes.data());
  rt::DynamicNode& dn = *dynamic_nodes[index];
  const size_t n_in = ne.inputs.size(), n_out = ne.outputs.size();
  for (size_t i = 0; i < n_in; ++i) in_scratch[i] = ne.inputs[i] < 0 ? rt::TensorView{} : view(ne.inputs[i]);
  dn.prepare({in_scratch.data(), n_in}, *dynamic_dnnl, m.model.path);
  for (size_t k = 0; k < n_out; ++k) {
    if (ne.outputs[k] < 0) {
      out_scratch[k] = rt::TensorView{};
      continue;
    }
    const uint64_t need = dn.output_bytes(k);
    if (m.homes[static_cast<size_t>(ne.outputs[k])] == CompiledModel::Impl::Home::Dynamic)
      reserve_dynamic(ne.outputs[k], need, false);
    rt::TensorView& v = view(ne.outputs[k]);
    if (need > v.capacity)
      fail(m.model.path + ": " + ne.node->describe() + ": output '" + ne.node->outputs[k]->name + "' needs " +
           std::to_string(need) + " bytes at run time, its buffer holds " + std::to_string(v.capacity));
    const TensorType& t = dn.output_type(k);
    v.rank = static_cast<int>(t.dims.size());
    for (int d = 0; d < v.rank; ++d) v.dims[d] = std::max<int64_t>(t.dims[static_cast<size_t>(d)].value, 0);
    out_scratch[k] = v;
  }
  dn.kernel().run(rt::KernelArgs{{in_scratch.data(), n_in}, {out_scratch.data(), n_out}, dn.scratchpad(), dn.state(),
                                 dynamic_dnnl->stream.get()});
  for (size_t k = 0; k < n_out; ++k)
    if (ne.outputs[k] >= 0) {
      rt::TensorView& v = view(ne.outputs[k]);
      v.rank = out_scratch[k].rank;
      v.dims = out_scratch[k].dims;
    }
}

void Session::Impl::mark_input(const Value* v, bool zero_copy) {
  const size_t i = input_index(m, v);
  input_ready[i] = 1;
  input_bound[i] = zero_copy ? 1 : 0;
}

void Session::Impl::point_input(size_t k, std::byte* data) {
  const int32_t id = m.id(m.model.main->inputs[k]);
  view(id).data = data;
  for (int32_t member : m.external_members[k]) view(member).data = data + m.offsets[static_cast<size_t>(member)];
}

std::byte* Session::Impl::input_slot(const Value* v) {
  const size_t k = input_index(m, v);
  const auto id = static_cast<size_t>(m.id(v));
  if (m.homes[id] != CompiledModel::Impl::Home::External) {
    point_input(k, arena + m.offsets[id]);
    mark_input(v, false);  // the slot is reused once read
    return arena + m.offsets[id];
  }
  if (!input_copies[k] && !(input_copies[k] = allocate_aligned(m.capacities[id])))
    fail(m.model.path + ": input '" + v->name + "': cannot allocate a copy of " + std::to_string(m.capacities[id]) + " bytes");
  point_input(k, input_copies[k]);
  mark_input(v, true);  // the session's own copy: nothing reuses it
  return input_copies[k];
}

void Session::Impl::run() {
  const auto& inputs = m.model.main->inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!input_ready[i] && !input_bound[i])
      fail(m.model.path + ": input '" + inputs[i]->name +
           "' is not set; set it before each run (its memory is reused once read) or bind it zero-copy");
  const RunInFlight in_flight;
  const int threads = adaptive.next(options.adapt_to_load && run_threads > 1 ? threads_left_free(run_threads) : run_threads);
  const ThreadScope scope(threads);
  const rt::FlushDenormals flush(options.flush_denormals, threads);  // after the scope: the run's team
  adaptive.begin(threads);
  if (options.check_memory) std::fill(written.begin(), written.end(), 0);
  run_graph(*m.model.main);
  adaptive.end();
  ++runs_by_threads[static_cast<size_t>(std::clamp(threads, 0, run_threads))];
  std::fill(input_ready.begin(), input_ready.end(), 0);
}

void Session::Impl::run_graph(const Graph& g) {
  const GraphExec& ge = m.graphs.at(&g);
  for (int32_t index : ge.nodes) run_node(m.nodes[static_cast<size_t>(index)]);
}

void Session::Impl::run_node(const NodeExec& ne) {
  if (options.profile) run_node_timed(ne);
  else run_node_untimed(ne);
}

void Session::Impl::run_node_timed(const NodeExec& ne) {
  const uint64_t outer = nested_ns;
  nested_ns = 0;
  const auto t0 = std::chrono::steady_clock::now();
  run_node_untimed(ne);
  const auto dt = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  const size_t i = static_cast<size_t>(&ne - m.nodes.data());
  profile_calls[i] += 1;
  profile_ns[i] += dt - std::min(dt, nested_ns);
  nested_ns = outer + dt;
}

void Session::Impl::run_node_untimed(const NodeExec& ne) {
  if (options.check_memory) guard_before(ne);
  if (ne.container_op) {
    run_container_op(ne);
  } else if (ne.dynamic && !ne.node->is_control_flow()) {
    run_dynamic(ne);
  } else if (!ne.kernel) {
    const std::string& op = ne.node->op_type;
    if (op == "If") run_if(ne);
    else if (op == "Loop") run_loop(ne);
    else run_scan(ne);
  } else {
    const size_t n_in = ne.inputs.size(), n_out = ne.outputs.size();
    for (size_t i = 0; i < n_in; ++i) in_scratch[i] = ne.inputs[i] < 0 ? rt::TensorView{} : view(ne.inputs[i]);
    for (size_t i = 0; i < n_out; ++i) out_scratch[i] = ne.outputs[i] < 0 ? rt::TensorView{} : view(ne.outputs[i]);
    const size_t index = static_cast<size_t>(&ne - m.nodes.data());
    rt::KernelArgs args{{in_scratch.data(), n_in}, {out_scratch.data(), n_out}, arena + ne.scratchpad_offset,
                        kernel_states[index].get(), stream.get()};
    ne.kernel->run(args);
    for (size_t i = 0; i < n_out; ++i)
      if (ne.outputs[i] >= 0) {
        rt::TensorView& v = view(ne.outputs[i]);
        v.rank = out_scratch[i].rank;
        v.dims = out_scratch[i].dims;
      }
  }
  if (options.check_memory) guard_after(ne);
}

Session::Session(std::shared_ptr<const CompiledModel> model, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), options)) {}
Session::~Session() = default;

void Session::set_input(const std::string& name, int32_t dtype, std::span<const int64_t> shape, const void* data,
                        uint64_t bytes) {
  const Value* v = main_input(impl_->m, name);
  if (v->type.is_container()) {  // an optional tensor that holds this one
    const rt::TensorView element = element_view(impl_->m, v, TensorRef{dtype, shape, data, bytes});
    rt::ContainerValue& c = container_input(*impl_, v, {Container::Optional}, "set it with set_input_sequence");
    c.clear();
    c.push_back(element);
    return;
  }
  check_input(impl_->m, v, dtype, shape, bytes);
  std::byte* slot = impl_->input_slot(v);
  if (bytes) std::memcpy(slot, data, bytes);
}

void* Session::input_buffer(const std::string& name, int32_t dtype, std::span<const int64_t> shape, uint64_t bytes) {
  const Value* v = main_input(impl_->m, name);
  check_input(impl_->m, v, dtype, shape, bytes);
  return impl_->input_slot(v);
}

void Session::bind_input(const std::string& name, int32_t dtype, std::span<const int64_t> shape, const void* data,
                         uint64_t bytes) {
  const Value* v = main_input(impl_->m, name);
  check_input(impl_->m, v, dtype, shape, bytes);
  if (reinterpret_cast<uintptr_t>(data) % kArenaAlignment != 0)
    fail(impl_->m.model.path + ": input '" + name + "': a zero-copy buffer must be 64-byte aligned");
  impl_->point_input(input_index(impl_->m, v), static_cast<std::byte*>(const_cast<void*>(data)));
  impl_->mark_input(v, true);
}

void Session::set_input_sequence(const std::string& name, std::span<const TensorRef> tensors) {
  const Value* v = main_input(impl_->m, name);
  // Every tensor is checked before the input changes: a refused list leaves no half-set input.
  for (const TensorRef& t : tensors) element_view(impl_->m, v, t);
  rt::ContainerValue& c = container_input(*impl_, v, {Container::Sequence, Container::OptionalSequence},
                                          "set it with set_input");
  c.clear();
  for (const TensorRef& t : tensors) c.push_back(element_view(impl_->m, v, t));
}

void Session::set_input_none(const std::string& name) {
  const Value* v = main_input(impl_->m, name);
  rt::ContainerValue& c = container_input(*impl_, v, {Container::Optional, Container::OptionalSequence},
                                          "only an optional input may hold no value");
  c.clear();
  c.present = false;
}

void Session::run() { impl_->run(); }

namespace {

const Value* main_output(const CompiledModel::Impl& m, const std::string& name) {
  for (const Value* v : m.model.main->outputs)
    if (v->name == name) return v;
  fail(m.model.path + ": the model has no output named '" + name + "'");
}

TensorRef ref_of(const rt::TensorView& tv) { return {static_cast<int32_t>(tv.dtype), tv.shape(), tv.data, tv.byte_size()}; }

}  // namespace

TensorRef Session::output(const std::string& name) const {
  const Value* v = main_output(impl_->m, name);
  const int32_t id = impl_->m.id(v);
  if (!v->type.is_container()) return ref_of(impl_->views[static_cast<size_t>(id)]);
  if (v->type.holds_sequence())
    fail(impl_->m.model.path + ": output '" + name + "' is " + a_container(v->type.container) + "; read it with output_sequence");
  const rt::ContainerValue& c = impl_->container(id);
  if (!c.present || c.size() == 0) fail(impl_->m.model.path + ": optional output '" + name + "' holds no value");
  return ref_of(c.at(0));
}

std::vector<TensorRef> Session::output_sequence(const std::string& name) const {
  const Value* v = main_output(impl_->m, name);
  if (!v->type.holds_sequence())
    fail(impl_->m.model.path + ": output '" + name + "' is " + a_container(v->type.container) + ", not a sequence");
  const rt::ContainerValue& c = impl_->container(impl_->m.id(v));
  if (!c.present) fail(impl_->m.model.path + ": optional output '" + name + "' holds no value");
  std::vector<TensorRef> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back(ref_of(c.at(i)));
  return out;
}

bool Session::output_has_value(const std::string& name) const {
  const Value* v = main_output(impl_->m, name);
  return !v->type.is_container() || impl_->container(impl_->m.id(v)).present;
}

uint64_t Session::dynamic_bytes() const {
  uint64_t total = 0;
  for (const auto& b : impl_->dynamic_buffers) total += b.capacity;
  for (const auto& b : impl_->slot_buffers) total += b.capacity;
  for (const auto& c : impl_->containers) total += c.bytes_held();
  return total;
}

std::vector<DynamicTensorUse> Session::dynamic_tensors() const {
  std::vector<DynamicTensorUse> out;
  for (size_t i = 0; i < impl_->dynamic_buffers.size(); ++i)
    if (impl_->m.homes[i] == CompiledModel::Impl::Home::Dynamic)
      out.push_back({impl_->m.values[i]->name, impl_->dynamic_buffers[i].peak});
  return out;
}

std::vector<uint64_t> Session::runs_by_threads() const { return impl_->runs_by_threads; }

void Session::reset_profile() {
  std::fill(impl_->profile_calls.begin(), impl_->profile_calls.end(), 0);
  std::fill(impl_->profile_ns.begin(), impl_->profile_ns.end(), 0);
}

std::vector<NodeProfile> Session::profile() const {
  std::vector<NodeProfile> out;
  const auto& m = impl_->m;
  for (size_t i = 0; i < impl_->profile_calls.size(); ++i) {
    const Node& n = *m.nodes[i].node;
    std::string graph = "main";
    if (n.graph && n.graph->owner) {
      graph.clear();
      for (const Graph* g = n.graph; g && g->owner; g = g->parent)
        graph = g->owner->name + "/" + g->owner_attribute + (graph.empty() ? "" : "/" + graph);
    }
    const NodeExec& ne = m.nodes[i];
    const std::string implementation = ne.kernel ? ne.kernel->implementation() : ne.dynamic ? "made at run time" : "control flow";
    out.push_back({n.name.empty() ? n.op_type + "#" + std::to_string(i) : n.name, n.op_type, graph,
                   impl_->profile_calls[i], static_cast<double>(impl_->profile_ns[i]) / 1e6, implementation});
  }
  return out;
}

}  // namespace memplan
