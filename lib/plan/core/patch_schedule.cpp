#include "plan/core/patch_schedule.h"

#include <algorithm>
#include <limits>

#include "memplan/error.h"
#include "plan/core/strategies.h"

namespace memplan::plan {
namespace {

constexpr RowRange kNone{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};

bool empty(const RowRange& r) { return r.hi <= r.lo; }

void widen(RowRange& r, const RowRange& by) {
  r.lo = std::min(r.lo, by.lo);
  r.hi = std::max(r.hi, by.hi);
}

bool holds(const RowRange& outer, const RowRange& inner) { return empty(inner) || (outer.lo <= inner.lo && inner.hi <= outer.hi); }

std::string rows_string(const RowRange& r) { return "[" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + ")"; }

std::string tensor_name(int k) { return "tensor " + std::to_string(k); }

// Throws on anything the scheduler cannot reason about; returns the chain's output tensor.
int check_chain(const PatchChainShape& c) {
  const size_t n = c.rows.size();
  if (n < 2 || c.row_bytes.size() != n || c.layers.empty()) fail("patch chain: needs a layer and its tensors' rows and row bytes");
  std::vector<bool> written(n, false);
  written[0] = true;
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const PatchLayer& p = c.layers[l];
    const std::string at = "patch chain: layer " + std::to_string(l);
    const auto in_range = [n](int k) { return k >= 0 && static_cast<size_t>(k) < n; };
    if (!in_range(p.input) || !in_range(p.output) || (p.addend >= 0 && !in_range(p.addend)) || p.addend < -1)
      fail(at + " names a tensor out of range");
    if (!written[static_cast<size_t>(p.input)] || (p.addend >= 0 && !written[static_cast<size_t>(p.addend)]))
      fail(at + " reads a tensor no earlier layer writes");
    if (written[static_cast<size_t>(p.output)]) fail(at + " writes " + tensor_name(p.output) + ", written already");
    written[static_cast<size_t>(p.output)] = true;
    if (p.extent < 1 || p.stride < 1 || p.pad_top < 0 || p.pad_top >= p.extent)
      fail(at + ": window of " + std::to_string(p.extent) + " rows, stride " + std::to_string(p.stride) + ", top padding " +
           std::to_string(p.pad_top) + " is not a window");
    const int64_t h_in = c.rows[static_cast<size_t>(p.input)], h_out = c.rows[static_cast<size_t>(p.output)];
    if (h_in < 1 || h_out < 1) fail(at + ": a tensor has no rows");
    // The last output row's window must start on a real row: the rows the layer writes exist.
    int64_t last_start;
    if (__builtin_mul_overflow(h_out - 1, p.stride, &last_start) || last_start - p.pad_top >= h_in)
      fail(at + ": " + std::to_string(h_out) + " output rows do not fit " + std::to_string(h_in) + " input rows");
    if (p.addend >= 0 && c.rows[static_cast<size_t>(p.addend)] != h_out)
      fail(at + ": the addend has " + std::to_string(c.rows[static_cast<size_t>(p.addend)]) + " rows, the output " +
           std::to_string(h_out));
  }
  for (size_t k = 0; k < n; ++k)
    if (!written[k]) fail("patch chain: " + tensor_name(static_cast<int>(k)) + " is written by no layer");
  return c.layers.back().output;
}

// Whether tensor k is read by a layer (or is the output, read by the copy out).
std::vector<int32_t> last_reads(const PatchChainShape& c) {
  const auto steps = static_cast<int32_t>(c.layers.size());
  std::vector<int32_t> last(c.rows.size(), -1);
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const auto step = static_cast<int32_t>(l + 1);
    last[static_cast<size_t>(c.layers[l].input)] = step;
    if (c.layers[l].addend >= 0) last[static_cast<size_t>(c.layers[l].addend)] = step;
  }
  last[static_cast<size_t>(c.layers.back().output)] = steps + 1;
  return last;
}

}  // namespace

LayerRows layer_rows(const PatchChainShape& chain, size_t l, RowRange out) {
  const PatchLayer& p = chain.layers.at(l);
  const int64_t h_in = chain.rows.at(static_cast<size_t>(p.input));
  const int64_t first = out.lo * p.stride - p.pad_top;         // the window's first row, maybe padding
  const int64_t end = (out.hi - 1) * p.stride - p.pad_top + p.extent;  // one past its last
  LayerRows r;
  r.in = {std::max<int64_t>(first, 0), std::min(end, h_in)};
  r.pad_top = std::max<int64_t>(0, -first);
  r.pad_bottom = std::max<int64_t>(0, end - h_in);
  return r;
}

