// Overflow-checked arithmetic for sizes that come from untrusted files.
#pragma once

#include <cstdint>
#include <string>

#include "memplan/error.h"

namespace memplan {

// a + b, or an InvalidInput error naming `what` when the sum does not fit in 64 bits.
inline uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(what + ": size overflows 64 bits");
  return r;
}

inline uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(what + ": size overflows 64 bits");
  return r;
}

// Rounds `size` up to a multiple of `align` (a power of two), checking for overflow.
inline uint64_t align_up(uint64_t size, uint64_t align, const std::string& what) {
  return checked_add(size, align - 1, what) & ~(align - 1);
}

}  // namespace memplan
