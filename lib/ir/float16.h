// IEEE 754 half precision (float16) and bfloat16 elements, stored as their 16 bits and computed on
// as float: float holds every value of both exactly, and for + - * / its 24-bit significand is wide
// enough that rounding the float result again gives the correctly rounded 16-bit result.
// Conversions to them round to nearest even, once, from double (so float and double sources both
// round correctly); NaN stays NaN and values past the largest finite one become infinity.
#pragma once

#include <cstdint>
#include <type_traits>

namespace memplan {

float half_to_float(uint16_t bits);
uint16_t half_from_double(double v);
// Whole arrays, as the functions above give them element by element (F16C's conversions where the
// CPU has them: the same rounding to nearest even; a NaN may keep other payload bits).
void halves_from_floats(const float* x, uint16_t* y, uint64_t n);
void floats_from_halves(const uint16_t* x, float* y, uint64_t n);
float bfloat16_to_float(uint16_t bits);
uint16_t bfloat16_from_double(double v);

template <bool Brain>
struct Float16Of {
  uint16_t bits = 0;

  Float16Of() = default;
  // From any arithmetic value (rounded to nearest even), so T(x) works as for float and double.
  template <typename A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
  Float16Of(A v) : bits(Brain ? bfloat16_from_double(static_cast<double>(v)) : half_from_double(static_cast<double>(v))) {}
  static Float16Of from_bits(uint16_t b) {
    Float16Of h;
    h.bits = b;
    return h;
  }
  operator float() const { return Brain ? bfloat16_to_float(bits) : half_to_float(bits); }
};

using Float16 = Float16Of<false>;
using BFloat16 = Float16Of<true>;

// True for the 16-bit float element types.
template <typename T>
inline constexpr bool is_float16_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
// True for every floating-point element type (float, double, float16, bfloat16).
template <typename T>
inline constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_float16_v<T>;
// The type arithmetic on T is done in: float for the 16-bit types, T otherwise.
template <typename T>
using compute_t = std::conditional_t<is_float16_v<T>, float, T>;

}  // namespace memplan
