#include "runtime/kernel_selection.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/container_ops.h"
#include "ir/unreachable_branch.h"
#include "memplan/error.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel_registry.h"
#include "runtime/run_threads.h"

namespace memplan {

uint64_t KernelSelection::scratchpad_bytes(const Node& n) const {
  auto it = kernels.find(&n);
  return it == kernels.end() || !it->second ? 0 : it->second->scratchpad_bytes();
}

plan::NodeAliasing KernelSelection::aliasing(const Node& n) const {
  plan::NodeAliasing a;
  // The executor's Loop reads its first carried value's initial value (input 2) before anything
  // writes its output 0 (the final value: written at the end, or updated in place from a copy of
  // the initial value made first), so that output may take the initial value's bytes.
  if (n.op_type == "Loop" && n.inputs.size() > 2 && !n.outputs.empty() && n.outputs[0]) a.in_place.push_back(2);
  auto it = kernels.find(&n);
  if (it == kernels.end() || !it->second) return a;
  a.view_of = it->second->view_of();
  a.concat = it->second->concatenates_end_to_end();
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (it->second->may_overwrite_input(i)) a.in_place.push_back(i);
  return a;
}

// The first few reasons, then a count: a model with hundreds of nodes of one unsupported type
// (a float16 network, say) stays a readable line.
std::string KernelSelection::unsupported_summary() const {
  constexpr size_t kShown = 5;
  std::string out;
  for (size_t i = 0; i < unsupported.size() && i < kShown; ++i) out += (out.empty() ? "" : "; ") + unsupported[i];
  if (unsupported.size() > kShown) out += "; and " + std::to_string(unsupported.size() - kShown) + " more nodes";
  return out;
}

namespace {

// The values of every graph that share each constant's bytes (torch's shared weights, whose
// Identities shape inference turned into constants of the same tensor).
std::unordered_map<const Tensor*, std::vector<Value*>> sharers_of(Model& model) {
  std::unordered_map<const Tensor*, std::vector<Value*>> out;
  for_each_graph(*model.main, [&](Graph& g) {
    for (const auto& v : g.values)
      if (v->constant) out[v->constant.get()].push_back(v.get());
  });
  return out;
}

// Releases the bytes the values share: one shape-only tensor for all of them, so the plan still
// counts the weight once (planner.cpp's weights_bytes, by tensor).
void release_shared(const std::vector<Value*>& values, KernelSelection& sel) {
  for (Value* v : values) {
    if (v == values.front()) v->release_constant_bytes();
    else v->constant = values.front()->constant;
    sel.released.insert(v);
  }
}

// Constants that only kernels' own (reordered) copies use are released as soon as the last of
// their readers has its kernel, so the model's weights and the kernels' copies are never all in
// memory at once; those a leaner variant of a reader would read wait for settle_variants(). A
// tensor several values share goes once the readers of all of them have their kernels.
class WeightRelease {
 public:
  WeightRelease(KernelSelection& sel, Model& model) : sel_(sel), sharers_(sharers_of(model)) {}
  void after(const Node& n, const rt::Kernel* kernel) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      Value* v = n.inputs[k];
      if (!v || !v->constant || std::find(n.inputs.begin(), n.inputs.begin() + static_cast<long>(k), v) !=
                                    n.inputs.begin() + static_cast<long>(k))
        continue;  // not a constant, or already seen at an earlier input of n
      bool read = !kernel || v->is_graph_output;
      bool variant_reads = false;
      for (size_t j = k; j < n.inputs.size() && !read; ++j) {
        read = n.inputs[j] == v && kernel->reads_at_run_time(j);
        variant_reads = variant_reads || (n.inputs[j] == v && kernel->leaner_reads_at_run_time(j));
      }
      const std::vector<Value*>& sharers = sharers_[v->constant.get()];
      State& st = state_[v->constant.get()];
      st.needed = st.needed || read;
      st.held = st.held || variant_reads;
      size_t readers = 0;
      for (const Value* s : sharers) readers += s->consumers.size();
      const bool returned = std::any_of(sharers.begin(), sharers.end(), [](const Value* s) { return s->is_graph_output; });
      if (++st.done < readers || st.needed || returned || v->constant.use_count() != static_cast<long>(sharers.size()))
        continue;
      if (st.held) sel_.held_for_variants.insert(sharers.begin(), sharers.end());
      else release_shared(sharers, sel_);
    }
  }

 private:
  struct State {
    size_t done = 0;
    bool needed = false, held = false;
  };
  std::unordered_map<const Tensor*, State> state_;
  KernelSelection& sel_;
  std::unordered_map<const Tensor*, std::vector<Value*>> sharers_;
};

}  // namespace

void settle_variants(KernelSelection& sel) {
  for (auto& [node, kernel] : sel.kernels)
    if (kernel) kernel->drop_leaner();
  // The values held, by the tensor they share (WeightRelease holds all of a tensor's at once).
  std::unordered_map<const Tensor*, std::vector<Value*>> held;
  for (Value* v : std::exchange(sel.held_for_variants, {})) held[v->constant.get()].push_back(v);
  for (auto& [tensor, values] : held) {
    bool read = values.front()->constant.use_count() != static_cast<long>(values.size());
    for (const Value* v : values) {
      read = read || v->is_graph_output;
      for (const Node* reader : v->consumers) {
        auto it = sel.kernels.find(reader);
        for (size_t j = 0; j < reader->inputs.size() && !read; ++j)
          read = reader->inputs[j] == v && (it == sel.kernels.end() || !it->second || it->second->reads_at_run_time(j));
      }
    }
    if (!read) release_shared(values, sel);
  }
}

