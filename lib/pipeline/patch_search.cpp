#include "pipeline/patch_search.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "memplan/error.h"
#include "passes/patch_regions.h"
#include "report/plan_report.h"
#include "runtime/kernels/dnnl/patch_chain.h"

namespace memplan {
namespace {

// The bytes the plan's buffers hold at each step.
std::vector<uint64_t> live_bytes(const GraphPlan& plan) {
  std::vector<uint64_t> live(static_cast<size_t>(std::max(plan.num_steps, 0)), 0);
  for (const PlannedBuffer& b : plan.buffers)
    if (b.in_frame() && b.group < 0)
      for (int32_t s = std::max(b.first, 0); s <= b.last && s < plan.num_steps; ++s) live[static_cast<size_t>(s)] += b.size;
  return live;
}

// The most of `live` at one step outside [first, last]: what a patch region over those steps
// leaves as it is.
uint64_t peak_outside(const std::vector<uint64_t>& live, size_t first, size_t last) {
  uint64_t peak = 0;
  for (size_t s = 0; s < live.size(); ++s)
    if (s < first || s > last) peak = std::max(peak, live[s]);
  return peak;
}

struct Estimate {
  PatchRegion region;
  uint64_t bytes = 0;
};

}  // namespace

std::vector<PatchRegion> patch_trials(const Graph& main, const GraphPlan& plan, uint64_t budget) {
  const PatchCandidates c = find_patch_candidates(main);
  const std::vector<uint64_t> live = live_bytes(plan);
  // tallest: per end and mode, the tallest tiles whose estimate fits; smallest: per end, the
  // smallest estimate (the estimate leaves the layers' own scratchpads out, so a region that fits
  // by it may not: the smallest is the fallback, and what a budget below every estimate gets).
  std::vector<Estimate> tallest, smallest;
  for (size_t end : c.ends) {
    std::vector<const Node*> nodes;
    for (size_t i = c.first; i <= end; ++i) nodes.push_back(main.nodes[i].get());
    std::optional<Estimate> least;
    try {
      const rt::dnnl_kernels::PatchChainLayers d = rt::dnnl_kernels::describe_patch_chain(nodes, main.path());
      const int64_t height = d.shape.rows.back();
      const uint64_t ends = d.tensors.front()->capacity_bytes + d.tensors.back()->capacity_bytes;
      const uint64_t outside = peak_outside(live, c.first, end);
      // Rows kept first: nothing computed twice, where their buffers fit.
      for (bool keep : {true, false}) {
        std::optional<Estimate> best_fit;
        for (int64_t rows = height;; rows = (rows + 1) / 2) {
          const plan::PatchSchedule s = plan::schedule_patches(d.shape, rows, keep);
          Estimate e{{main.nodes[c.first]->name, main.nodes[end]->name, rows, keep}, std::max(outside, ends + s.frame.frame_bytes)};
          if (e.bytes <= budget && !best_fit) best_fit = e;
          if (!least || e.bytes < least->bytes) least = e;
          if (rows == 1) break;
        }
        if (best_fit) tallest.push_back(*best_fit);
      }
    } catch (const Error& e) {
      spdlog::debug("no patch region ends at {}: {}", main.nodes[end]->describe(), e.what());
      continue;
    }
    if (least) smallest.push_back(*least);
  }
  std::stable_sort(smallest.begin(), smallest.end(), [](const Estimate& a, const Estimate& b) { return a.bytes < b.bytes; });
  std::vector<PatchRegion> out;
  const auto add = [&](const Estimate& e) {
    if (out.size() < kMaxPatchTrials && std::find(out.begin(), out.end(), e.region) == out.end()) out.push_back(e.region);
  };
  // The tallest fitting tiles of the shortest runs, then the smallest estimates, alternating, so
  // that neither list crowds the other out.
  for (size_t i = 0; i < std::max(tallest.size(), smallest.size()); ++i) {
    if (i < tallest.size()) add(tallest[i]);
    if (i < smallest.size()) add(smallest[i]);
  }
  return out;
}

std::vector<PatchRegion> patch_region_costs(const Graph& main, const std::vector<PatchRegion>& made, const std::string& where) {
  std::vector<PatchRegion> out;
  size_t next = 0;
  for (const auto& n : main.nodes)
    if (n->op_type == rt::dnnl_kernels::kPatchChainOp && next < made.size())
      out.push_back(rt::dnnl_kernels::patch_region_cost(*n, made[next++], where + ": " + n->describe()));
  if (out.size() != made.size()) fail_internal(where + ": " + std::to_string(made.size()) + " patch regions asked for, " +
                                               std::to_string(out.size()) + " made");
  return out;
}

void fit_with_patches(Compilation& c, uint64_t budget, const CompileWithPatches& compile) {
  const std::vector<PatchRegion> trials = patch_trials(*c.model.main, c.plan.graphs.front(), budget);
  std::optional<Compilation> smallest;
  for (const PatchRegion& r : trials) {
    try {
      Compilation p = compile({r});
      spdlog::debug("patch region {} .. {} in tiles of {} rows{}: arena {} bytes", r.first, r.last, r.tile_rows,
                    r.keep_rows ? ", rows kept" : "", p.plan.arena_bytes);
      if (p.plan.arena_bytes <= budget) {
        c = std::move(p);
        return;
      }
      if (!smallest || p.plan.arena_bytes < smallest->plan.arena_bytes) smallest = std::move(p);
    } catch (const Error& e) {
      spdlog::debug("patch region {} .. {} in tiles of {} rows{} refused: {}", r.first, r.last, r.tile_rows,
                    r.keep_rows ? ", rows kept" : "", e.what());
    }
  }
  const Compilation& best = smallest && smallest->plan.arena_bytes < c.plan.arena_bytes ? *smallest : c;
  MemoryPlan plan = best.plan;
  plan.model_path = c.model.path;
  std::string how;
  if (!best.plan.patch_regions.empty()) {
    const PatchRegion& r = best.plan.patch_regions.front();
    how = " (with the patch region " + r.first + " .. " + r.last + " in tiles of " + std::to_string(r.tile_rows) + " rows" +
          (r.keep_rows ? ", rows kept)" : ")");
  } else {
    const PatchCandidates k = find_patch_candidates(*c.model.main);
    how = trials.empty() ? " (no patch region can be made" : " (no patch region lowers it";
    how += k.stop.empty() ? ")" : ": " + k.stop + ")";
  }
  fail(c.model.path + ": the smallest arena memplan can plan is " + std::to_string(best.plan.arena_bytes) +
       " bytes, over the budget of " + std::to_string(budget) + " bytes" + how + "; its peak is at " +
       plan_peak_summary(plan));
}

}  // namespace memplan
