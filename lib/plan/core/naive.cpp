// naive: every buffer its own bytes, back to back in request order. No reuse at all: the baseline.
#include <string>

#include "plan/core/prepare.h"
#include "plan/core/strategies.h"

namespace memplan::plan {

Placement plan_naive(std::span<const BufferRequest> requests, uint64_t align) {
  const detail::Prepared p = detail::prepare(requests, align);
  Placement out{std::vector<uint64_t>(p.sizes.size(), 0), 0};
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    if (p.sizes[i] == 0) continue;  // occupies nothing: stays at 0
    out.offsets[i] = out.frame_bytes;
    out.frame_bytes = detail::add_or_fail(out.frame_bytes, p.sizes[i], [i] { return "naive plan: buffer " + std::to_string(i); });
  }
  return out;
}

}  // namespace memplan::plan
