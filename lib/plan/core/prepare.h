// Internal helpers shared by the strategies, the lower bound and the checker. Not part of the
// planner's interface: include buffers.h / strategies.h instead.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/core/buffers.h"
#include "util/checked.h"

namespace memplan::plan::detail {

// Fails (memplan::Error) unless align is a power of two >= 1.
void check_align(uint64_t align);

// The requests after validation, in the form every strategy wants: sizes rounded up to align and
// lifetimes in compressed time. `steps` holds the distinct steps at which some buffer starts or ends,
// sorted; first[i] and last[i] index into it. Between two consecutive such steps nothing starts or
// ends, so any other step's live set is a subset of a neighbour's: the planners only need these, and
// sparse or huge step numbers cost nothing.
struct Prepared {
  std::vector<uint64_t> sizes;
  std::vector<uint32_t> first;
  std::vector<uint32_t> last;
  std::vector<int32_t> steps;
};

// checked_add / align_up with the error message built only when they fail: the hot loops run them
// once per buffer, and formatting a name per call would cost more than the planning.
template <class What>
uint64_t add_or_fail(uint64_t a, uint64_t b, What&& what) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return checked_add(a, b, what());  // throws
  return sum;
}
template <class What>
uint64_t align_or_fail(uint64_t size, uint64_t align, What&& what) {
  if (size > UINT64_MAX - (align - 1)) return align_up(size, align, what());  // throws
  return (size + align - 1) & ~(align - 1);
}

// Validates align, first <= last and the aligned sizes (naming the buffer at fault), then compresses.
Prepared prepare(std::span<const BufferRequest> requests, uint64_t align);

// breadth[p] = the sum of the aligned sizes live at compressed step p (checked for overflow).
std::vector<uint64_t> breadths(const Prepared& prepared);

// The order greedy-by-size uses, and greedy-by-breadth within a step: larger first, then the earlier
// first step, then the lower index, so that equal inputs always give equal plans.
inline bool larger_first(const Prepared& p, uint32_t a, uint32_t b) {
  if (p.sizes[a] != p.sizes[b]) return p.sizes[a] > p.sizes[b];
  if (p.first[a] != p.first[b]) return p.first[a] < p.first[b];
  return a < b;
}

}  // namespace memplan::plan::detail
