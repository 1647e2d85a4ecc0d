#include "pipeline/compile_pipeline.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "ir/control_flow_ports.h"
#include "memplan/error.h"
#include "onnx/importer.h"
#include "onnx/opset_adapter.h"
#include "passes/assign_layouts.h"
#include "passes/canonical_activations.h"
#include "passes/channel_shuffle.h"
#include "passes/drop_noops.h"
#include "passes/expand_functions.h"
#include "passes/float16_in_float32.h"
#include "passes/fold_transposes.h"
#include "passes/fuse_conv.h"
#include "passes/fuse_quantized.h"
#include "passes/inline_if.h"
#include "passes/int8_layouts.h"
#include "passes/patch_regions.h"
#include "passes/winograd_convs.h"
#include "pipeline/lean_kernels.h"
#include "pipeline/patch_search.h"
#include "plan/verifier.h"
#include "report/plan_report.h"
#include "runtime/constant_evaluator.h"
#include "runtime/kernels/dnnl/winograd.h"
#include "runtime/kernels/quantized/dnnl_qconv.h"
#include "util/freed_memory.h"

namespace memplan {
namespace {

// A plan can be valid and still not fit this machine: say so when it is made, not only when a
// session fails to allocate it.
void warn_if_larger_than_memory(const MemoryPlan& plan) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;
  const auto memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  if (plan.arena_bytes > memory)
    spdlog::warn("{}: the arena needs {} bytes, more than this machine's {} bytes of memory; the peak is at {}",
                 plan.model_path, plan.arena_bytes, memory, plan_peak_summary(plan));
}

void select(Compilation& c, OnUnsupported unsupported) {
  c.kernels = select_kernels(c.model, *c.dnnl);
  if (c.kernels.unsupported.empty()) return;
  const std::string what = c.model.path + ": memplan cannot run this model: " + c.kernels.unsupported_summary();
  if (unsupported == OnUnsupported::Fail) fail_unsupported(what);
  spdlog::warn("{}", what);
}

// The plan must have room for each kernel's scratchpad as chosen on this machine: a scratchpad
// buffer of the node's graph at the node's step (another ISA may choose larger ones).
void check_scratchpads(const Compilation& c, const std::string& plan_path) {
  std::unordered_map<const Graph*, size_t> graph_index;
  for_each_graph(*c.model.main, [&](Graph& g) { graph_index.emplace(&g, graph_index.size()); });
  for (const auto& [node, kernel] : c.kernels.kernels) {
    const uint64_t need = kernel->scratchpad_bytes();
    if (need == 0) continue;
    const auto& nodes = node->graph->nodes;
    const auto step = std::find_if(nodes.begin(), nodes.end(), [n = node](const auto& p) { return p.get() == n; }) - nodes.begin();
    bool found = false;
    for (const PlannedBuffer& b : c.plan.graphs[graph_index.at(node->graph)].buffers)
      found = found || (b.kind == BufferKind::Scratchpad && b.node == step && b.size >= need);
    if (!found)
      throw ScratchpadMisfit(ErrorKind::InvalidInput, plan_path + ": the plan has no room for the scratchpad of " +
                                                   node->describe() + " (made on another machine or version?); compile it again");
  }
}

// Every buffer that shares its group's bytes is made by a kernel that, on this machine, can do
// so: a view for a view, in place over an input of that group for an in-place output.
void check_aliases(const Compilation& c, const std::string& plan_path) {
  size_t gi = 0;
  for_each_graph(*c.model.main, [&](Graph& g) {
    const GraphPlan& gp = c.plan.graphs[gi++];
    std::unordered_map<const Value*, int32_t> group_of;  // value -> its group's root buffer
    for (size_t i = 0; i < gp.buffers.size(); ++i) {
      const PlannedBuffer& b = gp.buffers[i];
      if (b.kind == BufferKind::Tensor)
        group_of[g.values[static_cast<size_t>(b.value)].get()] = b.group >= 0 ? b.group : static_cast<int32_t>(i);
    }
    for (const PlannedBuffer& b : gp.buffers) {
      if (b.alias == AliasKind::None) continue;
      const Node& n = *g.nodes[static_cast<size_t>(b.node)];
      const plan::NodeAliasing a = c.kernels.aliasing(n);
      const auto concat_kernel = [&](const Node* k) { return k->op_type == "Concat" && c.kernels.aliasing(*k).concat; };
      bool ok = (b.alias == AliasKind::View && a.view_of >= 0) || (b.alias == AliasKind::Concat && concat_kernel(&n));
      if (b.alias == AliasKind::ConcatSlice) {
        const Value* v = g.values[static_cast<size_t>(b.value)].get();
        ok = std::any_of(v->consumers.begin(), v->consumers.end(), concat_kernel);
      }
      for (size_t i : a.in_place) {
        auto it = group_of.find(n.inputs[i]);
        ok = ok || (b.alias == AliasKind::InPlace && it != group_of.end() && it->second == b.group);
      }
      if (!ok)
        fail(plan_path + ": the plan writes '" + b.name + "' over the bytes of an input of " + n.describe() +
             ", which its kernel on this machine cannot do; compile it again");
    }
    // A group in an If output's bytes: the node writing the branch output over it can do so here
    // (the verifier has checked that it reads one member, last).
    for (const PlannedBuffer& b : gp.buffers) {
      if (b.bound_output < 0 || b.group >= 0 || static_cast<size_t>(b.bound_output) >= g.outputs.size()) continue;
      const Node* w = g.outputs[static_cast<size_t>(b.bound_output)]->producer;
      const plan::NodeAliasing a = w ? c.kernels.aliasing(*w) : plan::NodeAliasing{};
      const bool ok = w && std::any_of(a.in_place.begin(), a.in_place.end(), [&](size_t i) {
        auto it = i < w->inputs.size() ? group_of.find(w->inputs[i]) : group_of.end();
        return it != group_of.end() && static_cast<size_t>(it->second) == static_cast<size_t>(&b - gp.buffers.data());
      });
      if (!ok)
        fail(plan_path + ": the plan writes '" + g.outputs[static_cast<size_t>(b.bound_output)]->name +
             "' over the bytes of an input, which its kernel on this machine cannot do; compile it again");
    }
    // Loop state in place (the verifier has checked steps, slots and readers against the IR, and
    // the writer of every slot in the arena; a dynamic value's slot it does not check, so the
    // indices of the plan file are checked here before they are used).
    for (const Region& r : gp.regions)
      for (const CarriedSlots& cs : r.carried) {
        if (cs.writer < 0) continue;
        const Graph* body = r.step >= 0 && static_cast<size_t>(r.step) < g.nodes.size()
                                ? g.nodes[static_cast<size_t>(r.step)]->subgraph("body")
                                : nullptr;
        if (!body || static_cast<size_t>(cs.writer) >= body->nodes.size())
          fail(plan_path + ": the plan names a loop-state writer (step " + std::to_string(cs.writer) +
               ") that the model's Loop at step " + std::to_string(r.step) + " does not have; compile it again");
        const Node& w = *body->nodes[static_cast<size_t>(cs.writer)];
        const Value* in = body->inputs[ControlFlowPorts(*body->owner).body_input_of_slot(cs.slot)];
        if (!c.kernels.aliasing(w).may_write_over(w, in))
          fail(plan_path + ": the plan updates loop state '" + in->name + "' in place in " + w.describe() +
               ", which its kernel on this machine cannot do; compile it again");
      }
  });
}

// A budget for the arena: leaner kernels wherever they help, whatever their time.
void lean_for_budget(Compilation& c, const PlanOptions& planning) {
  if (planning.max_arena == 0 || c.plan.arena_bytes <= planning.max_arena) return;
  if (planning.prefer != KernelPreference::Memory) choose_lean_kernels(c, planning, KernelPreference::Memory);
}

// One pass to a plan: the model prepared (with `patches`, in plain layouts or not), its kernels,
// the plan, the leaner kernels the preference (and the budget) take.
Compilation plan_model(const std::string& path, const ShapeOptions& shapes, PlanOptions planning, OnUnsupported unsupported,
                       const std::vector<PatchRegion>& patches, bool plain_layouts) {
  Compilation c{std::make_unique<rt::DnnlContext>(), prepare_model(path, shapes, patches, plain_layouts), {}, {}, {}};
  std::vector<WinogradConv> winograd = choose_winograd_convs(c.model, planning.prefer, [&c](const Node& n) {
    const auto k = rt::dnnl_kernels::probe_winograd(n, rt::KernelEnv{c.dnnl.get(), c.model.path}, 0);
    return k ? std::optional<WinogradCandidate>({{n.name, k->tile, k->added_bytes, 0}, k->scratchpad_bytes, 0})
             : std::nullopt;
  });
  // Kernels come before the plan, so the plan holds each kernel's real scratchpad.
  select(c, unsupported);
  planning.scratchpad_bytes = [&c](const Node& n) { return c.kernels.scratchpad_bytes(n); };
  if (planning.share_storage) planning.aliasing = [&c](const Node& n) { return c.kernels.aliasing(n); };
  c.plan = plan_memory(c.model, planning);
  // Before the kernels are timed (their first runs fault in pages of code and data, their
  // tensors take a mapping of their own): the one-off weight reorders oneDNN's cache holds and the
  // heap's holes go back to the system, or the timing's pages come on top of them and set the
  // process's peak (the Paddle classifier's compile-included run: 0.34 MB lower, below ONNX
  // Runtime's).
  rt::release_cached_primitives();
  return_free_heap_pages();
  choose_faster_variants(c, planning, planning.prefer);
  choose_lean_kernels(c, planning, planning.prefer);
  lean_for_budget(c, planning);
  c.plan.patch_regions = patch_region_costs(*c.model.main, patches, c.model.path);
  c.plan.winograd_convs = std::move(winograd);
  c.plan.plain_layouts = plain_layouts;
  return c;
}

// Under --prefer memory the layouts are a choice too. oneDNN's blocked and channels-last kernels
// are the fast ones, but where a tensor's layout is not the one its reader or writer takes, the
// kernel copies it (a plain graph input copied blocked for the Conv that reads it, a channels-last
// tensor copied plain for the GEMM that writes a plain output), and the copy is in the arena;
// plain tensors run their convolutions on GEMM and copy nothing. Which arena is smaller depends on
// the model (the Paddle hard-swish pattern: 491,520 bytes with the layouts, 344,064 plain;
// ResNet-50: 5.2 MB with them, 6.4 MB plain), so the model is planned plain first, for its arena
// only, then with the layouts, kept at a tie (they run faster); plain is planned again only where
// it was smaller. One compilation lives at a time: the weights are held once. `with_layouts`
// keeps the compilation with the layouts where it is the one to keep.
struct LayoutChoice {
  bool plain = false;
  uint64_t other_arena = 0;  // the arena of the choice not taken
};
LayoutChoice choose_layouts(const std::string& path, const ShapeOptions& shapes, const PlanOptions& planning,
                            OnUnsupported unsupported, std::optional<Compilation>& with_layouts) {
  std::optional<uint64_t> plain_arena;
  try {
    // A model memplan cannot run whole is not tried plain: the compilation that is kept warns.
    plain_arena = plan_model(path, shapes, planning, OnUnsupported::Fail, planning.patch_regions, true).plan.arena_bytes;
  } catch (const Error& e) {
    spdlog::debug("{}: not planned in plain layouts ({})", path, e.what());
  }
  // The trial's kernels stay in oneDNN's primitive cache and its frees in the heap's holes: both
  // would add to the next compilation's peak.
  rt::release_cached_primitives();
  return_free_heap_pages();
  with_layouts.emplace(plan_model(path, shapes, planning, unsupported, planning.patch_regions, false));
  const uint64_t layouts_arena = with_layouts->plan.arena_bytes;
  if (!plain_arena) return {};
  spdlog::debug("{}: the arena is {} bytes with oneDNN's layouts, {} plain", path, layouts_arena, *plain_arena);
  if (*plain_arena >= layouts_arena) return {false, *plain_arena};
  with_layouts.reset();  // before the plain one is made again
  rt::release_cached_primitives();
  return_free_heap_pages();
  return {true, layouts_arena};
}

// What runs each node, graph by graph in the plan's order, for the report.
std::vector<KernelImplementation> kernel_implementations(const Compilation& c) {
  std::vector<KernelImplementation> out;
  size_t gi = 0;
  for_each_graph(*c.model.main, [&](Graph& g) {
    const std::string& path = c.plan.graphs.at(gi++).path;
    for (const auto& n : g.nodes)
      if (auto it = c.kernels.kernels.find(n.get()); it != c.kernels.kernels.end() && it->second) {
        const uint64_t scratchpad = it->second->scratchpad_bytes();
        const auto fastest = c.fastest_scratchpad.find(n.get());
        out.push_back({n->describe(), path, it->second->implementation(), scratchpad,
                       fastest == c.fastest_scratchpad.end() ? scratchpad : fastest->second});
      }
  });
  return out;
}

// oneDNN's reference kernels are correct but tens to hundreds of times slower than its jit ones:
// named in the report, and an error where the caller asked for none.
void check_reference_kernels(const Compilation& c, const PlanOptions& planning) {
  const std::vector<const KernelImplementation*> ref = reference_kernels(c.plan);
  if (ref.empty()) return;
  std::string names;
  for (const KernelImplementation* k : ref) names += (names.empty() ? "" : ", ") + k->node + " (" + k->implementation + ")";
  const std::string what = c.model.path + ": " + std::to_string(ref.size()) + " node(s) run on oneDNN reference kernels: " + names;
  if (planning.fail_on_reference_kernels) fail_unsupported(what);
  spdlog::debug("{}", what);
}

}  // namespace

