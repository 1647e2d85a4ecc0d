// Element types as C++ types: the DType of each, lists of them, and dispatch from a DType known at
// load to a kernel template instantiated per type. Shared by the plain C++ kernels of every family.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/float16.h"
#include "ir/float_to_int.h"

namespace memplan::rt {

// Stands for bool in type lists; stored as a byte (0 or 1 written, non-zero read as true).
struct BoolTag {};

template <typename T>
constexpr DType dtype_for() {
  if constexpr (std::is_same_v<T, BoolTag>) return DType::Bool;
  else if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, Float16>) return DType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::BFloat16;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::Uint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::Uint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::Uint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::Uint64;
  else return DType::Undefined;
}

template <typename... Ts>
struct Types {};
using FloatTypes = Types<float, double>;
using IntTypes = Types<int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using SignedIntTypes = Types<int64_t, int32_t, int16_t, int8_t>;
using NumericTypes = Types<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t>;
// With float16 and bfloat16, which compute as float (ir/float16.h).
using AllFloatTypes = Types<float, double, Float16, BFloat16>;
using AllNumericTypes =
    Types<float, double, Float16, BFloat16, int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t>;

// Calls f(T{}) for the T of `t` in the list; false when `t` is not in it.
template <typename F, typename... Ts>
bool dispatch(DType t, Types<Ts...>, F&& f) {
  return ((t == dtype_for<Ts>() ? (f(Ts{}), true) : false) || ...);
}

// True when `t` is in the list.
template <typename... Ts>
constexpr bool one_of(DType t, Types<Ts...>) {
  return ((t == dtype_for<Ts>()) || ...);
}

// Calls f(std::integral_constant<size_t, N>) for element sizes 1, 2, 4, 8; false otherwise.
template <typename F>
bool dispatch_size(uint32_t size, F&& f) {
  switch (size) {
    case 1: f(std::integral_constant<size_t, 1>{}); return true;
    case 2: f(std::integral_constant<size_t, 2>{}); return true;
    case 4: f(std::integral_constant<size_t, 4>{}); return true;
    case 8: f(std::integral_constant<size_t, 8>{}); return true;
    default: return false;
  }
}

using memplan::float_to_int;  // ir/float_to_int.h

}  // namespace memplan::rt
