// greedy-by-size (Pisarchyk & Lee 2020, "Greedy by Size for offset calculation"). Placing the large
// buffers first lets the small ones fill the gaps left between them, the way one packs a suitcase.
#include <algorithm>
#include <numeric>

#include "plan/core/gap_placer.h"
#include "plan/core/strategies.h"

namespace memplan::plan {

Placement plan_greedy_by_size(std::span<const BufferRequest> requests, uint64_t align) {
  const detail::Prepared p = detail::prepare(requests, align);
  std::vector<uint32_t> order(p.sizes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return detail::larger_first(p, a, b); });

  detail::GapPlacer placer(p);
  for (uint32_t id : order) placer.place(id);
  return std::move(placer).finish();
}

}  // namespace memplan::plan
