// Patch-based execution's pure core: a chain of layers run tile by tile along the rows (MCUNetV2,
// Lin et al. 2021), each tile of the chain's output computed through every layer before the next
// tile starts, so that the chain's tensors exist only at tile height. Nothing here knows about
// ONNX, oneDNN or the IR: layers are row windows (a convolution's or a pool's kernel height,
// stride and top padding), tensors are heights and bytes per row.
//
// schedule_patches() derives, for each tile, the rows every tensor must hold (the halo each
// window needs, recomputed in every tile that needs it), the rows each tensor's tile buffer must
// have room for, and the tile frame: one offset per tensor, planned by this core's strategies on
// the tensors' lifetimes inside a tile. check_patch_schedule() re-derives what it needs and trusts
// nothing the scheduler recorded: a halo one row short or two tile buffers sharing bytes while
// both are live is a one-line description.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/core/buffers.h"

namespace memplan::plan {

// One layer: reads `input` through a window of `extent` rows (dilated) moved by `stride`, with
// `pad_top` rows of padding above row 0 (and as many below the last as the window needs); and,
// where `addend` >= 0, that tensor's rows at its output's rows (a fused residual Add). Writes
// `output`. Tensors are numbered: 0 is the chain's input, the last layer's output its output.
struct PatchLayer {
  int input = 0;
  int addend = -1;
  int output = 1;
  int64_t extent = 1, stride = 1, pad_top = 0;
};

struct PatchChainShape {
  std::vector<int64_t> rows;        // each tensor's height
  std::vector<uint64_t> row_bytes;  // the bytes of one row of each tensor (all channels and images)
  std::vector<PatchLayer> layers;   // in execution order; each output written by one layer
};

// Rows [lo, hi) of a tensor.
struct RowRange {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
  bool operator==(const RowRange&) const = default;
};

// What a layer reads in one tile: the input rows (inside the input's range this tile), and the
// padding rows above and below them that the window needs.
struct LayerRows {
  RowRange in;
  int64_t pad_top = 0, pad_bottom = 0;
};

struct PatchSchedule {
  int64_t tile_rows = 0;  // rows of the chain's output per tile (the last tile may be shorter)
  // Rows computed once and kept (line buffers): a tile computes only the rows of each tensor that
  // no tile before it computed, and keeps those of the tile before that it reads again. Else each
  // tile computes every row it reads (its halo again, as MCUNetV2's patches do).
  bool keep_rows = false;
  // tiles[t][k]: the rows tensor k holds in tile t (the chain's output: the tile's own rows).
  std::vector<std::vector<RowRange>> tiles;
  // computed[t][k]: the rows of tiles[t][k] that tile t computes (copies in, for tensor 0): all
  // of them, or with keep_rows those no tile before computed; the rest were kept.
  std::vector<std::vector<RowRange>> computed;
  std::vector<int64_t> capacity;  // rows each tensor's tile buffer has room for
  // The tile frame: tensor k's buffer at frame.offsets[k], live (inside a tile) from the step
  // that writes it to the last that reads it. Step 0 copies the chain's input rows in, step
  // i + 1 runs layer i, the last step copies the output rows out. A buffer whose rows a tile
  // keeps (keep_rows: one a window of more than one row reads) lives across tiles: every step.
  Placement frame;
  uint64_t frame_align = 64;
};

// Each tensor's tile buffer as a request of the planner's core: capacity x row bytes, live over
// the steps above, or over every step where `across_tiles` (a tensor whose rows a tile keeps).
std::vector<BufferRequest> tile_buffers(const PatchChainShape& chain, const std::vector<int64_t>& capacity,
                                        const std::vector<bool>& across_tiles);

// Whether some tile of `s` keeps rows of each tensor from the tile before (its buffer then lives
// across tiles).
std::vector<bool> kept_across_tiles(const PatchSchedule& s);

// The rows layer `l` reads to write rows `out` of its output.
LayerRows layer_rows(const PatchChainShape& chain, size_t l, RowRange out);

// The schedule for tiles of `tile_rows` output rows, computing halos again or (`keep_rows`)
// keeping them. Throws memplan::Error on a malformed chain
// (a tensor index out of range, a tensor written twice or read before it is written, a layer
// whose window does not give its output's height, a size overflow).
PatchSchedule schedule_patches(const PatchChainShape& chain, int64_t tile_rows, bool keep_rows = false);

// The first violation of the schedule, or none: tiles that do not cover the output's rows exactly
// once, in order; a tensor range outside its tensor or past its capacity; a layer reading rows its
// input (or addend) does not hold in that tile (a halo short); rows held that the tile neither
// computes nor kept from the tile before (computed earlier, and held then); a layer's output and
// addend with different capacities (they share one row stride); tile buffers that overlap while
// both live.
std::optional<std::string> check_patch_schedule(const PatchChainShape& chain, const PatchSchedule& schedule);

// The rows each layer computes more than once over all tiles (the halos computed again): none
// with keep_rows. (Rows no tile reads, below a strided window's last, are not computed at all.)
std::vector<int64_t> recomputed_rows(const PatchChainShape& chain, const PatchSchedule& schedule);

}  // namespace memplan::plan
