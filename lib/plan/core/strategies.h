// The offset-assignment strategies. Each one lives in its own .cpp and is a plain function from a list
// of buffers to a Placement; see buffers.h for the types and the shared semantics:
//  - align must be a power of two >= 1, else memplan::Error; every size is rounded up to align first,
//    so every offset is a multiple of align;
//  - zero-size buffers get offset 0 and never conflict with anything;
//  - a request with first > last, or sizes whose sums overflow 64 bits, throw memplan::Error.
// All strategies are deterministic: the same list always gives the same offsets.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "plan/core/buffers.h"

namespace memplan::plan {

enum class Strategy { Naive, BestFit, GreedyBySize, GreedyByBreadth, Auto };

// "naive", "best-fit", "greedy-by-size", "greedy-by-breadth", "auto".
std::string_view strategy_name(Strategy strategy);
std::optional<Strategy> parse_strategy(std::string_view name);
// The four strategies Auto chooses from, in tie-break order: Naive, BestFit, GreedyBySize, GreedyByBreadth.
const std::vector<Strategy>& concrete_strategies();

// Every buffer its own bytes, back to back in request order. The baseline the others are compared to.
Placement plan_naive(std::span<const BufferRequest> requests, uint64_t align);

// An allocator simulation in execution order. At each step, first free the buffers whose last step has
// passed (coalescing neighbouring free blocks), then allocate the buffers that start there, larger
// first (ties: lower index), each into the smallest free block that fits; when none fits, the block
// at the top of the frame is reused and the frame grows, or the buffer goes on top.
Placement plan_best_fit(std::span<const BufferRequest> requests, uint64_t align);

// Pisarchyk & Lee 2020, "Greedy by Size for offset calculation": buffers by decreasing size (ties:
// earlier first step, then lower index); each goes into the smallest gap that fits between the already
// placed buffers whose lifetimes overlap its own (sorted by offset, counting the gap at offset 0),
// else just above the highest of them.
Placement plan_greedy_by_size(std::span<const BufferRequest> requests, uint64_t align);

// Pisarchyk & Lee 2020, "Greedy by Breadth": steps by decreasing breadth (the sum of sizes live there;
// ties: earlier step); at each, its not yet placed live buffers by decreasing size (ties as above),
// each placed with the same smallest-gap rule as greedy-by-size.
Placement plan_greedy_by_breadth(std::span<const BufferRequest> requests, uint64_t align);

// Runs one strategy. Auto runs the four concrete ones and keeps the smallest frame (ties: the earliest
// in concrete_strategies() order).
Placement plan(Strategy strategy, std::span<const BufferRequest> requests, uint64_t align);

}  // namespace memplan::plan
