// Element types beyond float32/int64 in the elementwise kernels (float64, float16, bfloat16, the
// small and unsigned integers), the float16/bfloat16 conversions, Cast to and from them, the
// trigonometric and other unary ops that run as plain loops, IsNaN/IsInf, BitShift, mixed-type Pow
// and Clip with bounds computed at run time. Exact values, hand-computed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ir/float16.h"
#include "memplan/error.h"
#include "support/kernel_harness.h"

namespace {

using memplan::DType;
using memplan::ErrorKind;
using memplan::Value;
using memplan::test::KernelCase;
using memplan::test::scaled;
using Dims = std::vector<int64_t>;
using Setup = std::function<void(KernelCase&)>;

constexpr DType F32 = DType::Float32, F64 = DType::Float64, F16 = DType::Float16, BF16 = DType::BFloat16;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs a one-output op on inputs given as doubles (converted to each input's dtype) and returns
// the output as Out. `varies` marks every shape as known only at run time (the loop paths).
struct Input {
  std::string name;
  DType dtype;
  Dims dims;
  std::vector<double> values;
  bool constant = false;
};

template <typename Out>
std::vector<Out> run(const std::string& op, const std::vector<Input>& inputs, DType out_dtype, const Dims& out_dims,
                     const Setup& setup = {}, int64_t opset = 17, bool varies = false) {
  KernelCase k(op, opset);
  for (const Input& in : inputs) {
    if (in.name.empty()) {
      k.omitted_input();
      continue;
    }
    k.input(in.name, in.dtype, in.dims, in.values, in.constant)->shape_varies = varies;
  }
  if (setup) setup(k);
  k.output("y", out_dtype, out_dims)->shape_varies = varies;
  REQUIRE(k.run());
  return k.result_as<Out>(0);
}

// A one-input op whose output has the input's type and shape.
template <typename T>
std::vector<T> unary(const std::string& op, DType dtype, const std::vector<double>& x, const Setup& setup = {},
                     bool varies = false) {
  const Dims dims{static_cast<int64_t>(x.size())};
  return run<T>(op, {{"x", dtype, dims, x}}, dtype, dims, setup, 17, varies);
}

// Relative beyond 1, absolute below it; a NaN wants a NaN, an infinity the same infinity.
const memplan::test::RequireClose require_close{memplan::test::scaled(1e-6)};

std::vector<double> halves(const std::vector<uint16_t>& bits) {
  std::vector<double> out;
  for (uint16_t b : bits) out.push_back(memplan::half_to_float(b));
  return out;
}

}  // namespace

// ---- float16 / bfloat16 conversions ----

TEST_CASE("float16 conversions round to nearest even and keep NaN and infinities", "[elt-types]") {
  using memplan::half_from_double;
  using memplan::half_to_float;
  CHECK(half_from_double(1.0) == 0x3C00);
  CHECK(half_from_double(-2.0) == 0xC000);
  CHECK(half_from_double(-0.0) == 0x8000);
  CHECK(half_from_double(65504.0) == 0x7BFF);  // the largest finite half
  CHECK(half_from_double(65519.0) == 0x7BFF);  // below the midpoint to 2^16
  CHECK(half_from_double(65520.0) == 0x7C00);  // the midpoint rounds to even: infinity
  CHECK(half_from_double(1e9) == 0x7C00);
  CHECK(half_from_double(-kInf) == 0xFC00);
  CHECK(half_from_double(std::ldexp(1.0, -24)) == 0x0001);      // the smallest subnormal
  CHECK(half_from_double(std::ldexp(1.0, -25)) == 0x0000);      // half of it: tie to even (0)
  CHECK(half_from_double(std::ldexp(3.0, -25)) == 0x0002);      // 1.5 quanta: tie to even (2)
  CHECK(half_from_double(std::ldexp(1023.5, -24)) == 0x0400);   // carries into the smallest normal
  CHECK(half_from_double(1.0 + std::ldexp(1.0, -11)) == 0x3C00);  // tie between 1 and 1 + 2^-10: even
  CHECK(half_from_double(1.0 + std::ldexp(3.0, -11)) == 0x3C02);  // tie: to the even neighbour above
  // One rounding from double: via float, 1 + 2^-11 + 2^-40 would become the tie 1 + 2^-11 and round
  // down to 1; directly it is above the tie and rounds up.
  CHECK(half_from_double(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) == 0x3C01);
  const uint16_t nan = half_from_double(kNaN);
  CHECK((nan & 0x7C00) == 0x7C00);
  CHECK((nan & 0x03FF) != 0);

  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0xC000) == -2.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x8200) == -std::ldexp(1.0f, -15));  // a negative subnormal
  CHECK(half_to_float(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(half_to_float(0x7E00)));
  CHECK(std::signbit(half_to_float(0x8000)));
}

