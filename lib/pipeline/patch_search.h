// Choosing a patch region (passes/patch_regions) for an arena budget: where leaner kernels alone
// leave the arena over `--max-arena`, the main graph's first layers run in tiles. Each candidate
// run and tile height is estimated first (its tile frame, from plan/core/patch_schedule, beside
// what the first plan holds outside the run), and only the likeliest are compiled for real.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/patch_region.h"
#include "pipeline/compile_pipeline.h"

namespace memplan {

// Candidates compiled for real, at most.
constexpr size_t kMaxPatchTrials = 10;

// The regions worth compiling for `budget`, likeliest first: for each place the run may end
// (shortest first), the tallest tiles whose estimate fits with rows kept, then computing halos
// again, alternating with the smallest estimates (smallest first). `main` and `plan` are a
// compilation without patches.
std::vector<PatchRegion> patch_trials(const Graph& main, const GraphPlan& plan, uint64_t budget);

// The regions `made` in `main` with what they cost (for the report), in the same order.
std::vector<PatchRegion> patch_region_costs(const Graph& main, const std::vector<PatchRegion>& made, const std::string& where);

// Compiles the model with the given regions (the pipeline's one pass to a plan).
using CompileWithPatches = std::function<Compilation(const std::vector<PatchRegion>&)>;

// `c` (over its budget) becomes the first trial whose arena fits; else fails naming the smallest
// arena reached and what holds its peak.
void fit_with_patches(Compilation& c, uint64_t budget, const CompileWithPatches& compile);

}  // namespace memplan
