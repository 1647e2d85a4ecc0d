#include <spdlog/spdlog.h>

#include <map>

#include "ir/container_ops.h"
#include "memplan/error.h"
#include "onnx/importer.h"
#include "pipeline/compile_pipeline.h"
#include "pipeline/lean_kernels.h"
#include "plan/lifetimes.h"
#include "plan/plan_file.h"
#include "report/plan_report.h"
#include "runtime/compiled_model_impl.h"
#include "runtime/free_cores.h"
#include "runtime/run_threads.h"
#include "runtime/kernel_selection.h"
#include "shapes/shape_inference.h"
#include "util/freed_memory.h"

namespace memplan {
namespace {

ShapeOptions shape_options(const CompileOptions& o) { return {o.input_shapes, o.dims, o.bounds, o.static_only}; }

static_assert(static_cast<int>(ValueKind::OptionalSequence) == static_cast<int>(Container::OptionalSequence));

TensorInfo info_of(const Value* v) {
  TensorInfo t;
  t.kind = static_cast<ValueKind>(v->type.container);  // the same four, in the same order
  t.name = v->name;
  t.dtype = static_cast<int32_t>(v->type.dtype);
  for (const Dim& d : v->type.dims) {
    t.shape.push_back(d.value);
    t.dim_names.push_back(d.known() ? std::string() : d.symbol);
  }
  t.ranked = v->type.has_rank;
  t.capacity_bytes = v->constant ? v->constant->byte_size() : v->capacity_bytes;
  return t;
}

// The run-time view of every constant: splats are expanded once; constants no one reads at run
// time (select_kernels released them) get none.
void bind_weights(CompiledModel::Impl& m, const KernelSelection& sel) {
  std::vector<size_t> splats;
  for (size_t i = 0; i < m.values.size(); ++i) {
    const Value* v = m.values[i];
    if (!v->constant || sel.released.count(v)) continue;
    if (v->constant->splat) {
      splats.push_back(i);
      try {
        m.materialized.push_back(v->constant->materialize());
      } catch (const std::bad_alloc&) {
        fail(m.model.path + ": cannot allocate the " + std::to_string(v->constant->byte_size()) + " bytes of constant '" +
             v->name + "' (a ConstantOfShape splat)");
      }
    } else {
      m.weights[i] = v->constant->bytes.data();
    }
  }
  for (size_t k = 0; k < splats.size(); ++k) m.weights[splats[k]] = m.materialized[k].data();
}

// Slots for the dynamic tensors made by g's nodes, by lifetime (first fit, in the order they are
// made): a value lives from its producer's step to its last reader's (a node whose subgraphs
// read it included), and takes a slot whose last value died at an earlier step. Graph outputs and
// subgraph inputs (a Loop's carried values, handed from iteration to iteration) keep buffers of
// their own. The session grows a slot to the largest value it holds: a chain of run-time-sized
// tensors (a detector's per-box ops) costs what is live at once, not the sum of them all.
void assign_dynamic_slots(CompiledModel::Impl& m, const Graph& g, const GraphExec& ge) {
  std::unordered_map<const Node*, int32_t> step;
  for (size_t s = 0; s < ge.nodes.size(); ++s) step[m.nodes[static_cast<size_t>(ge.nodes[s])].node] = static_cast<int32_t>(s);
  struct Life {
    int32_t id, first, last;
  };
  std::vector<Life> lives;
  for (const auto& v : g.values) {
    if (!v->dynamic || v->type.is_container() || !v->producer || v->is_graph_output) continue;
    Life l{m.id(v.get()), step.at(v->producer), step.at(v->producer)};
    for (const Node* c : v->consumers)
      if (auto it = step.find(c); it != step.end()) l.last = std::max(l.last, it->second);
    lives.push_back(l);
  }
  std::stable_sort(lives.begin(), lives.end(), [](const Life& a, const Life& b) { return a.first < b.first; });
  std::vector<int32_t> busy_until;  // per slot of this graph: the last step of its latest value
  const int32_t base = m.dynamic_slots;
  for (const Life& l : lives) {
    size_t k = 0;
    while (k < busy_until.size() && busy_until[k] >= l.first) ++k;
    if (k == busy_until.size()) busy_until.push_back(l.last);
    else busy_until[k] = l.last;
    m.dynamic_slot[static_cast<size_t>(l.id)] = base + static_cast<int32_t>(k);
  }
  m.dynamic_slots = base + static_cast<int32_t>(busy_until.size());
}

// Value ids, weights and per-node execution records; kernels from the selection.
void build_exec(CompiledModel::Impl& m, KernelSelection& sel) {
  for_each_graph(*m.model.main, [&](Graph& g) {
    for (const auto& v : g.values) {
      const auto id = static_cast<int32_t>(m.values.size());
      m.ids.emplace(v.get(), id);
      m.values.push_back(v.get());
      m.homes.push_back(CompiledModel::Impl::Home::None);
      m.offsets.push_back(0);
      m.capacities.push_back(v->capacity_bytes);
      m.dynamic_slot.push_back(-1);
      m.in_if_output.push_back(0);
      m.sharing.emplace_back();
      m.weights.push_back(nullptr);
      if (v->constant) {
        m.homes.back() = CompiledModel::Impl::Home::Weight;
        m.capacities.back() = v->constant->byte_size();
      }
      if (v->dynamic) m.homes.back() = CompiledModel::Impl::Home::Dynamic;
      if (v->type.is_container()) m.homes.back() = CompiledModel::Impl::Home::Container;
    }
  });

  for_each_graph(*m.model.main, [&](Graph& g) {
    GraphExec& ge = m.graphs[&g];
    ge.graph = &g;
    for (const auto& n : g.nodes) {
      NodeExec ne;
      ne.node = n.get();
      ne.dynamic = n->touches_dynamic();
      ne.container_op = is_container_op(*n);
      if (n->is_control_flow()) ne.ports.emplace(*n);
      for (const Value* v : n->inputs) ne.inputs.push_back(m.id(v));
      for (const Value* v : n->outputs) ne.outputs.push_back(m.id(v));
      if (auto it = sel.kernels.find(n.get()); it != sel.kernels.end()) ne.kernel = std::move(it->second);
      m.max_inputs = std::max(m.max_inputs, ne.inputs.size());
      m.max_outputs = std::max(m.max_outputs, ne.outputs.size());
      const auto index = static_cast<int32_t>(m.nodes.size());
      m.node_index[n.get()] = index;
      ge.nodes.push_back(index);
      m.nodes.push_back(std::move(ne));
    }
    for (const Value* out : g.outputs) ge.outputs_bound.push_back(plan::is_bound_output(g, out) ? 1 : 0);
    assign_dynamic_slots(m, g, ge);
  });
  bind_weights(m, sel);
  for (const Value* v : m.model.main->inputs) m.inputs.push_back(info_of(v));
  for (const Value* v : m.model.main->outputs) m.outputs.push_back(info_of(v));
}

// Per main-graph input, the values in the caller's bytes: the input and its views (the verifier
// has checked that only these are external); none for an input in the arena.
std::vector<std::vector<int32_t>> external_members_of(const CompiledModel::Impl& m, const Graph& main,
                                                      const GraphPlan& gp) {
  std::vector<std::vector<int32_t>> out(main.inputs.size());
  for (size_t k = 0; k < main.inputs.size(); ++k) {
    const int32_t id = m.id(main.inputs[k]);
    if (m.homes[static_cast<size_t>(id)] != CompiledModel::Impl::Home::External) continue;
    out[k].push_back(id);
    for (const PlannedBuffer& b : gp.buffers)
      if (b.external && b.group >= 0 &&
          main.values[static_cast<size_t>(gp.buffers[static_cast<size_t>(b.group)].value)].get() == main.inputs[k])
        out[k].push_back(m.id(main.values[static_cast<size_t>(b.value)].get()));
  }
  return out;
}

// Arena offsets and loop slots from the (verified) plan: buffers name values by their index in
// their graph and nodes by their step.
void bind_plan(CompiledModel::Impl& m) {
  std::vector<const Graph*> graphs;
  for_each_graph(*m.model.main, [&](Graph& g) { graphs.push_back(&g); });
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const Graph& g = *graphs[gi];
    const GraphPlan& gp = m.plan.graphs[gi];
    auto node_at = [&](int32_t step) -> NodeExec& {
      return m.nodes[static_cast<size_t>(m.node_index.at(g.nodes[static_cast<size_t>(step)].get()))];
    };
    std::map<int32_t, std::vector<int32_t>> groups;  // root buffer -> value ids
    for (size_t i = 0; i < gp.buffers.size(); ++i) {
      const PlannedBuffer& b = gp.buffers[i];
      if (b.kind == BufferKind::Tensor && (b.group >= 0 || b.alias == AliasKind::None))
        groups[b.group >= 0 ? b.group : static_cast<int32_t>(i)].push_back(m.id(g.values[static_cast<size_t>(b.value)].get()));
    }
    for (const auto& [root, ids] : groups)
      if (ids.size() > 1)
        for (int32_t id : ids) m.sharing[static_cast<size_t>(id)] = ids;
    for (const PlannedBuffer& b : gp.buffers) {
      const uint64_t at = gp.base_offset + b.offset;
      if (b.kind == BufferKind::Tensor && b.bound_output >= 0) {
        const int32_t id = m.id(g.values[static_cast<size_t>(b.value)].get());
        m.graphs.at(&g).in_if_outputs.push_back({id, static_cast<size_t>(b.bound_output), b.offset});
        m.in_if_output[static_cast<size_t>(id)] = 1;
      } else if (b.kind == BufferKind::Tensor && b.external) {
        const int32_t id = m.id(g.values[static_cast<size_t>(b.value)].get());
        m.homes[static_cast<size_t>(id)] = CompiledModel::Impl::Home::External;
        m.offsets[static_cast<size_t>(id)] = b.offset;
      } else if (b.kind == BufferKind::Tensor) {
        const int32_t id = m.id(g.values[static_cast<size_t>(b.value)].get());
        m.homes[static_cast<size_t>(id)] = CompiledModel::Impl::Home::Arena;
        m.offsets[static_cast<size_t>(id)] = at;
      } else if (b.kind == BufferKind::Scratchpad) {
        node_at(b.node).scratchpad_offset = at;
      }
    }
    if (gi == 0) m.external_members = external_members_of(m, g, gp);
    for (const Region& r : gp.regions) {
      const uint64_t base = gp.base_offset + gp.buffers[static_cast<size_t>(r.buffer)].offset;
      NodeExec& ne = node_at(r.step);
      ne.slots.assign(r.carried.size(), {});
      const ControlFlowPorts ports(*ne.node);
      for (const CarriedSlots& c : r.carried) {
        // A Loop's carried value j is its output j.
        const Port p = ports.body_input(ports.body_input_of_slot(c.slot));
        const int32_t in_output = c.home == SlotHome::NodeOutput ? static_cast<int32_t>(p.index) : -1;
        ne.slots[static_cast<size_t>(c.slot)] = {{base + c.slot0, base + c.slot1}, c.size, in_output};
      }
    }
  }
}

}  // namespace