TEST_CASE("bfloat16 conversions round to nearest even", "[elt-types]") {
  using memplan::bfloat16_from_double;
  using memplan::bfloat16_to_float;
  CHECK(bfloat16_from_double(1.0) == 0x3F80);
  CHECK(bfloat16_from_double(1.0 + std::ldexp(1.0, -8)) == 0x3F80);  // tie: even
  CHECK(bfloat16_from_double(1.0 + std::ldexp(3.0, -8)) == 0x3F82);  // tie: even above
  CHECK(bfloat16_from_double(1.0 + std::ldexp(5.0, -10)) == 0x3F81);  // above the tie
  CHECK(bfloat16_from_double(0.47892547) == 16117);  // ONNX's Cast test input, rounded (not truncated)
  CHECK(bfloat16_from_double(0.48033667) == 16118);
  CHECK(bfloat16_from_double(3.3895e38) == 0x7F7F);  // the largest finite bfloat16, ~3.38953e38
  CHECK(bfloat16_from_double(3.4e38) == 0x7F80);     // past the midpoint to 2^128 (~3.39617e38)
  CHECK(bfloat16_from_double(-kInf) == 0xFF80);
  CHECK(bfloat16_from_double(kNaN) == 0x7FC0);
  CHECK(bfloat16_from_double(std::ldexp(1.0, -133)) == 0x0001);  // the smallest subnormal
  CHECK(bfloat16_to_float(0x3F80) == 1.0f);
  CHECK(bfloat16_to_float(0xC040) == -3.0f);
  CHECK(std::isnan(bfloat16_to_float(0x7FC0)));
}

// ---- Cast ----

TEST_CASE("Cast to and from float16 and bfloat16", "[elt-types]") {
  auto cast = [](DType from, const std::vector<double>& x, DType to) {
    const Dims dims{static_cast<int64_t>(x.size())};
    KernelCase k("Cast", 13);
    k.input("x", from, dims, x);
    k.attr("to", static_cast<int64_t>(to));
    k.output("y", to, dims);
    REQUIRE(k.run());
    return k;
  };
  const std::vector<double> x{1.0, -2.5, 65520.0, kNaN, -kInf, 0.1};
  CHECK(cast(F32, x, F16).result_as<uint16_t>(0) ==
        std::vector<uint16_t>{0x3C00, 0xC100, 0x7C00, 0x7E00, 0xFC00, 0x2E66});
  CHECK(cast(F64, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)}, F16).result_as<uint16_t>(0) ==
        std::vector<uint16_t>{0x3C01});  // rounded once, from the double
  // bfloat16 has float's range: 65520 = 1.99902 * 2^15 rounds to 2^16 (0x4780).
  CHECK(cast(F32, x, BF16).result_as<uint16_t>(0) ==
        std::vector<uint16_t>{0x3F80, 0xC020, 0x4780, 0x7FC0, 0xFF80, 0x3DCD});

  require_close(cast(F16, {1.0, -2.5, 0.1, kNaN, kInf}, F32).result_as<float>(0),
                {1.0, -2.5, 0.0999755859375, kNaN, kInf}, scaled(0));
  require_close(cast(BF16, {1.0, -3.0, 0.1}, F64).result_as<double>(0), {1.0, -3.0, 0.10009765625}, scaled(0));
  // float16 to bfloat16 goes through float: one rounding (float holds every half exactly). The
  // half nearest 0.1 is 0x3DCCC000 as a float: its low half is above the midpoint, so it rounds up.
  CHECK(cast(F16, {0.1}, BF16).result_as<uint16_t>(0) == std::vector<uint16_t>{0x3DCD});
  // To integers: truncation toward zero; NaN gives the most negative int32, as on x86.
  CHECK(cast(F16, {-2.75, 3.5, kNaN}, DType::Int32).result_as<int32_t>(0) ==
        std::vector<int32_t>{-2, 3, std::numeric_limits<int32_t>::min()});
  CHECK(cast(DType::Int64, {-3, 70000}, F16).result_as<uint16_t>(0) == std::vector<uint16_t>{0xC200, 0x7C00});
  CHECK(cast(F16, {0.0, -1.0, kNaN}, DType::Bool).result_as<uint8_t>(0) == std::vector<uint8_t>{0, 1, 1});
}

