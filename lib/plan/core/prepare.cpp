#include "plan/core/prepare.h"

#include <algorithm>
#include <bit>
#include <string>

namespace memplan::plan::detail {

void check_align(uint64_t align) {
  if (!std::has_single_bit(align)) fail("plan: alignment " + std::to_string(align) + " is not a power of two");
}

Prepared prepare(std::span<const BufferRequest> requests, uint64_t align) {
  check_align(align);
  const size_t n = requests.size();
  // Buffer ids and compressed steps are 32-bit to keep the indexes small.
  if (n > UINT32_MAX / 2) fail("plan: too many buffers (" + std::to_string(n) + ")");
  Prepared p;
  p.sizes.reserve(n);
  p.steps.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const BufferRequest& r = requests[i];
    auto name = [i] { return "plan: buffer " + std::to_string(i); };
    if (r.first > r.last) {
      fail(name() + ": first step " + std::to_string(r.first) + " is after last step " + std::to_string(r.last));
    }
    p.sizes.push_back(align_or_fail(r.size, align, name));
    p.steps.push_back(r.first);
    p.steps.push_back(r.last);
  }
  std::sort(p.steps.begin(), p.steps.end());
  p.steps.erase(std::unique(p.steps.begin(), p.steps.end()), p.steps.end());
  auto index_of = [&](int32_t step) {
    return static_cast<uint32_t>(std::lower_bound(p.steps.begin(), p.steps.end(), step) - p.steps.begin());
  };
  p.first.reserve(n);
  p.last.reserve(n);
  for (const BufferRequest& r : requests) {
    p.first.push_back(index_of(r.first));
    p.last.push_back(index_of(r.last));
  }
  return p;
}

std::vector<uint64_t> breadths(const Prepared& p) {
  // A difference sweep over compressed steps: what starts at step s, and what ended just before it.
  const size_t t = p.steps.size();
  auto live_at = [&p](size_t s) {
    return [&p, s] { return "plan: buffers live at step " + std::to_string(p.steps[s]); };
  };
  std::vector<uint64_t> starting(t, 0), ended(t + 1, 0);
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    const uint32_t f = p.first[i], l = p.last[i];
    starting[f] = add_or_fail(starting[f], p.sizes[i], live_at(f));
    ended[l + 1] = add_or_fail(ended[l + 1], p.sizes[i], live_at(l));
  }
  std::vector<uint64_t> breadth(t);
  uint64_t live = 0;
  for (size_t s = 0; s < t; ++s) {
    live -= ended[s];  // cannot wrap: every buffer that ended was added to `live` before
    live = add_or_fail(live, starting[s], live_at(s));
    breadth[s] = live;
  }
  return breadth;
}

}  // namespace memplan::plan::detail

namespace memplan::plan {

uint64_t lower_bound(std::span<const BufferRequest> requests, uint64_t align) {
  const std::vector<uint64_t> b = detail::breadths(detail::prepare(requests, align));
  return b.empty() ? 0 : *std::max_element(b.begin(), b.end());
}

}  // namespace memplan::plan
