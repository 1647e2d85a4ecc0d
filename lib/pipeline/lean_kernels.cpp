#include "pipeline/lean_kernels.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "memplan/error.h"
#include "plan/plan_peak.h"

namespace memplan {

std::optional<KernelPreference> parse_preference(const std::string& name) {
  if (name == "balanced") return KernelPreference::Balanced;
  if (name == "memory") return KernelPreference::Memory;
  if (name == "speed") return KernelPreference::Speed;
  return std::nullopt;
}

const char* preference_name(KernelPreference p) {
  return p == KernelPreference::Memory ? "memory" : p == KernelPreference::Speed ? "speed" : "balanced";
}

namespace {

// Nodes whose scratchpads are live at the peak of graph `gi`, and of the regions live there.
void scratchpads_at_peak(const Compilation& c, const std::vector<const Graph*>& graphs, size_t gi,
                         std::vector<const Node*>& out) {
  const GraphPlan& gp = c.plan.graphs[gi];
  const plan::Peak peak = plan::peak_of(gp);
  for (const plan::Storage& s : peak.live) {
    const PlannedBuffer& b = *s.root;
    if (b.node < 0 || static_cast<size_t>(b.node) >= graphs[gi]->nodes.size()) continue;
    if (b.kind == BufferKind::Scratchpad) out.push_back(graphs[gi]->nodes[static_cast<size_t>(b.node)].get());
    if (b.kind == BufferKind::Region)
      for (const Region& r : gp.regions)
        if (r.step == b.node)
          for (int32_t sub : r.subgraphs) scratchpads_at_peak(c, graphs, static_cast<size_t>(sub), out);
  }
}

// Seconds one run of `k` takes on zeroed tensors of the node's compile-time shapes (the best of
// three after a warm-up): what "as fast" compares.
double time_kernel(rt::Kernel& k, const Node& n) {
  std::vector<std::unique_ptr<std::byte, decltype(&std::free)>> memory;
  auto views = [&](const std::vector<Value*>& values) {
    std::vector<rt::TensorView> out;
    for (const Value* v : values) {
      rt::TensorView t;
      if (v) {
        const uint64_t bytes = v->constant ? v->constant->byte_size() : v->capacity_bytes;
        const size_t size = (static_cast<size_t>(bytes) + 63) / 64 * 64 + 64;
        memory.emplace_back(static_cast<std::byte*>(std::aligned_alloc(64, size)), &std::free);
        std::fill_n(memory.back().get(), size, std::byte{0});
        t.data = memory.back().get();
        t.dtype = v->type.dtype;
        t.rank = static_cast<int>(std::min<size_t>(v->type.dims.size(), rt::kMaxRank));
        for (int d = 0; d < t.rank; ++d) t.dims[static_cast<size_t>(d)] = v->type.dims[static_cast<size_t>(d)].value;
        t.capacity = bytes;
      }
      out.push_back(t);
    }
    return out;
  };
  const std::vector<rt::TensorView> in = views(n.inputs);
  std::vector<rt::TensorView> outs = views(n.outputs);
  const size_t scratch = static_cast<size_t>(k.scratchpad_bytes() + 64) / 64 * 64;
  std::unique_ptr<std::byte, decltype(&std::free)> pad(static_cast<std::byte*>(std::aligned_alloc(64, scratch)), &std::free);
  const std::unique_ptr<rt::KernelState> state = k.make_state();
  rt::KernelArgs args{in, outs, pad.get(), state.get()};
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    k.run(args);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) best = std::min(best, s);
  }
  return best;
}

}  // namespace

int choose_lean_kernels(Compilation& c, const PlanOptions& planning, KernelPreference prefer) {
  if (prefer == KernelPreference::Speed) return 0;
  std::vector<const Graph*> graphs;
  for_each_graph(*c.model.main, [&](Graph& g) { graphs.push_back(&g); });
  std::vector<const Node*> tried, swapped_nodes;
  for (size_t gi = 0; gi < graphs.size(); ++gi)  // kept from an earlier call
    for (int32_t step : std::exchange(c.plan.graphs[gi].leaner_kernels, {}))
      swapped_nodes.push_back(graphs[gi]->nodes[static_cast<size_t>(step)].get());
  int swapped = 0;
  for (int round = 0; round < 32; ++round) {
    std::vector<const Node*> candidates;
    scratchpads_at_peak(c, graphs, 0, candidates);
    std::erase_if(candidates, [&](const Node* n) { return std::count(tried.begin(), tried.end(), n) > 0; });
    if (candidates.empty()) break;
    const Node* n = candidates.front();
    tried.push_back(n);
    auto it = c.kernels.kernels.find(n);
    if (it == c.kernels.kernels.end() || !it->second) continue;
    std::unique_ptr<rt::Kernel> lean = it->second->take_leaner();
    if (!lean) continue;
    if (prefer == KernelPreference::Balanced) {
      const double fast = time_kernel(*it->second, *n), slow = time_kernel(*lean, *n);
      if (slow > fast * kLeanerSlowdown) {
        spdlog::debug("{}: a leaner kernel ({} scratchpad bytes, not {}) is {:.2f}x as slow: kept the faster one",
                      n->describe(), lean->scratchpad_bytes(), it->second->scratchpad_bytes(), slow / fast);
        continue;
      }
    }
    std::swap(it->second, lean);
    MemoryPlan replanned = plan_memory(c.model, planning);
    if (replanned.arena_bytes < c.plan.arena_bytes) {
      spdlog::debug("{}: a leaner kernel lowers the arena from {} to {} bytes", n->describe(), c.plan.arena_bytes,
                    replanned.arena_bytes);
      c.plan = std::move(replanned);
      swapped_nodes.push_back(n);
      ++swapped;
    } else {
      std::swap(it->second, lean);  // no lower: the faster kernel stays
    }
  }
  for (size_t gi = 0; gi < graphs.size(); ++gi)
    for (size_t t = 0; t < graphs[gi]->nodes.size(); ++t)
      if (std::count(swapped_nodes.begin(), swapped_nodes.end(), graphs[gi]->nodes[t].get()))
        c.plan.graphs[gi].leaner_kernels.push_back(static_cast<int32_t>(t));
  return swapped;
}

void take_planned_lean_kernels(Compilation& c, const std::string& plan_path) {
  size_t gi = 0;
  for_each_graph(*c.model.main, [&](Graph& g) {
    for (int32_t step : c.plan.graphs[gi].leaner_kernels) {
      const Node* n = g.nodes[static_cast<size_t>(step)].get();
      auto it = c.kernels.kernels.find(n);
      std::unique_ptr<rt::Kernel> lean = it == c.kernels.kernels.end() || !it->second ? nullptr : it->second->take_leaner();
      if (!lean)
        fail(plan_path + ": the plan runs a leaner kernel for " + n->describe() +
             ", which this machine does not have; compile it again");
      it->second = std::move(lean);
    }
    ++gi;
  });
}

}  // namespace memplan