// ---- Binary ops on more element types ----

TEST_CASE("Add, Sub, Mul and Div on uint8 wrap and truncate", "[elt-types]") {
  const Dims d{4};
  auto u8 = [&](const std::string& op, const std::vector<double>& a, const std::vector<double>& b) {
    return run<uint8_t>(op, {{"a", DType::Uint8, d, a}, {"b", DType::Uint8, d, b}}, DType::Uint8, d);
  };
  CHECK(u8("Add", {250, 1, 2, 3}, {10, 2, 3, 4}) == std::vector<uint8_t>{4, 3, 5, 7});
  CHECK(u8("Sub", {1, 5, 0, 200}, {2, 3, 0, 100}) == std::vector<uint8_t>{255, 2, 0, 100});
  CHECK(u8("Mul", {16, 3, 255, 0}, {16, 5, 255, 9}) == std::vector<uint8_t>{0, 15, 1, 0});
  // 254 / 255 is 0 (unsigned division has no -1 special case).
  CHECK(u8("Div", {254, 255, 7, 9}, {255, 255, 2, 10}) == std::vector<uint8_t>{0, 1, 3, 0});
  // 16-bit products wrap too (done in unsigned int: uint16 * uint16 would overflow int).
  CHECK(run<uint16_t>("Mul", {{"a", DType::Uint16, {2}, {65535, 300}}, {"b", DType::Uint16, {2}, {65535, 300}}},
                      DType::Uint16, {2}) == std::vector<uint16_t>{1, 24464});
  CHECK(run<int16_t>("Mul", {{"a", DType::Int16, {2}, {-32768, -300}}, {"b", DType::Int16, {2}, {-1, 300}}},
                     DType::Int16, {2}) == std::vector<int16_t>{-32768, -24464});
}

TEST_CASE("Max and Min on every integer width, float64 and float16", "[elt-types]") {
  const Dims d{3};
  auto two = [&](DType t, const std::vector<double>& a, const std::vector<double>& b) {
    return std::vector<Input>{{"a", t, d, a}, {"b", t, d, b}};
  };
  CHECK(run<int8_t>("Max", two(DType::Int8, {-128, 5, 127}, {-1, -5, 0}), DType::Int8, d) ==
        std::vector<int8_t>{-1, 5, 127});
  CHECK(run<int16_t>("Min", two(DType::Int16, {-300, 5, 300}, {-1, -5, 0}), DType::Int16, d) ==
        std::vector<int16_t>{-300, -5, 0});
  CHECK(run<uint16_t>("Max", two(DType::Uint16, {65535, 5, 0}, {1, 6, 0}), DType::Uint16, d) ==
        std::vector<uint16_t>{65535, 6, 0});
  CHECK(run<uint32_t>("Min", two(DType::Uint32, {4294967295.0, 5, 1}, {1, 6, 0}), DType::Uint32, d) ==
        std::vector<uint32_t>{1, 5, 0});
  // Above 2^63: compared as unsigned, not as int64.
  const double big = std::ldexp(1.0, 63) + 2048;
  CHECK(run<uint64_t>("Max", two(DType::Uint64, {big, 1, 0}, {1, 2, 0}), DType::Uint64, d) ==
        std::vector<uint64_t>{(uint64_t{1} << 63) + 2048, 2, 0});
  require_close(run<double>("Max", two(F64, {0.1, -1e300, 2}, {0.2, -1e301, 1}), F64, d), {0.2, -1e300, 2}, scaled(0));
  CHECK(run<uint16_t>("Min", two(F16, {1.5, -2, 65504}, {1, 3, -kInf}), F16, d) ==
        std::vector<uint16_t>{0x3C00, 0xC000, 0xFC00});
}