NodeRewriter pipeline_rewrites(Model& model) {
  return [&model](Graph& g, size_t i) {
    // In place, before anything reads the node as its opset-17 form; nodes it put before it are
    // inferred first.
    if (adapt_opset(model, g, i)) return true;
    return inline_constant_if(g, i) || (should_expand_function(*g.nodes[i]) && expand_function_node(model, g, i));
  };
}

ShapeHooks pipeline_shape_hooks(Model& model) {
  return {[&model](const Node& n) { return evaluate_with_kernel(n, model.path); }, pipeline_rewrites(model)};
}

void prepare_model(Model& model, const ShapeOptions& shapes, const std::vector<PatchRegion>& patches,
                   bool plain_layouts) {
  if (const int widened = compute_float16_in_float32(model))
    spdlog::debug("{} float16 values computed in float32", widened);
  infer_shapes(model, shapes, pipeline_shape_hooks(model));
  spdlog::debug("shapes fixed");
  const int dropped = drop_noops(model);
  spdlog::debug("{} no-op nodes removed", dropped);
  spdlog::debug("written-out activations took {} nodes", canonicalize_activations(model));
  const int fused = fuse_conv(model);
  spdlog::debug("Conv fusions removed {} nodes", fused);
  spdlog::debug("quantized fusions removed {} nodes", fuse_quantized(model));
  spdlog::debug("channel shuffles took {} nodes", fold_channel_shuffles(model));
  spdlog::debug("{} Transposes read through by the MatMuls after them", fold_transposes_into_matmuls(model));
  for (const PatchRegion& r : patches) make_patch_region(*model.main, r, model.path);
  const int blocked = assign_layouts(model, plain_layouts ? 0 : preferred_channel_block());
  spdlog::debug("{} tensors channel-blocked", blocked);
  // Without VNNI the int8 convolutions run oneDNN's float32 kernels, which read channel-blocked.
  // (A oneDNN engine to ask them, made only for a model that has a QLinearConv.)
  std::optional<rt::DnnlContext> dnnl;
  const auto runs_on_onednn = [&](const Node& n) {
    if (!dnnl) dnnl.emplace();
    return rt::quant::dnnl_runs_qlinear_conv(n, rt::KernelEnv{&*dnnl, model.path});
  };
  const int int8 = assign_int8_layouts(
      model, rt::quant::int8_products_exact() ? Value::kChannelsLast : preferred_channel_block(), runs_on_onednn);
  spdlog::debug("{} int8 tensors between QLinearConvs in their layout", int8);
}

