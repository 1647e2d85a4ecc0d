// Where a planned frame is fullest, counting storage groups once: what the report shows as the
// peak and what kernel selection looks at to lower it.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace memplan::plan {

// Bytes of a frame in use: a buffer with bytes of its own, or a storage group (its root's bytes,
// live from its first member's first step to its last member's last).
struct Storage {
  const PlannedBuffer* root = nullptr;
  std::vector<const PlannedBuffer*> members;  // the others sharing its bytes
  int32_t first = 0, last = 0;
};

std::vector<Storage> storages_of(const GraphPlan& g);

struct Peak {
  int32_t step = 0;
  uint64_t bytes = 0;
  std::vector<Storage> live;  // largest first
};

// The step of `g` where the most bytes are live (the first such), and what is live there.
Peak peak_of(const GraphPlan& g);

}  // namespace memplan::plan
