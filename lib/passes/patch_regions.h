// Patch regions: a run of a CNN's first layers replaced by one node whose kernel runs them tile by
// tile (runtime/kernels/dnnl/patch_chain.h), so that their tensors never exist whole. Made only
// where a plan asks for them (PatchRegion): pipeline/patch_search chooses the run and the tile
// height when the arena does not fit a budget, and a plan file records its choice.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/patch_region.h"

namespace memplan {

// Where a patch region can go: from the main graph's first node that patches can carry, the
// nodes after which it can end (every tensor the run makes but the last is read inside it).
// `stop` says what ended the run (the node, and why patches cannot carry it), or is empty where
// the graph ended.
struct PatchCandidates {
  size_t first = 0;
  std::vector<size_t> ends;
  std::string stop;
};
PatchCandidates find_patch_candidates(const Graph& main);

// Replaces the run from r.first to r.last by one node running it in tiles of r.tile_rows rows;
// fails naming the model and the region where the run is not one of find_patch_candidates().
void make_patch_region(Graph& main, const PatchRegion& r, const std::string& model_path);

}  // namespace memplan
