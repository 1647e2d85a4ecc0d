// A patch region as the plan records it: a run of the main graph's nodes that one kernel runs in
// tiles of output rows (passes/patch_regions, runtime/kernels/dnnl/patch_chain.h).
#pragma once

#include <cstdint>
#include <string>

namespace memplan {

struct PatchRegion {
  std::string first, last;  // the names of the run's first and last nodes
  int64_t tile_rows = 0;    // rows of the last node's output per tile
  // Rows a tile computes are kept for the tiles after it that read them (line buffers: nothing
  // is computed twice, every tensor's tile buffer lives across tiles); else each tile computes
  // its halos again (MCUNetV2's patches: buffers only as long as a tile, which later ones reuse).
  bool keep_rows = false;
  // What the compile found, for the report (not needed to make the region again).
  int32_t layers = 0, tiles = 0;
  int64_t input_rows = 0;         // the most rows of the run's input one tile holds (its halo included)
  uint64_t tile_frame_bytes = 0;  // the run's tensors at tile height, in the region's scratchpad
  uint64_t macs = 0;              // the run's multiply-adds over whole tensors
  uint64_t recomputed_macs = 0;   // more in tiles: the halos' rows, computed by every tile that reads them
  bool operator==(const PatchRegion&) const = default;
};

}  // namespace memplan