CompiledModel::CompiledModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModel::~CompiledModel() = default;

struct CompiledModelAccess {
  static std::shared_ptr<const CompiledModel> make(std::unique_ptr<CompiledModel::Impl> impl) {
    return std::shared_ptr<const CompiledModel>(new CompiledModel(std::move(impl)));
  }
};

namespace {

void check_threads(int threads) {
  if (threads < 0) fail("threads must be 0 (choose) or positive, not " + std::to_string(threads));
}

}  // namespace

std::shared_ptr<const CompiledModel> finish_compilation(Compilation c) {
  auto impl = std::make_unique<CompiledModel::Impl>();
  impl->dnnl = std::move(c.dnnl);
  impl->threads = impl->dnnl->threads;
  impl->model = std::move(c.model);
  impl->plan = std::move(c.plan);
  build_exec(*impl, c.kernels);
  bind_plan(*impl);
  rt::release_cached_primitives();
  return_free_heap_pages();
  return CompiledModelAccess::make(std::move(impl));
}

std::shared_ptr<const CompiledModel> CompiledModel::compile(const std::string& path, const CompileOptions& o) {
  FreeCores::process();  // its first window of the machine's load spans the compile
  PlanOptions planning;
  auto strategy = plan::parse_strategy(o.strategy);
  if (!strategy) fail("unknown strategy '" + o.strategy + "'");
  planning.strategy = *strategy;
  planning.alignment = o.alignment;
  planning.share_storage = o.share_storage;
  const auto prefer = parse_preference(o.prefer);
  if (!prefer) fail("unknown preference '" + o.prefer + "' (balanced, memory or speed)");
  planning.prefer = *prefer;
  planning.tuning_seconds = o.tuning_seconds;
  planning.max_arena = o.max_arena;
  planning.external_inputs = o.external_inputs;
  planning.fail_on_reference_kernels = o.fail_on_reference_kernels;
  check_threads(o.threads);
  const RequestedThreads threads(o.threads);
  return finish_compilation(compile_model(path, shape_options(o), planning));
}