std::vector<BufferRequest> tile_buffers(const PatchChainShape& chain, const std::vector<int64_t>& capacity,
                                        const std::vector<bool>& across_tiles) {
  if (capacity.size() != chain.rows.size() || across_tiles.size() != chain.rows.size())
    fail("patch chain: a capacity per tensor is needed");
  std::vector<int32_t> last = last_reads(chain);
  std::vector<BufferRequest> out(chain.rows.size());
  std::vector<int32_t> first(chain.rows.size(), 0);
  for (size_t l = 0; l < chain.layers.size(); ++l) first[static_cast<size_t>(chain.layers[l].output)] = static_cast<int32_t>(l + 1);
  for (size_t k = 0; k < across_tiles.size(); ++k)
    if (across_tiles[k]) {  // kept rows outlive the tile
      first[k] = 0;
      last[k] = static_cast<int32_t>(chain.layers.size() + 1);
    }
  for (size_t k = 0; k < out.size(); ++k) {
    uint64_t bytes;
    if (capacity[k] < 0 || __builtin_mul_overflow(static_cast<uint64_t>(capacity[k]), chain.row_bytes[k], &bytes))
      fail("patch chain: " + tensor_name(static_cast<int>(k)) + "'s tile buffer overflows");
    out[k] = {bytes, first[k], std::max(first[k], last[k])};
  }
  return out;
}

PatchSchedule schedule_patches(const PatchChainShape& chain, int64_t tile_rows, bool keep_rows) {
  const int output = check_chain(chain);
  const int64_t height = chain.rows[static_cast<size_t>(output)];
  if (tile_rows < 1) fail("patch chain: tiles of " + std::to_string(tile_rows) + " rows");
  PatchSchedule s;
  s.tile_rows = std::min(tile_rows, height);
  s.keep_rows = keep_rows;
  s.capacity.assign(chain.rows.size(), 0);
  // The rows of `held` a tile computes: all; or, keeping rows, those the tile before did not hold.
  const auto to_compute = [&](size_t k, const RowRange& held) {
    if (!keep_rows || s.tiles.empty()) return held;
    const RowRange prev = s.tiles.back()[k];
    return prev.lo <= held.lo && held.lo <= prev.hi ? RowRange{std::max(held.lo, prev.hi), held.hi} : held;
  };
  for (int64_t lo = 0; lo < height; lo += s.tile_rows) {
    std::vector<RowRange> rows(chain.rows.size(), kNone);
    rows[static_cast<size_t>(output)] = {lo, std::min(lo + s.tile_rows, height)};
    // Backwards: the rows each layer computes (what its readers need, less what is kept) give
    // the rows it reads.
    for (size_t l = chain.layers.size(); l-- > 0;) {
      const PatchLayer& p = chain.layers[l];
      const RowRange out = rows[static_cast<size_t>(p.output)];
      if (empty(out)) continue;
      const RowRange made = to_compute(static_cast<size_t>(p.output), out);
      if (empty(made)) continue;
      widen(rows[static_cast<size_t>(p.input)], layer_rows(chain, l, made).in);
      if (p.addend >= 0) widen(rows[static_cast<size_t>(p.addend)], made);
    }
    std::vector<RowRange> computed(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) {
      if (empty(rows[k])) rows[k] = {0, 0};
      computed[k] = to_compute(k, rows[k]);
      if (empty(computed[k])) computed[k] = {rows[k].hi, rows[k].hi};
      s.capacity[k] = std::max(s.capacity[k], rows[k].size());
    }
    s.tiles.push_back(std::move(rows));
    s.computed.push_back(std::move(computed));
  }
  // A fused Add reads its addend with its output's row stride: both buffers as tall as the taller.
  for (bool changed = true; changed;) {
    changed = false;
    for (const PatchLayer& p : chain.layers) {
      if (p.addend < 0) continue;
      int64_t& a = s.capacity[static_cast<size_t>(p.addend)];
      int64_t& o = s.capacity[static_cast<size_t>(p.output)];
      if (a != o) {
        a = o = std::max(a, o);
        changed = true;
      }
    }
  }
  s.frame = plan(Strategy::Auto, tile_buffers(chain, s.capacity, kept_across_tiles(s)), s.frame_align);
  return s;
}

