// The placement checker. It re-derives everything from the requests and trusts nothing the planner
// recorded, so a planner bug shows up here as a one-line description instead of corrupted tensors.
#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <string>

#include "plan/core/buffers.h"
#include "plan/core/prepare.h"

namespace memplan::plan {
namespace {

std::string describe(std::span<const BufferRequest> requests, const detail::Prepared& p,
                     const std::vector<uint64_t>& offsets, uint32_t id) {
  return "buffer " + std::to_string(id) + " (steps [" + std::to_string(requests[id].first) + ", " +
         std::to_string(requests[id].last) + "], bytes [" + std::to_string(offsets[id]) + ", " +
         std::to_string(offsets[id] + p.sizes[id]) + "))";
}

}  // namespace

std::optional<std::string> find_placement_error(std::span<const BufferRequest> requests,
                                                const Placement& placement, uint64_t align) {
  const detail::Prepared p = detail::prepare(requests, align);
  const std::vector<uint64_t>& offsets = placement.offsets;
  const size_t n = p.sizes.size();
  if (offsets.size() != n) {
    return "placement has " + std::to_string(offsets.size()) + " offsets for " + std::to_string(n) + " buffers";
  }
  for (size_t i = 0; i < n; ++i) {
    if (offsets[i] % align != 0) {
      return "buffer " + std::to_string(i) + ": offset " + std::to_string(offsets[i]) +
             " is not a multiple of the alignment " + std::to_string(align);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    uint64_t end;
    if (__builtin_add_overflow(offsets[i], p.sizes[i], &end) || end > placement.frame_bytes) {
      return "buffer " + std::to_string(i) + ": offset " + std::to_string(offsets[i]) + " + size " +
             std::to_string(p.sizes[i]) + " ends past the frame of " + std::to_string(placement.frame_bytes) + " bytes";
    }
  }

  // Sweep through time keeping the live buffers ordered by offset. Until a violation is found they
  // are pairwise disjoint, so a buffer that starts can only collide with its two neighbours there.
  std::vector<uint32_t> starts;
  for (uint32_t id = 0; id < n; ++id)
    if (p.sizes[id] != 0) starts.push_back(id);  // zero-size buffers occupy no byte
  std::vector<uint32_t> ends = starts;
  std::sort(starts.begin(), starts.end(), [&](uint32_t a, uint32_t b) {
    return p.first[a] != p.first[b] ? p.first[a] < p.first[b] : a < b;
  });
  std::sort(ends.begin(), ends.end(), [&](uint32_t a, uint32_t b) {
    return p.last[a] != p.last[b] ? p.last[a] < p.last[b] : a < b;
  });
  std::map<uint64_t, uint32_t> live;  // offset -> id
  size_t next_end = 0;
  for (uint32_t id : starts) {
    for (; next_end < ends.size() && p.last[ends[next_end]] < p.first[id]; ++next_end)
      live.erase(offsets[ends[next_end]]);
    const uint64_t begin = offsets[id], end = begin + p.sizes[id];
    auto next = live.lower_bound(begin);
    uint32_t other = UINT32_MAX;
    if (next != live.end() && next->first < end) other = next->second;
    else if (next != live.begin() && offsets[std::prev(next)->second] + p.sizes[std::prev(next)->second] > begin)
      other = std::prev(next)->second;
    if (other != UINT32_MAX) {
      return describe(requests, p, offsets, std::min(id, other)) + " and " +
             describe(requests, p, offsets, std::max(id, other)) + " are live at the same step and share bytes";
    }
    live.emplace(begin, id);
  }
  return std::nullopt;
}

}  // namespace memplan::plan
