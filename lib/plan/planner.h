// Plans a whole model: each graph into its own frame (bottom-up, inner subgraphs first), each
// control-flow node into one region buffer of its parent, everything at fixed offsets of one arena.
#pragma once

#include <cstdint>
#include <functional>

#include "ir/graph.h"
#include "plan/core/strategies.h"
#include "plan/plan.h"
#include "plan/storage_groups.h"

namespace memplan {

// How kernel selection trades time for memory (pipeline/lean_kernels).
enum class KernelPreference {
  Balanced,  // a leaner kernel where it lowers the arena and costs at most 1.25x the time, or adds
             // little to the model's (default)
  Memory,    // a leaner kernel wherever it lowers the arena
  Speed,     // the fastest kernels, whatever their scratchpads
};

struct PlanOptions {
  plan::Strategy strategy = plan::Strategy::Auto;
  uint64_t alignment = 64;
  // Bytes of temporary memory a node's kernel needs during its step (0 when none is known).
  std::function<uint64_t(const Node&)> scratchpad_bytes;
  // Which outputs may share an input's bytes (views, in place); empty: every tensor its own bytes.
  plan::AliasRules aliasing;
  bool share_storage = true;  // false: the pipeline sets no aliasing (every tensor its own bytes)
  KernelPreference prefer = KernelPreference::Balanced;
  // Wall-clock seconds Balanced may spend timing leaner kernels against the fastest ones
  // (pipeline/lean_kernels' TuningClock; MemoryPlan::tuning reports what was spent).
  double tuning_seconds = 1.5;
  uint64_t max_arena = 0;     // a budget the arena must fit (0: none); compiling fails otherwise
  // Runs of first layers to run in tiles (passes/patch_regions), as a plan records them; empty:
  // where leaner kernels leave the arena over max_arena, pipeline/patch_search chooses one.
  std::vector<PatchRegion> patch_regions;
  bool external_inputs = false;  // main-graph inputs stay in the caller's bytes (MemoryPlan::external_inputs)
  // Compiling fails when a node would run on one of oneDNN's reference kernels (MemoryPlan::kernels).
  bool fail_on_reference_kernels = false;
};

// Fills everything in the plan but the model identity and shape options (the caller's job).
MemoryPlan plan_memory(const Model& model, const PlanOptions& options);

// The model's constants' bytes, each tensor once however many values name it.
uint64_t weights_bytes(const Model& model);

// Bytes a value's buffer takes in a plan (its capacity rounded up to the alignment).
uint64_t aligned_capacity(uint64_t bytes, uint64_t alignment);

}  // namespace memplan
