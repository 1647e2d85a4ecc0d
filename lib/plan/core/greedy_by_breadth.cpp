// greedy-by-breadth (Pisarchyk & Lee 2020, "Greedy by Breadth"). The widest step is what the frame must
// hold at least, so its buffers are packed first and everything else is fitted around them.
#include <algorithm>
#include <numeric>

#include "plan/core/gap_placer.h"
#include "plan/core/strategies.h"

namespace memplan::plan {

Placement plan_greedy_by_breadth(std::span<const BufferRequest> requests, uint64_t align) {
  const detail::Prepared p = detail::prepare(requests, align);
  const std::vector<uint64_t> breadth = detail::breadths(p);
  std::vector<uint32_t> steps(breadth.size());
  std::iota(steps.begin(), steps.end(), 0u);
  std::stable_sort(steps.begin(), steps.end(), [&](uint32_t a, uint32_t b) { return breadth[a] > breadth[b]; });

  // Every buffer live at a step is placed when that step is processed, so the index can hand each
  // buffer out and forget it (StabIndex::take_live) instead of listing every step's live set.
  detail::StabIndex unplaced(p.steps.size());
  for (uint32_t id = 0; id < p.sizes.size(); ++id)
    if (p.sizes[id] != 0) unplaced.insert(p.first[id], p.last[id], id);

  detail::GapPlacer placer(p);
  std::vector<bool> placed(p.sizes.size(), false);
  std::vector<uint32_t> live;
  for (uint32_t step : steps) {
    live.clear();
    unplaced.take_live(step, live);
    std::erase_if(live, [&](uint32_t id) { return placed[id]; });
    for (uint32_t id : live) placed[id] = true;
    std::sort(live.begin(), live.end(), [&](uint32_t a, uint32_t b) { return detail::larger_first(p, a, b); });
    for (uint32_t id : live) placer.place(id);
  }
  return std::move(placer).finish();  // zero-size buffers were never indexed: they stay at 0
}

}  // namespace memplan::plan