TEST_CASE("float16, bfloat16 and float64 arithmetic, Sum and Mean", "[elt-types]") {
  const Dims d{3};
  // 2048 + 1 is a tie in float16 (spacing 2 above 2048): even, 2048; 2048 + 3 rounds to 2052.
  CHECK(run<uint16_t>("Add", {{"a", F16, d, {2048, 2048, 0.5}}, {"b", F16, d, {1, 3, 0.25}}}, F16, d) ==
        std::vector<uint16_t>{0x6800, 0x6802, 0x3A00});
  require_close(halves(run<uint16_t>("Div", {{"a", F16, d, {1, -3, 1}}, {"b", F16, d, {4, 2, 0}}}, F16, d)),
                {0.25, -1.5, kInf}, scaled(0));
  CHECK(run<uint16_t>("Mul", {{"a", BF16, d, {3, -0.5, 256}}, {"b", BF16, d, {0.5, 4, 256}}}, BF16, d) ==
        std::vector<uint16_t>{0x3FC0, 0xC000, 0x4780});
  require_close(run<double>("Sub", {{"a", F64, d, {0.3, 1e-300, 1}}, {"b", F64, d, {0.1, 1e-300, -1}}}, F64, d),
                {0.3 - 0.1, 0, 2}, scaled(0));
  const Dims one{1};
  require_close(run<double>("Sum", {{"a", F64, d, {1, 2, 3}}, {"b", F64, one, {0.5}}, {"c", F64, d, {10, 20, 30}}}, F64, d),
                {11.5, 22.5, 33.5}, scaled(0));
  require_close(run<double>("Mean", {{"a", F64, d, {1, 2, 3}}, {"b", F64, d, {2, 4, 7}}}, F64, d), {1.5, 3, 5},
                scaled(0));
  require_close(halves(run<uint16_t>("Mean", {{"a", F16, d, {1, 2, 3}}, {"b", F16, d, {2, 4, 7}}}, F16, d)),
                {1.5, 3, 5}, scaled(0));
}

TEST_CASE("Mod and Sign on float16, comparisons on float16 and uint64", "[elt-types]") {
  const Dims d{4};
  require_close(halves(run<uint16_t>("Mod", {{"a", F16, d, {5.5, -5.5, 5.5, -5.5}}, {"b", F16, d, {2, 2, -2, -2}}}, F16,
                                     d, [](KernelCase& k) { k.attr("fmod", int64_t{1}); })),
                {1.5, -1.5, 1.5, -1.5}, scaled(0));
  require_close(halves(unary<uint16_t>("Sign", F16, {-0.5, 0, 3, kNaN})), {-1, 0, 1, kNaN}, scaled(0));
  CHECK(run<uint8_t>("Less", {{"a", F16, d, {1, 2, kNaN, -1}}, {"b", F16, d, {2, 2, 0, -2}}}, DType::Bool, d) ==
        std::vector<uint8_t>{1, 0, 0, 0});
  const double big = std::ldexp(1.0, 63);
  CHECK(run<uint8_t>("Greater", {{"a", DType::Uint64, d, {big, 1, 0, 5}}, {"b", DType::Uint64, d, {1, big, 0, 4}}},
                     DType::Bool, d) == std::vector<uint8_t>{1, 0, 0, 1});
}

TEST_CASE("Mod refuses fmod = 0 for float16", "[elt-types]") {
  KernelCase k("Mod", 13);
  k.input("a", F16, {1}, std::vector<double>{1});
  k.input("b", F16, {1}, std::vector<double>{1});
  k.output("y", F16, {1});
  require_error(k, ErrorKind::InvalidInput, {"Mod node 'Mod_under_test'", "fmod = 1"});
}

// ---- Pow with mixed types ----

