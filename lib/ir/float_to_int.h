// Float to integer conversion defined for every input (shared by the Cast kernel, Pow on
// integers and constant folding, so a folded Cast gives what the kernel would).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace memplan {

// Float to integer conversion defined for every input: in range it truncates toward zero; NaN and
// values out of range give what x86 (and so onnxruntime) gives: the most negative int64 or int32;
// types narrower than 32 bits go through int32 and wrap, as C casts compile.
template <typename To>
To float_to_int(double x) {
  if constexpr (sizeof(To) == 8) {
    if constexpr (std::is_unsigned_v<To>)
      if (x >= 0x1p63 && x < 0x1p64) return static_cast<To>(x);
    const int64_t i = x >= -0x1p63 && x < 0x1p63 ? static_cast<int64_t>(x) : std::numeric_limits<int64_t>::min();
    return static_cast<To>(i);
  } else if constexpr (std::is_same_v<To, uint32_t>) {
    const int64_t i = x >= -0x1p63 && x < 0x1p63 ? static_cast<int64_t>(x) : std::numeric_limits<int64_t>::min();
    return static_cast<To>(i);
  } else {
    const int32_t i = x > -0x1p31 - 1 && x < 0x1p31 ? static_cast<int32_t>(x) : std::numeric_limits<int32_t>::min();
    return static_cast<To>(i);
  }
}

}  // namespace memplan
