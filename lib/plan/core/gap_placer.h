// Internal: the placement rule the two greedy strategies share, and the index that makes it fast.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "plan/core/buffers.h"
#include "plan/core/prepare.h"

namespace memplan::plan::detail {

// Which buffers are live at a step, over compressed steps [0, num_steps). A segment tree (the
// bottom-up kind, any size) whose nodes hold the buffers whose lifetime covers the node's whole range:
// each lifetime lands in O(log T) nodes, and the buffers live at step p are exactly those held by the
// nodes on the path from p's leaf to the root, each once. So a query costs O(log T + answer) however
// long the lifetimes are, where a per-step list would copy a long-lived buffer into every step.
class StabIndex {
 public:
  explicit StabIndex(size_t num_steps) : leaves_(num_steps), nodes_(2 * num_steps) {}

  void insert(uint32_t first, uint32_t last, uint32_t id) {
    for (size_t lo = first + leaves_, hi = last + 1 + leaves_; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) nodes_[lo++].push_back(id);
      if (hi & 1) nodes_[--hi].push_back(id);
    }
  }

  template <class F>
  void for_each_live(uint32_t step, F&& f) const {
    for (size_t node = step + leaves_; node > 0; node /= 2)
      for (uint32_t id : nodes_[node]) f(id);
  }

  // Appends the buffers live at `step` to `out` and empties the nodes that held them, for a caller
  // that consumes every buffer live at a step at once: each node is emptied once, O(n log T) over a
  // whole run. A lifetime also sits in nodes off this path, so a buffer can come back from a later
  // step: the caller skips the ones it has already handled.
  void take_live(uint32_t step, std::vector<uint32_t>& out) {
    for (size_t node = step + leaves_; node > 0; node /= 2) {
      out.insert(out.end(), nodes_[node].begin(), nodes_[node].end());
      std::vector<uint32_t>().swap(nodes_[node]);
    }
  }

 private:
  size_t leaves_;
  std::vector<std::vector<uint32_t>> nodes_;
};

// Places buffers one at a time with Pisarchyk & Lee's rule: take the already placed buffers whose
// lifetimes overlap the new one, sorted by offset; choose the smallest gap between them (counting the
// gap at offset 0) that fits; if none does, go just above the highest of them. Only buffers that
// overlap are ever looked at: those live at the new buffer's first step (a StabIndex), plus those
// that start later within its lifetime (a slice of all buffers sorted by first step, skipping the
// ones not placed yet). In DNN graphs most lifetimes are short, so that is a handful per buffer
// instead of every buffer placed so far.
class GapPlacer {
 public:
  explicit GapPlacer(const Prepared& prepared);

  // Places buffer `id` (not placed yet). Zero-size buffers stay at offset 0 and are not indexed.
  void place(uint32_t id);

  Placement finish() && { return Placement{std::move(offsets_), frame_}; }

 private:
  const Prepared& p_;
  std::vector<uint64_t> offsets_;
  std::vector<bool> placed_;
  StabIndex live_;                     // placed buffers, by the steps they are live at
  std::vector<uint32_t> by_first_;     // every buffer, sorted by first step
  std::vector<uint32_t> step_begin_;   // by_first_[step_begin_[s]...] are those starting at step >= s
  std::vector<std::pair<uint64_t, uint64_t>> overlapping_;  // scratch: (offset, end), reused
  uint64_t frame_ = 0;
};

}  // namespace memplan::plan::detail