TEST_CASE("Pow with integer bases and mixed exponent types", "[elt-types]") {
  const Dims d{5};
  // int32 ^ int32: exact, wraps; negative exponents truncate 1 / x^n toward zero.
  CHECK(run<int32_t>("Pow", {{"x", DType::Int32, d, {2, -3, 2, -1, 1}}, {"e", DType::Int32, d, {10, 3, -1, -3, -7}}},
                     DType::Int32, d) == std::vector<int32_t>{1024, -27, 0, -1, 1});
  CHECK(run<int64_t>("Pow", {{"x", DType::Int64, {1}, {3}}, {"e", DType::Int64, {1}, {39}}}, DType::Int64, {1}) ==
        std::vector<int64_t>{4052555153018976267});  // 3^39 exactly (double would round it)
  CHECK(run<int32_t>("Pow", {{"x", DType::Int32, {1}, {2}}, {"e", DType::Int32, {1}, {31}}}, DType::Int32, {1}) ==
        std::vector<int32_t>{std::numeric_limits<int32_t>::min()});  // wraps
  // int64 ^ float32: computed in double, truncated like Cast.
  CHECK(run<int64_t>("Pow", {{"x", DType::Int64, {3}, {1, 2, 3}}, {"e", F32, {3}, {4, 0.5, -1}}}, DType::Int64, {3}) ==
        std::vector<int64_t>{1, 1, 0});
  // float32 ^ uint32 / uint64 / int8 exponents, broadcast.
  for (DType e : {DType::Uint32, DType::Uint64, DType::Int8}) {
    require_close(run<float>("Pow", {{"x", F32, {3}, {1, 2, 3}}, {"e", e, {1}, {3}}}, F32, {3}), {1, 8, 27}, scaled(0));
  }
  require_close(run<double>("Pow", {{"x", F64, {2}, {2, 9}}, {"e", F64, {2}, {0.5, 0.5}}}, F64, {2}), {std::sqrt(2.0), 3},
                scaled(0));
  // A constant float64 exponent float cannot hold is not rounded to float.
  require_close(run<double>("Pow", {{"x", F64, {1}, {10}}, {"e", F64, {}, {0.1}, true}}, F64, {1}), {std::pow(10.0, 0.1)},
                scaled(0));
}

TEST_CASE("Pow fails on integer 0 to a negative power and refuses unsigned bases", "[elt-types]") {
  KernelCase k("Pow", 15);
  k.input("x", DType::Int32, {2}, std::vector<double>{2, 0});
  k.input("e", DType::Int64, {2}, std::vector<double>{1, -1});
  k.output("y", DType::Int32, {2});
  require_error(k, ErrorKind::InvalidInput, {"Pow node 'Pow_under_test'", "negative power"});

  KernelCase u("Pow", 15);
  u.input("x", DType::Uint8, {1}, std::vector<double>{2});
  u.input("e", DType::Uint8, {1}, std::vector<double>{1});
  u.output("y", DType::Uint8, {1});
  require_error(u, ErrorKind::Unsupported, {"Pow node", "uint8"});
}

// ---- BitShift ----

TEST_CASE("BitShift on unsigned integers, shifts past the width give 0", "[elt-types]") {
  auto shift = [](DType t, const std::vector<double>& x, const std::vector<double>& s) {
    const Dims d{static_cast<int64_t>(x.size())};
    return std::vector<Input>{{"x", t, d, x}, {"s", t, Dims{static_cast<int64_t>(s.size())}, s}};
  };
  auto dir = [](const std::string& d) { return [d](KernelCase& k) { k.attr("direction", d); }; };
  CHECK(run<uint8_t>("BitShift", shift(DType::Uint8, {16, 4, 1, 255}, {3, 2, 8, 1}), DType::Uint8, {4}, dir("LEFT")) ==
        std::vector<uint8_t>{128, 16, 0, 254});
  CHECK(run<uint8_t>("BitShift", shift(DType::Uint8, {16, 4, 1, 255}, {3, 2, 8, 1}), DType::Uint8, {4},
                     dir("RIGHT")) == std::vector<uint8_t>{2, 1, 0, 127});
  CHECK(run<uint64_t>("BitShift", shift(DType::Uint64, {1, 1, 3}, {63, 64, 1}), DType::Uint64, {3}, dir("LEFT")) ==
        std::vector<uint64_t>{uint64_t{1} << 63, 0, 6});
  CHECK(run<uint16_t>("BitShift", shift(DType::Uint16, {65535, 256}, {1}), DType::Uint16, {2}, dir("RIGHT")) ==
        std::vector<uint16_t>{32767, 128});  // a broadcast shift amount
}