KernelSelection select_kernels(Model& model, rt::DnnlContext& dnnl) {
  KernelSelection sel;
  WeightRelease release(sel, model);
  rt::KernelEnv env{&dnnl, model.path};
  // Kernels that want a constant in the same layout share one reordered copy while they are made.
  dnnl.share_constants = true;
  struct StopSharing {
    rt::DnnlContext& dnnl;
    ~StopSharing() {
      dnnl.share_constants = false;
      dnnl.reordered_constants.clear();
    }
  } stop_sharing{dnnl};
  // oneDNN fixes a primitive's work split for the thread count in effect when it is made.
  dnnl.threads = choose_model_threads(*model.main, RequestedThreads::current());
  const ThreadScope threads(dnnl.threads);
  const auto& registry = rt::KernelRegistry::instance();
  std::map<std::string, std::vector<std::string>> missing;  // op -> node names
  // If branches a kernel found cannot run on these shapes (ir/unreachable_branch.h), with why;
  // the graphs inside them are passed over, and they are dropped once the walk is over.
  struct Dropped {
    IfBranch branch;
    const Graph* graph;
    Error why;
  };
  std::vector<Dropped> dropped;
  const auto inside = [](const Graph& g, const Graph* scope) {
    for (const Graph* cur = &g; cur; cur = cur->parent)
      if (cur == scope) return true;
    return false;
  };
  const auto inside_dropped = [&](const Graph& g) {
    return std::any_of(dropped.begin(), dropped.end(), [&](const Dropped& d) { return inside(g, d.graph); });
  };
  for_each_graph(*model.main, [&](Graph& g) {
    if (inside_dropped(g)) return;
    for (const auto& n : g.nodes) {
      if (is_container_op(*n)) {
        release.after(*n, nullptr);  // the session runs it (runtime/container_exec.cpp)
        continue;
      }
      if (misuses_container(*n)) {
        sel.unsupported.push_back(n->describe() + ": it reads or writes a sequence or optional, which only the " +
                                  "sequence and optional ops, If and Loop take");
        continue;
      }
      if (n->domain.empty() && (n->op_type == "If" || n->op_type == "Loop" || n->op_type == "Scan")) {
        release.after(*n, nullptr);  // its subgraphs read what it passes them
        // The executor scans axis 0 only: say so when the model is compiled, not at its first run.
        for (const char* axes : {"scan_input_axes", "scan_output_axes"})
          for (int64_t a : n->attr_ints(axes))
            if (a != 0 && n->op_type == "Scan") {
              sel.unsupported.push_back(n->describe() + ": " + axes + " other than 0 cannot run yet");
              break;
            }
        continue;
      }
      rt::KernelFactory factory = registry.find(n->op_type, n->domain);
      if (!factory) {
        missing[n->op_type + (n->domain.empty() ? "" : " (domain " + n->domain + ")") + " opset " +
                std::to_string(n->opset)]
            .push_back(n->name);
        continue;
      }
      if (n->touches_dynamic()) {
        release.after(*n, nullptr);  // its kernel, made at run time, reads the constants then
        continue;
      }
      try {
        auto kernel = factory(*n, env);
        if (!kernel) {
          sel.unsupported.push_back(n->describe() + ": no kernel for its types or attributes");
          continue;
        }
        release.after(*n, kernel.get());
        sel.kernels.emplace(n.get(), std::move(kernel));
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::Unsupported) {
          sel.unsupported.push_back(e.what());
          continue;
        }
        const std::optional<IfBranch> branch = enclosing_if_branch(g);
        const bool other_dropped = branch && std::any_of(dropped.begin(), dropped.end(), [&](const Dropped& d) {
                                     return d.branch.node == branch->node;
                                   });
        if (!branch || other_dropped || !branch_cannot_run(*branch, e)) throw;
        dropped.push_back({*branch, branch->graph(), e});
        break;
      }
    }
  });
  // The walk visits a graph's nodes before the graphs nested in it and passes over dropped
  // branches, so no dropped branch lies inside another.
  for (const Dropped& d : dropped) {
    std::erase_if(sel.kernels, [&](const auto& entry) { return inside(*entry.first->graph, d.graph); });
    std::erase_if(sel.released, [&](const Value* v) { return inside(*v->graph, d.graph); });  // going with it
    std::erase_if(sel.held_for_variants, [&](const Value* v) { return inside(*v->graph, d.graph); });
    drop_branch(d.branch, model.path, d.why);
  }
  if (!dropped.empty()) rebuild_uses(*model.main);
  for (const auto& [op, nodes] : missing) {
    std::string entry = op + " x" + std::to_string(nodes.size()) + " (node '" + nodes[0] + "'" +
                        (nodes.size() > 1 ? ", ..." : "") + ")";
    sel.unsupported.insert(sel.unsupported.begin(), "no kernel for " + entry);
  }
  return sel;
}

}  // namespace memplan