Model prepare_model(const std::string& path, const ShapeOptions& shapes, const std::vector<PatchRegion>& patches,
                    bool plain_layouts) {
  Model model = import_model(path);
  spdlog::debug("imported {}", path);
  prepare_model(model, shapes, patches, plain_layouts);
  return model;
}

Compilation compile_model(const std::string& path, const ShapeOptions& shapes, PlanOptions planning,
                          OnUnsupported unsupported) {
  return_large_blocks_when_freed();
  if (!(planning.tuning_seconds >= 0))
    fail(path + ": the tuning budget (--tuning-seconds) must be 0 or more seconds, not " +
         std::to_string(planning.tuning_seconds));
  std::optional<Compilation> with_layouts;
  LayoutChoice layouts;
  if (planning.prefer == KernelPreference::Memory && preferred_channel_block() != 0)
    layouts = choose_layouts(path, shapes, planning, unsupported, with_layouts);
  Compilation c = with_layouts ? std::move(*with_layouts)
                               : plan_model(path, shapes, planning, unsupported, planning.patch_regions, layouts.plain);
  with_layouts.reset();
  c.plan.other_layouts_arena_bytes = layouts.other_arena;
  // Over the budget with every leaner kernel: the first layers in patches.
  if (planning.max_arena != 0 && c.plan.arena_bytes > planning.max_arena && planning.patch_regions.empty())
    fit_with_patches(c, planning.max_arena, [&](const std::vector<PatchRegion>& patches) {
      return plan_model(path, shapes, planning, unsupported, patches, layouts.plain);
    });
  settle_variants(c.kernels);
  c.plan.model_sha256 = c.model.sha256;
  c.plan.model_path = c.model.path;
  c.plan.shapes = shapes;
  c.plan.kernels = kernel_implementations(c);
  c.plan.isa = rt::dnnl_isa_name();
  check_reference_kernels(c, planning);
  verify_plan(c.model, c.plan);
  spdlog::debug("plan verified: arena {} bytes", c.plan.arena_bytes);
  warn_if_larger_than_memory(c.plan);
  return c;
}

Compilation load_compilation(const std::string& model_path, MemoryPlan plan, const std::string& plan_path,
                             OnUnsupported unsupported) {
  return_large_blocks_when_freed();
  Compilation c{std::make_unique<rt::DnnlContext>(), import_model(model_path), {}, std::move(plan), {}};
  if (c.model.sha256 != c.plan.model_sha256)
    fail(model_path + ": the plan was made for another model (sha256 " + c.plan.model_sha256.substr(0, 12) +
         "..., this file " + c.model.sha256.substr(0, 12) + "...)");
  prepare_model(c.model, c.plan.shapes, c.plan.patch_regions, c.plan.plain_layouts);
  mark_winograd_convs(c.model, c.plan.winograd_convs);
  select(c, unsupported);
  verify_plan(c.model, c.plan);
  take_planned_lean_kernels(c, plan_path);
  settle_variants(c.kernels);
  check_scratchpads(c, plan_path);
  check_aliases(c, plan_path);
  c.plan.kernels = kernel_implementations(c);  // this machine's, which the report then shows
  c.plan.isa = rt::dnnl_isa_name();
  return c;
}

}  // namespace memplan