TEST_CASE("BitShift refuses a bad direction and signed inputs", "[elt-types]") {
  KernelCase k("BitShift", 11);
  k.input("x", DType::Uint32, {1}, std::vector<double>{1});
  k.input("s", DType::Uint32, {1}, std::vector<double>{1});
  k.attr("direction", std::string("UP"));
  k.output("y", DType::Uint32, {1});
  require_error(k, ErrorKind::InvalidInput, {"BitShift node 'BitShift_under_test'", "direction", "UP"});

  KernelCase s("BitShift", 11);
  s.input("x", DType::Int32, {1}, std::vector<double>{1});
  s.input("s", DType::Int32, {1}, std::vector<double>{1});
  s.attr("direction", std::string("LEFT"));
  s.output("y", DType::Int32, {1});
  require_error(s, ErrorKind::Unsupported, {"BitShift node", "int32"});
}

// ---- Unary ops ----

TEST_CASE("trigonometric and hyperbolic ops on float32 and float64", "[elt-types]") {
  const bool varies = GENERATE(false, true);
  const std::vector<double> x{-0.5, 0, 0.25, 0.75};
  const std::vector<std::pair<std::string, double (*)(double)>> ops{
      {"Sin", [](double v) { return std::sin(v); }},     {"Cos", [](double v) { return std::cos(v); }},
      {"Tan", [](double v) { return std::tan(v); }},     {"Asin", [](double v) { return std::asin(v); }},
      {"Acos", [](double v) { return std::acos(v); }},   {"Atan", [](double v) { return std::atan(v); }},
      {"Sinh", [](double v) { return std::sinh(v); }},   {"Cosh", [](double v) { return std::cosh(v); }},
      {"Asinh", [](double v) { return std::asinh(v); }}, {"Atanh", [](double v) { return std::atanh(v); }}};
  for (const auto& [op, f] : ops) {
    INFO(op);
    std::vector<double> want;
    for (double v : x) want.push_back(f(v));
    require_close(unary<float>(op, F32, x, {}, varies), want, scaled(1e-6));
    require_close(unary<double>(op, F64, x, {}, varies), want, scaled(1e-15));
  }
  // Acosh is defined from 1; out of the domain is NaN.
  require_close(unary<float>("Acosh", F32, {1, 2, 0.5}, {}, varies), {0, std::acosh(2.0), kNaN});
  require_close(unary<float>("Asin", F32, {2}, {}, varies), {kNaN});
}

TEST_CASE("Celu, ThresholdedRelu and Shrink", "[elt-types]") {
  const std::vector<double> x{-2, -0.5, 0, 0.5, 1, 2, kNaN};
  require_close(unary<float>("Celu", F32, x), {std::expm1(-2.0), std::expm1(-0.5), 0, 0.5, 1, 2, kNaN});
  require_close(unary<float>("Celu", F32, x, [](KernelCase& k) { k.attr("alpha", 2.0f); }),
                {2 * std::expm1(-1.0), 2 * std::expm1(-0.25), 0, 0.5, 1, 2, kNaN});
  require_close(unary<float>("ThresholdedRelu", F32, x), {0, 0, 0, 0, 0, 2, 0});
  require_close(unary<float>("ThresholdedRelu", F32, x, [](KernelCase& k) { k.attr("alpha", 0.25f); }),
                {0, 0, 0, 0.5, 1, 2, 0});
  require_close(unary<float>("Shrink", F32, {-2, -0.5, 0, 0.5, 0.75, 2}), {-2, 0, 0, 0, 0.75, 2});
  require_close(unary<double>("Shrink", F64, {-2, -1, 0, 1, 1.5, 2},
                              [](KernelCase& k) {
                                k.attr("lambd", 1.0f);
                                k.attr("bias", 0.5f);
                              }),
                {-1.5, 0, 0, 0, 1, 1.5}, scaled(0));
}

