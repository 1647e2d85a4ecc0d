// best-fit: what a good dynamic allocator would do, simulated in execution order. It only knows the
// past, so it is the reference for what planning ahead (the greedy strategies) buys.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "plan/core/prepare.h"
#include "plan/core/strategies.h"

namespace memplan::plan {
namespace {

// The free blocks below the top of the frame, indexed twice: by offset, to coalesce neighbours on
// release; by (size, offset), to find the smallest block that fits in O(log n).
class FreeList {
 public:
  uint64_t allocate(uint32_t id, uint64_t size) {
    if (auto fit = by_size_.lower_bound({size, 0}); fit != by_size_.end()) {
      const auto [block_size, offset] = *fit;
      remove(by_offset_.find(offset));
      if (block_size > size) add(offset + size, block_size - size);  // split: keep the rest free
      return offset;
    }
    // Nothing fits: grow the frame, starting inside the free block at the top if there is one.
    uint64_t offset = top_;
    if (!by_offset_.empty()) {
      if (auto highest = std::prev(by_offset_.end()); highest->first + highest->second == top_) {
        offset = highest->first;
        remove(highest);
      }
    }
    top_ = detail::add_or_fail(offset, size, [id] { return "best-fit plan: buffer " + std::to_string(id); });
    return offset;
  }

  void release(uint64_t offset, uint64_t size) {
    auto next = by_offset_.lower_bound(offset);
    if (next != by_offset_.begin()) {
      if (auto prev = std::prev(next); prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        remove(prev);
      }
    }
    if (next != by_offset_.end() && offset + size == next->first) {
      size += next->second;
      remove(next);
    }
    add(offset, size);
  }

  uint64_t top() const { return top_; }

 private:
  void add(uint64_t offset, uint64_t size) {
    by_offset_.emplace(offset, size);
    by_size_.emplace(size, offset);
  }
  void remove(std::map<uint64_t, uint64_t>::iterator block) {
    by_size_.erase({block->second, block->first});
    by_offset_.erase(block);
  }

  std::map<uint64_t, uint64_t> by_offset_;              // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;    // (size, offset)
  uint64_t top_ = 0;                                   // the frame so far; free blocks lie below it
};

}  // namespace

Placement plan_best_fit(std::span<const BufferRequest> requests, uint64_t align) {
  const detail::Prepared p = detail::prepare(requests, align);
  // Two event lists instead of a loop over steps: allocations by first step (larger first within a
  // step, so that small buffers fill the leftovers), releases by last step.
  std::vector<uint32_t> starts, ends;
  for (uint32_t id = 0; id < p.sizes.size(); ++id)
    if (p.sizes[id] != 0) starts.push_back(id);  // zero-size buffers occupy nothing: offset 0
  ends = starts;
  std::sort(starts.begin(), starts.end(), [&](uint32_t a, uint32_t b) {
    if (p.first[a] != p.first[b]) return p.first[a] < p.first[b];
    return detail::larger_first(p, a, b);
  });
  std::sort(ends.begin(), ends.end(), [&](uint32_t a, uint32_t b) {
    return p.last[a] != p.last[b] ? p.last[a] < p.last[b] : a < b;
  });

  Placement out{std::vector<uint64_t>(p.sizes.size(), 0), 0};
  FreeList free;
  size_t next_end = 0;
  for (size_t i = 0; i < starts.size();) {
    const uint32_t step = p.first[starts[i]];
    // A buffer whose last step is `step` is still read there, so only earlier ones are freed.
    for (; next_end < ends.size() && p.last[ends[next_end]] < step; ++next_end)
      free.release(out.offsets[ends[next_end]], p.sizes[ends[next_end]]);
    for (; i < starts.size() && p.first[starts[i]] == step; ++i)
      out.offsets[starts[i]] = free.allocate(starts[i], p.sizes[starts[i]]);
  }
  out.frame_bytes = free.top();
  return out;
}

}  // namespace memplan::plan