std::optional<std::string> check_patch_schedule(const PatchChainShape& chain, const PatchSchedule& s) {
  const int output = check_chain(chain);
  const size_t n = chain.rows.size();
  if (s.capacity.size() != n) return "the schedule has " + std::to_string(s.capacity.size()) + " capacities for " + std::to_string(n) + " tensors";
  if (s.computed.size() != s.tiles.size()) return "the schedule has computed rows for " + std::to_string(s.computed.size()) + " of " + std::to_string(s.tiles.size()) + " tiles";
  int64_t covered = 0;
  for (size_t t = 0; t < s.tiles.size(); ++t) {
    const std::vector<RowRange>& rows = s.tiles[t];
    const std::vector<RowRange>& made = s.computed[t];
    const std::string at = "tile " + std::to_string(t);
    if (rows.size() != n || made.size() != n) return at + " has " + std::to_string(rows.size()) + " ranges for " + std::to_string(n) + " tensors";
    const RowRange own = rows[static_cast<size_t>(output)];
    if (own.lo != covered || empty(own) || !(made[static_cast<size_t>(output)] == own))
      return at + " writes output rows " + rows_string(own) + " where rows from " + std::to_string(covered) + " are next";
    covered = own.hi;
    for (size_t k = 0; k < n; ++k) {
      const std::string what = at + ": " + tensor_name(static_cast<int>(k));
      if (empty(rows[k])) continue;
      if (rows[k].lo < 0 || rows[k].hi > chain.rows[k])
        return what + " rows " + rows_string(rows[k]) + " lie outside its " + std::to_string(chain.rows[k]) + " rows";
      if (rows[k].size() > s.capacity[k])
        return what + " rows " + rows_string(rows[k]) + " overflow its tile buffer of " + std::to_string(s.capacity[k]) + " rows";
      // What a tile holds and does not compute, it kept from the tile before, which held it.
      if (made[k].hi != rows[k].hi || made[k].lo < rows[k].lo || made[k].lo > made[k].hi)
        return what + " computes rows " + rows_string(made[k]) + ", not the last of the rows " + rows_string(rows[k]) + " it holds";
      const RowRange kept{rows[k].lo, made[k].lo};
      if (!empty(kept) && (!s.keep_rows || t == 0 || !holds(s.tiles[t - 1][k], kept)))
        return what + " holds rows " + rows_string(kept) + " it neither computes nor kept from the tile before";
    }
    for (size_t l = 0; l < chain.layers.size(); ++l) {
      const PatchLayer& p = chain.layers[l];
      const RowRange out = made[static_cast<size_t>(p.output)];
      if (empty(out)) continue;
      const RowRange in = layer_rows(chain, l, out).in;
      if (!holds(rows[static_cast<size_t>(p.input)], in))
        return at + ": layer " + std::to_string(l) + " reads rows " + rows_string(in) + " of " + tensor_name(p.input) +
               ", which holds only " + rows_string(rows[static_cast<size_t>(p.input)]) + " (a halo short)";
      if (p.addend >= 0 && !holds(rows[static_cast<size_t>(p.addend)], out))
        return at + ": layer " + std::to_string(l) + " adds rows " + rows_string(out) + " of " + tensor_name(p.addend) +
               ", which holds only " + rows_string(rows[static_cast<size_t>(p.addend)]);
    }
  }
  if (covered != chain.rows[static_cast<size_t>(output)])
    return "the tiles cover output rows [0, " + std::to_string(covered) + ") of " +
           std::to_string(chain.rows[static_cast<size_t>(output)]);
  for (const PatchLayer& p : chain.layers)
    if (p.addend >= 0 && s.capacity[static_cast<size_t>(p.addend)] != s.capacity[static_cast<size_t>(p.output)])
      return tensor_name(p.addend) + " is added to " + tensor_name(p.output) + " with another row stride (" +
             std::to_string(s.capacity[static_cast<size_t>(p.addend)]) + " and " +
             std::to_string(s.capacity[static_cast<size_t>(p.output)]) + " rows)";
  if (auto e = find_placement_error(tile_buffers(chain, s.capacity, kept_across_tiles(s)), s.frame, s.frame_align))
    return "tile frame: " + *e;
  return std::nullopt;
}

std::vector<bool> kept_across_tiles(const PatchSchedule& s) {
  std::vector<bool> out(s.capacity.size(), false);
  for (size_t t = 0; t < s.tiles.size() && t < s.computed.size(); ++t)
    for (size_t k = 0; k < out.size() && k < s.tiles[t].size() && k < s.computed[t].size(); ++k)
      out[k] = out[k] || s.computed[t][k].lo > s.tiles[t][k].lo;
  return out;
}

std::vector<int64_t> recomputed_rows(const PatchChainShape& chain, const PatchSchedule& s) {
  std::vector<int64_t> out;
  for (const PatchLayer& p : chain.layers) {
    std::vector<RowRange> made;
    for (const std::vector<RowRange>& rows : s.computed)
      if (const RowRange r = rows.at(static_cast<size_t>(p.output)); !empty(r)) made.push_back(r);
    std::sort(made.begin(), made.end(), [](const RowRange& a, const RowRange& b) { return a.lo < b.lo; });
    int64_t total = 0, distinct = 0, reach = std::numeric_limits<int64_t>::min();
    for (const RowRange& r : made) {
      total += r.size();
      distinct += std::max<int64_t>(0, r.hi - std::max(r.lo, reach));
      reach = std::max(reach, r.hi);
    }
    out.push_back(total - distinct);
  }
  return out;
}

}  // namespace memplan::plan