TEST_CASE("Celu refuses alpha = 0", "[elt-types]") {
  KernelCase k("Celu", 12);
  k.input("x", F32, {1}, std::vector<double>{1});
  k.attr("alpha", 0.0f);
  k.output("y", F32, {1});
  require_error(k, ErrorKind::InvalidInput, {"Celu node 'Celu_under_test'", "alpha"});
}

TEST_CASE("Log(1) is exactly 0 on the fixed-shape path", "[elt-types]") {
  const auto y = unary<float>("Log", F32, {1, 10, std::exp(1.0)});
  CHECK(y[0] == 0.0f);
  require_close(y, {0, std::log(10.0), 1});
}

TEST_CASE("float unary ops on float64, float16 and bfloat16", "[elt-types]") {
  require_close(unary<double>("Exp", F64, {0, 1, -700}), {1, std::exp(1.0), std::exp(-700.0)}, scaled(1e-15));
  require_close(halves(unary<uint16_t>("Sqrt", F16, {4, 2, -1})), {2, 1.4140625, kNaN}, scaled(0));
  // Relu on bfloat16: 1.5 and -1.5 are exact.
  CHECK(unary<uint16_t>("Relu", BF16, {1.5, -1.5}) == std::vector<uint16_t>{0x3FC0, 0x0000});
  require_close(halves(unary<uint16_t>("Floor", F16, {-1.5, 2.5})), {-2, 2}, scaled(0));
  require_close(halves(unary<uint16_t>("Round", F16, {-1.5, 2.5})), {-2, 2}, scaled(0));
}

TEST_CASE("Abs, Neg and Relu on small and unsigned integers", "[elt-types]") {
  CHECK(unary<int8_t>("Abs", DType::Int8, {-128, -5, 7}) == std::vector<int8_t>{-128, 5, 7});  // wraps
  CHECK(unary<int8_t>("Neg", DType::Int8, {-128, -5, 7}) == std::vector<int8_t>{-128, 5, -7});
  CHECK(unary<int16_t>("Relu", DType::Int16, {-300, 0, 300}) == std::vector<int16_t>{0, 0, 300});
  CHECK(unary<uint8_t>("Abs", DType::Uint8, {0, 200}) == std::vector<uint8_t>{0, 200});
  CHECK(unary<uint64_t>("Sign", DType::Uint64, {0, 5}) == std::vector<uint64_t>{0, 1});

  KernelCase k("Neg");
  k.input("x", DType::Uint8, {1}, std::vector<double>{1});
  k.output("y", DType::Uint8, {1});
  require_error(k, ErrorKind::Unsupported, {"Neg node 'Neg_under_test'", "uint8", "signed"});

  KernelCase e("Sin");
  e.input("x", DType::Int32, {1}, std::vector<double>{1});
  e.output("y", DType::Int32, {1});
  require_error(e, ErrorKind::Unsupported, {"Sin node", "int32", "floating-point"});
}

TEST_CASE("IsNaN and IsInf", "[elt-types]") {
  const std::vector<double> x{1, kNaN, kInf, -kInf, 0};
  const Dims d{5};
  CHECK(run<uint8_t>("IsNaN", {{"x", F32, d, x}}, DType::Bool, d) == std::vector<uint8_t>{0, 1, 0, 0, 0});
  CHECK(run<uint8_t>("IsNaN", {{"x", F16, d, x}}, DType::Bool, d) == std::vector<uint8_t>{0, 1, 0, 0, 0});
  CHECK(run<uint8_t>("IsInf", {{"x", F64, d, x}}, DType::Bool, d) == std::vector<uint8_t>{0, 0, 1, 1, 0});
  CHECK(run<uint8_t>("IsInf", {{"x", F32, d, x}}, DType::Bool, d,
                     [](KernelCase& k) { k.attr("detect_negative", int64_t{0}); }) == std::vector<uint8_t>{0, 0, 1, 0, 0});
  CHECK(run<uint8_t>("IsInf", {{"x", F32, d, x}}, DType::Bool, d,
                     [](KernelCase& k) { k.attr("detect_positive", int64_t{0}); }) == std::vector<uint8_t>{0, 0, 0, 1, 0});

  KernelCase k("IsNaN", 13);
  k.input("x", DType::Int32, {1}, std::vector<double>{1});
  k.output("y", DType::Bool, {1});
  require_error(k, ErrorKind::Unsupported, {"IsNaN node 'IsNaN_under_test'", "int32"});
}

