#include "plan/core/gap_placer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

namespace memplan::plan::detail {

GapPlacer::GapPlacer(const Prepared& prepared)
    : p_(prepared),
      offsets_(prepared.sizes.size(), 0),
      placed_(prepared.sizes.size(), false),
      live_(prepared.steps.size()),
      by_first_(prepared.sizes.size()),
      step_begin_(prepared.steps.size() + 1, 0) {
  // A counting sort by first step: step_begin_ ends up as the start of each step's slice.
  for (uint32_t first : p_.first) ++step_begin_[first + 1];
  std::partial_sum(step_begin_.begin(), step_begin_.end(), step_begin_.begin());
  std::vector<uint32_t> next(step_begin_.begin(), step_begin_.end() - 1);
  for (uint32_t id = 0; id < p_.first.size(); ++id) by_first_[next[p_.first[id]]++] = id;
}

void GapPlacer::place(uint32_t id) {
  const uint64_t size = p_.sizes[id];
  if (size == 0) return;
  const uint32_t first = p_.first[id], last = p_.last[id];

  overlapping_.clear();
  auto add = [&](uint32_t other) { overlapping_.emplace_back(offsets_[other], offsets_[other] + p_.sizes[other]); };
  live_.for_each_live(first, add);  // started at or before `first`, still live there
  for (uint32_t i = step_begin_[first + 1]; i < step_begin_[last + 1]; ++i)
    if (placed_[by_first_[i]]) add(by_first_[i]);  // start later, within our lifetime
  std::sort(overlapping_.begin(), overlapping_.end());

  // `top` is the highest end seen so far: a gap is the space between it and the next buffer's offset.
  uint64_t top = 0, best_offset = 0, best_gap = std::numeric_limits<uint64_t>::max();
  bool found = false;
  for (const auto& [offset, end] : overlapping_) {
    if (offset > top && offset - top >= size && offset - top < best_gap) {
      best_gap = offset - top;
      best_offset = top;
      found = true;
    }
    top = std::max(top, end);  // no overflow: checked when that buffer was placed
  }
  const uint64_t offset = found ? best_offset : top;
  const uint64_t end = add_or_fail(offset, size, [id] { return "plan: buffer " + std::to_string(id) + " end"; });

  offsets_[id] = offset;
  placed_[id] = true;
  frame_ = std::max(frame_, end);
  live_.insert(first, last, id);
}

}  // namespace memplan::plan::detail