std::shared_ptr<const CompiledModel> CompiledModel::load(const std::string& model_path, const std::string& plan_path,
                                                         int threads) {
  FreeCores::process();
  check_threads(threads);
  if (threads > 0) {
    // Kernels made for the session's count, where the plan has room for their scratchpads (a
    // count below the plan's rarely needs more); else for the count the plan was made with, as
    // a plan is loaded without one, and the session makes primitives for its own count beside.
    try {
      const RequestedThreads requested(threads);
      return finish_compilation(load_compilation(model_path, read_plan_file(plan_path), plan_path));
    } catch (const ScratchpadMisfit& e) {
      spdlog::debug("{} at {} threads: made for the plan's count instead", e.what(), threads);
    }
  }
  return finish_compilation(load_compilation(model_path, read_plan_file(plan_path), plan_path));
}

std::vector<TensorInfo> model_inputs(const std::string& model_path) { return declared_model(model_path).inputs; }

ModelDeclaration declared_model(const std::string& model_path) {
  Model model = import_model(model_path);
  ModelDeclaration out;
  for (const Value* v : model.main->inputs) out.inputs.push_back(info_of(v));
  for (const Value* v : model.main->outputs) out.outputs.push_back(info_of(v));
  const FileMetadata& m = model.metadata;
  out.metadata = {m.producer_name, m.producer_version, m.domain, m.description, m.graph_name, m.graph_description,
                  m.version, m.custom};
  return out;
}

const std::vector<TensorInfo>& CompiledModel::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& CompiledModel::outputs() const { return impl_->outputs; }
uint64_t CompiledModel::arena_bytes() const { return impl_->plan.arena_bytes; }
bool CompiledModel::external_inputs() const { return impl_->plan.external_inputs; }
int CompiledModel::threads() const { return impl_->threads; }
void CompiledModel::save_plan(const std::string& path) const { write_plan_file(impl_->plan, path); }
std::string CompiledModel::report_text() const { return plan_report_text(impl_->plan); }

std::vector<NodeKernel> CompiledModel::kernels() const {
  std::vector<NodeKernel> out;
  for (const KernelImplementation& k : impl_->plan.kernels)
    out.push_back({k.node, k.graph, k.implementation, is_reference_implementation(k.implementation)});
  return out;
}
std::string CompiledModel::report_json(const std::string& extra) const { return plan_report_json(impl_->plan, extra); }

}  // namespace memplan