// ---- Clip ----

TEST_CASE("Clip with bounds computed at run time", "[elt-types]") {
  const bool varies = GENERATE(false, true);
  const Dims d{5};
  const std::vector<double> x{-3, -1, 0, 2, kNaN};
  require_close(run<float>("Clip", {{"x", F32, d, x}, {"lo", F32, {}, {-1.5}}, {"hi", F32, {}, {1}}}, F32, d, {}, 13, varies),
                {-1.5, -1, 0, 1, kNaN}, scaled(0));
  // Only max, at run time; min omitted.
  require_close(run<float>("Clip", {{"x", F32, d, x}, {"", F32, {}, {}}, {"hi", F32, {}, {-2}}}, F32, d, {}, 13, varies),
                {-3, -2, -2, -2, kNaN}, scaled(0));
  // min > max gives max everywhere, as min(max(x, lo), hi) does.
  require_close(run<float>("Clip", {{"x", F32, d, x}, {"lo", F32, {}, {5}}, {"hi", F32, {}, {4}, true}}, F32, d, {}, 13,
                           varies),
                {4, 4, 4, 4, kNaN}, scaled(0));
  CHECK(run<int8_t>("Clip", {{"x", DType::Int8, {4}, {-128, -5, 5, 127}}, {"lo", DType::Int8, {}, {-6}}}, DType::Int8, {4},
                    {}, 13, varies) == std::vector<int8_t>{-6, -5, 5, 127});
  CHECK(run<uint64_t>("Clip",
                      {{"x", DType::Uint64, {3}, {0, 7, std::ldexp(1.0, 63)}},
                       {"lo", DType::Uint64, {}, {2}, true},
                       {"hi", DType::Uint64, {}, {std::ldexp(1.0, 62)}}},
                      DType::Uint64, {3}, {}, 13, varies) == std::vector<uint64_t>{2, 7, uint64_t{1} << 62});
  require_close(halves(run<uint16_t>("Clip", {{"x", F16, {3}, {-3, 0.5, 3}}, {"lo", F16, {}, {-1}}, {"hi", F16, {}, {1}}},
                                     F16, {3}, {}, 13, varies)),
                {-1, 0.5, 1}, scaled(0));
}

TEST_CASE("Clip fails on a run-time bound that is not a scalar, and on a bound of another type", "[elt-types]") {
  KernelCase k("Clip", 13);
  k.input("x", F32, {2}, std::vector<double>{1, 2});
  k.input("lo", F32, {2}, std::vector<double>{0, 0});
  k.output("y", F32, {2});
  require_error(k, ErrorKind::InvalidInput, {"Clip node 'Clip_under_test'", "min", "scalar", "2 elements"});

  KernelCase t("Clip", 13);
  t.input("x", F32, {2}, std::vector<double>{1, 2});
  t.input("lo", F64, {}, std::vector<double>{0});
  t.output("y", F32, {2});
  require_error(t, ErrorKind::InvalidInput, {"Clip node", "'lo' (min) is float64"});
}

// ---- Reductions on float64 ----

TEST_CASE("ReduceLogSumExp and ReduceMean on float64", "[elt-types]") {
  const bool varies = GENERATE(false, true);
  const auto axis1 = [](KernelCase& k) { k.attr("axes", std::vector<int64_t>{1}); };
  require_close(run<double>("ReduceLogSumExp", {{"x", F64, {2, 2}, {1, 2, 3, 1000}}}, F64, {2, 1}, axis1, 13, varies),
                {2 + std::log1p(std::exp(-1.0)), 1000 + std::log1p(std::exp(-997.0))}, scaled(1e-15));
  require_close(run<double>("ReduceMean", {{"x", F64, {2, 3}, {1, 2, 3, 4, 5, 7}}}, F64, {2, 1}, axis1, 13, varies),
                {2, 16.0 / 3}, scaled(1e-15));
}
