// The elementwise, binary, Concat, Reduce* and Resize kernels against hand-computed values. Most
// cases run twice: with fixed shapes (oneDNN primitives made at load) and with shapes marked as
// varying (the plain loops, shapes read at run time).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "runtime/kernels/common/simd_exp.h"
#include "support/kernel_harness.h"

namespace {

using memplan::DType;
using memplan::Error;
using memplan::ErrorKind;
using memplan::Value;
using memplan::test::KernelCase;
using Dims = std::vector<int64_t>;
using Floats = std::vector<float>;
using Ints = std::vector<int64_t>;

constexpr DType F32 = DType::Float32;
constexpr DType I64 = DType::Int64;

const memplan::test::RequireClose require_close{memplan::test::scaled(1e-5f)};


// Marks a value's shape as known only at run time, which sends the kernel down its loop path.
void vary(Value* v, bool varies) { v->shape_varies = varies; }

using Setup = std::function<void(KernelCase&)>;

// Runs a one-input float op on x (shape dims) and returns the output.
Floats unary(const std::string& op, const Dims& dims, const Floats& x, bool varies, const Setup& setup = {},
             int64_t opset = 17) {
  KernelCase k(op, opset);
  vary(k.input("x", F32, dims, x), varies);
  if (setup) setup(k);
  vary(k.output("y", F32, dims), varies);
  REQUIRE(k.run());
  return k.result_as<float>(0);
}

Floats map(const Floats& x, const std::function<float(float)>& f) {
  Floats y;
  for (float v : x) y.push_back(f(v));
  return y;
}

const Floats kX{-3.5f, -2.f, -1.f, -0.25f, 0.f, 0.25f, 1.f, 2.f, 3.5f, 7.f};
const Floats kPositive{0.125f, 0.5f, 1.f, 2.f, 4.f, 9.f};

}  // namespace

TEST_CASE("Erf of float32 stays within 5e-7 of std::erf everywhere, 1 past 4, NaN as NaN", "[kernels][elementwise]") {
  Floats x;
  for (int i = -60000; i <= 60000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
  x.insert(x.end(), {1e-30f, -1e-30f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity()});
  const Floats y = unary("Erf", Dims{static_cast<int64_t>(x.size())}, x, false);
  REQUIRE(y.size() == x.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(double(y[i]) - std::erf(double(x[i]))));
  CHECK(worst <= 5e-7);
  CHECK(y[y.size() - 2] == 1.f);
  CHECK(y.back() == -1.f);
  const Floats nan = unary("Erf", Dims{1}, Floats{std::numeric_limits<float>::quiet_NaN()}, false);
  CHECK(std::isnan(nan[0]));
}

TEST_CASE("HardSigmoid keeps NaN and clamps to [0, 1], four at a time and in the tail", "[kernels][elementwise]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Floats y = unary("HardSigmoid", Dims{7}, Floats{nan, -10.f, 0.f, 10.f, inf, -inf, nan}, false);
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == 0.f);
  CHECK(y[2] == 0.5f);
  CHECK(y[3] == 1.f);
  CHECK(y[4] == 1.f);
  CHECK(y[5] == 0.f);
  CHECK(std::isnan(y[6]));
}

TEST_CASE("unary float ops match their definitions on both paths", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  INFO((varies ? "loop path" : "oneDNN path"));
  const Dims d{2, 5};
  require_close(unary("Relu", d, kX, varies), {0, 0, 0, 0, 0, 0.25f, 1, 2, 3.5f, 7});
  require_close(unary("LeakyRelu", d, kX, varies, [](KernelCase& k) { k.attr("alpha", 0.5f); }),
                {-1.75f, -1, -0.5f, -0.125f, 0, 0.25f, 1, 2, 3.5f, 7});
  require_close(unary("LeakyRelu", d, kX, varies), map(kX, [](float v) { return v < 0 ? 0.01f * v : v; }));
  require_close(unary("Neg", d, kX, varies), {3.5f, 2, 1, 0.25f, 0, -0.25f, -1, -2, -3.5f, -7});
  require_close(unary("Abs", d, kX, varies), {3.5f, 2, 1, 0.25f, 0, 0.25f, 1, 2, 3.5f, 7});
  require_close(unary("HardSigmoid", d, kX, varies), {0, 0.1f, 0.3f, 0.45f, 0.5f, 0.55f, 0.7f, 0.9f, 1, 1});
  require_close(unary("HardSigmoid", d, kX, varies,
                      [](KernelCase& k) {
                        k.attr("alpha", 0.5f);
                        k.attr("beta", 0.25f);
                      }),
                {0, 0, 0, 0.125f, 0.25f, 0.375f, 0.75f, 1, 1, 1});
  require_close(unary("HardSwish", d, kX, varies),
                map(kX, [](float v) { return v * std::max(0.f, std::min(1.f, v / 6 + 0.5f)); }));
  require_close(unary("Sigmoid", d, kX, varies), map(kX, [](float v) { return 1 / (1 + std::exp(-v)); }));
  require_close(unary("Tanh", d, kX, varies), map(kX, [](float v) { return std::tanh(v); }));
  require_close(unary("Exp", d, kX, varies), map(kX, [](float v) { return std::exp(v); }));
  require_close(unary("Erf", d, kX, varies), map(kX, [](float v) { return std::erf(v); }));
  require_close(unary("Elu", d, kX, varies), map(kX, [](float v) { return v >= 0 ? v : std::exp(v) - 1; }));
  require_close(unary("Elu", d, kX, varies, [](KernelCase& k) { k.attr("alpha", 2.f); }),
                map(kX, [](float v) { return v >= 0 ? v : 2 * (std::exp(v) - 1); }));
  require_close(unary("Softplus", d, kX, varies), map(kX, [](float v) { return std::log(1 + std::exp(v)); }));
  require_close(unary("Softsign", d, kX, varies), map(kX, [](float v) { return v / (1 + std::fabs(v)); }));
  require_close(unary("Selu", d, kX, varies),
                map(kX, [](float v) { return 1.0507010f * (v > 0 ? v : 1.6732632f * (std::exp(v) - 1)); }));
  const Dims p{2, 3};
  require_close(unary("Log", p, kPositive, varies), map(kPositive, [](float v) { return std::log(v); }));
  require_close(unary("Sqrt", p, kPositive, varies), {0.35355339f, 0.70710678f, 1, 1.41421356f, 2, 3});
  require_close(unary("Reciprocal", p, kPositive, varies), {8, 2, 1, 0.5f, 0.25f, 1.f / 9});
}

TEST_CASE("Clip takes attributes before opset 11 and constant inputs from 11", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  const Dims d{2, 5};
  require_close(unary("Clip", d, kX, varies,
                      [](KernelCase& k) {
                        k.attr("min", -1.f);
                        k.attr("max", 2.f);
                      },
                      6),
                {-1, -1, -1, -0.25f, 0, 0.25f, 1, 2, 2, 2});
  require_close(unary("Clip", d, kX, varies,
                      [](KernelCase& k) {
                        k.input("lo", F32, {}, Floats{-0.5f}, true);
                        k.input("hi", F32, {}, Floats{3.f}, true);
                      }),
                {-0.5f, -0.5f, -0.5f, -0.25f, 0, 0.25f, 1, 2, 3, 3});
  // Only max given: min is omitted.
  require_close(unary("Clip", d, kX, varies,
                      [](KernelCase& k) {
                        k.omitted_input();
                        k.input("hi", F32, {}, Floats{1.f}, true);
                      }),
                {-3.5f, -2, -1, -0.25f, 0, 0.25f, 1, 1, 1, 1});
  require_close(unary("Clip", d, kX, varies), kX);
}

TEST_CASE("integer Abs, Neg, Relu and Clip", "[kernels][elementwise]") {
  auto run = [](const std::string& op, const Setup& setup = {}) {
    KernelCase k(op);
    k.input("x", I64, {5}, Ints{-7, -1, 0, 3, 9});
    if (setup) setup(k);
    k.output("y", I64, {5});
    REQUIRE(k.run());
    return k.result_as<int64_t>(0);
  };
  CHECK(run("Abs") == Ints{7, 1, 0, 3, 9});
  CHECK(run("Neg") == Ints{7, 1, 0, -3, -9});
  CHECK(run("Relu") == Ints{0, 0, 0, 3, 9});
  CHECK(run("Clip", [](KernelCase& k) {
          k.input("lo", I64, {}, Ints{-2}, true);
          k.input("hi", I64, {}, Ints{4}, true);
        }) == Ints{-2, -1, 0, 3, 4});
}

TEST_CASE("unary ops reject dtypes they do not support", "[kernels][elementwise]") {
  KernelCase k("Exp");
  k.input("x", I64, {2}, Ints{1, 2});
  k.output("y", I64, {2});
  require_error(k, ErrorKind::Unsupported, {"Exp node", "int64", "floating-point types only"});
}

// ---- Binary ------------------------------------------------------------------------------------

namespace {

Floats binary(const std::string& op, const Dims& da, const Floats& a, const Dims& db, const Floats& b, const Dims& dy,
              bool varies) {
  KernelCase k(op);
  vary(k.input("a", F32, da, a), varies);
  vary(k.input("b", F32, db, b), varies);
  vary(k.output("y", F32, dy), varies);
  REQUIRE(k.run());
  return k.result_as<float>(0);
}

}  // namespace

TEST_CASE("binary float ops broadcast either operand", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  INFO((varies ? "loop path" : "oneDNN path"));
  const Floats m{1, 2, 3, 4, 5, 6};  // [2, 3]
  const Floats r{10, 20, 30};        // [3]
  const Floats c{100, 200};          // [2, 1]
  // src1 broadcast
  require_close(binary("Add", {2, 3}, m, {3}, r, {2, 3}, varies), {11, 22, 33, 14, 25, 36});
  require_close(binary("Sub", {2, 3}, m, {3}, r, {2, 3}, varies), {-9, -18, -27, -6, -15, -24});
  require_close(binary("Mul", {2, 3}, m, {2, 1}, c, {2, 3}, varies), {100, 200, 300, 800, 1000, 1200});
  require_close(binary("Div", {2, 3}, m, {}, {2}, {2, 3}, varies), {0.5f, 1, 1.5f, 2, 2.5f, 3});
  // src0 broadcast: commutative ops swap, Sub and Div take the loop
  require_close(binary("Add", {3}, r, {2, 3}, m, {2, 3}, varies), {11, 22, 33, 14, 25, 36});
  require_close(binary("Mul", {2, 1}, c, {2, 3}, m, {2, 3}, varies), {100, 200, 300, 800, 1000, 1200});
  require_close(binary("Sub", {3}, r, {2, 3}, m, {2, 3}, varies), {9, 18, 27, 6, 15, 24});
  require_close(binary("Div", {2, 1}, c, {2, 3}, m, {2, 3}, varies), {100, 50, 100.f / 3, 50, 40, 100.f / 3});
  // both broadcast: [2, 1] op [3] -> [2, 3]
  require_close(binary("Add", {2, 1}, c, {3}, r, {2, 3}, varies), {110, 120, 130, 210, 220, 230});
  require_close(binary("Sub", {2, 1}, c, {3}, r, {2, 3}, varies), {90, 80, 70, 190, 180, 170});
  // Max and Min with two inputs
  require_close(binary("Max", {2, 3}, m, {3}, {2, 7, 3}, {2, 3}, varies), {2, 7, 3, 4, 7, 6});
  require_close(binary("Min", {3}, {2, 7, 3}, {2, 3}, m, {2, 3}, varies), {1, 2, 3, 2, 5, 3});
  // Pow with a tensor exponent
  require_close(binary("Pow", {2, 3}, m, {3}, {2, 0.5f, -1}, {2, 3}, varies),
                {1, std::sqrt(2.f), 1.f / 3, 16, std::sqrt(5.f), 1.f / 6});
}

TEST_CASE("oneDNN's binary gives the loops' bits for every broadcast pattern it is reshaped for", "[kernels][elementwise]") {
  // The oneDNN path merges axes and moves the operand's full axes to axis 1 (an image
  // normalization's [3, H, W] - [3, 1, 1]); two separate full runs keep their shapes.
  struct Case {
    Dims a, b;
  };
  const std::vector<Case> cases = {
      {{3, 5, 7}, {3, 1, 1}},       {{3, 5, 7}, {1, 5, 1}},    {{3, 5, 7}, {7}},        {{2, 3, 4, 5}, {1, 3, 1, 5}},
      {{2, 3, 4}, {1, 1, 1}},       {{1, 3, 1, 4}, {1, 3, 1, 1}}, {{4, 1, 6}, {4, 1, 1}}, {{2, 3, 4}, {2, 3, 4}},
      {{1, 1}, {1}},
  };
  const auto count = [](const Dims& d) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    return n;
  };
  for (const char* op : {"Sub", "Div", "Add", "Max"})
    for (const Case& c : cases) {
      Dims y = c.a;
      const Floats a = map(Floats(static_cast<size_t>(count(c.a)), 0.f), [n = 0](float) mutable { return 1.5f + float(n++ % 13); });
      const Floats b = map(Floats(static_cast<size_t>(count(c.b)), 0.f), [n = 0](float) mutable { return 0.25f + float(n++ % 5); });
      INFO(op << " " << c.a.size() << "-D by " << c.b.size() << "-D, " << count(c.b) << " values");
      CHECK(binary(op, c.a, a, c.b, b, y, false) == binary(op, c.a, a, c.b, b, y, true));
    }
}

TEST_CASE("variadic Sum, Mean, Max, Min fold all inputs with broadcasting", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  INFO((varies ? "loop path" : "oneDNN path"));
  auto run = [&](const std::string& op, bool full_first) {
    KernelCase k(op);
    if (full_first) vary(k.input("m", F32, {2, 3}, Floats{1, 8, 3, 4, 5, 0}), varies);
    vary(k.input("r", F32, {3}, Floats{2, 2, 9}), varies);
    vary(k.input("s", F32, {}, Floats{3}), varies);
    if (!full_first) vary(k.input("m", F32, {2, 3}, Floats{1, 8, 3, 4, 5, 0}), varies);
    vary(k.output("y", F32, {2, 3}), varies);
    REQUIRE(k.run());
    return k.result_as<float>(0);
  };
  for (bool first : {true, false}) {
    require_close(run("Sum", first), {6, 13, 15, 9, 10, 12});
    require_close(run("Mean", first), {2, 13.f / 3, 5, 3, 10.f / 3, 4});
    require_close(run("Max", first), {3, 8, 9, 4, 5, 9});
    require_close(run("Min", first), {1, 2, 3, 2, 2, 0});
  }
  // One input: a copy.
  KernelCase one("Sum");
  vary(one.input("a", F32, {2}, Floats{1.5f, 2.5f}), varies);
  vary(one.output("y", F32, {2}), varies);
  REQUIRE(one.run());
  require_close(one.result_as<float>(0), {1.5f, 2.5f});
  // No input has the output's shape: [2, 1] + [1, 3] + [1].
  KernelCase k("Sum");
  vary(k.input("a", F32, {2, 1}, Floats{10, 20}), varies);
  vary(k.input("b", F32, {1, 3}, Floats{1, 2, 3}), varies);
  vary(k.input("c", F32, {1}, Floats{100}), varies);
  vary(k.output("y", F32, {2, 3}), varies);
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), {111, 112, 113, 121, 122, 123});
}

TEST_CASE("Pow with a constant scalar exponent and with an int64 exponent", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  KernelCase k("Pow");
  vary(k.input("x", F32, {4}, Floats{1, 2, 3, 4}), varies);
  k.input("e", F32, {}, Floats{2}, true);
  vary(k.output("y", F32, {4}), varies);
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), {1, 4, 9, 16});

  KernelCase i("Pow");
  vary(i.input("x", F32, {2, 2}, Floats{1, 2, 3, 4}), varies);
  vary(i.input("e", I64, {2}, Ints{3, -1}), varies);
  vary(i.output("y", F32, {2, 2}), varies);
  REQUIRE(i.run());
  require_close(i.result_as<float>(0), {1, 0.5f, 27, 0.25f});
}

TEST_CASE("PRelu broadcasts its slope", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  INFO((varies ? "loop path" : "oneDNN path"));
  KernelCase k("PRelu");
  vary(k.input("x", F32, {2, 3}, Floats{-1, -2, 3, 4, -5, -6}), varies);
  vary(k.input("slope", F32, {3}, Floats{0.5f, 0.25f, 2}, true), varies);
  vary(k.output("y", F32, {2, 3}), varies);
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), {-0.5f, -0.5f, 3, 4, -1.25f, -12});

  // Per-channel slope on NCHW: [C, 1, 1].
  KernelCase c("PRelu");
  vary(c.input("x", F32, {1, 2, 1, 2}, Floats{-1, 1, -1, 1}), varies);
  vary(c.input("slope", F32, {2, 1, 1}, Floats{0.1f, 0.2f}, true), varies);
  vary(c.output("y", F32, {1, 2, 1, 2}), varies);
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), {-0.1f, 1, -0.2f, 1});
}

TEST_CASE("int64 and int32 arithmetic broadcasts and truncates division toward zero", "[kernels][elementwise]") {
  auto run = [](const std::string& op, DType dt, const Dims& da, const Ints& a, const Dims& db, const Ints& b,
                const Dims& dy) {
    KernelCase k(op);
    k.input("a", dt, da, a);
    k.input("b", dt, db, b);
    k.output("y", dt, dy);
    REQUIRE(k.run());
    if (dt == DType::Int32) {
      Ints out;
      for (int32_t v : k.result_as<int32_t>(0)) out.push_back(v);
      return out;
    }
    return k.result_as<int64_t>(0);
  };
  for (DType dt : {I64, DType::Int32}) {
    CHECK(run("Add", dt, {2, 2}, {1, 2, 3, 4}, {2}, {10, 20}, {2, 2}) == Ints{11, 22, 13, 24});
    CHECK(run("Add", dt, {2}, {10, 20}, {2, 2}, {1, 2, 3, 4}, {2, 2}) == Ints{11, 22, 13, 24});
    CHECK(run("Sub", dt, {}, {5}, {3}, {1, 7, -2}, {3}) == Ints{4, -2, 7});
    CHECK(run("Mul", dt, {3, 1}, {1, 2, 3}, {2}, {-1, 4}, {3, 2}) == Ints{-1, 4, -2, 8, -3, 12});
    CHECK(run("Div", dt, {6}, {7, -7, 7, -7, 0, 9}, {6}, {2, 2, -2, -2, 5, 1}, {6}) == Ints{3, -3, -3, 3, 0, 9});
    CHECK(run("Max", dt, {3}, {1, 5, -2}, {}, {2}, {3}) == Ints{2, 5, 2});
    CHECK(run("Min", dt, {3}, {1, 5, -2}, {}, {2}, {3}) == Ints{1, 2, -2});
  }
  // A shape computation: [N, C*H] from a shape tensor.
  CHECK(run("Mul", I64, {2}, {1, 3}, {2}, {1, 224 * 224}, {2}) == Ints{1, 3 * 224 * 224});
  // Overflow wraps instead of being undefined.
  CHECK(run("Add", I64, {1}, {std::numeric_limits<int64_t>::min()}, {1}, {-1}, {1}) ==
        Ints{std::numeric_limits<int64_t>::max()});
  CHECK(run("Div", I64, {1}, {std::numeric_limits<int64_t>::min()}, {1}, {-1}, {1}) ==
        Ints{std::numeric_limits<int64_t>::min()});
}

TEST_CASE("integer division by zero fails naming the node", "[kernels][elementwise]") {
  KernelCase k("Div");
  k.input("a", I64, {3}, Ints{1, 2, 3});
  k.input("b", I64, {3}, Ints{1, 0, 1});
  k.output("y", I64, {3});
  require_error(k, ErrorKind::InvalidInput, {"test.onnx", "Div node 'Div_under_test'", "division by zero"});
}

TEST_CASE("binary ops check dtypes and shapes", "[kernels][elementwise]") {
  KernelCase mixed("Add");
  mixed.input("a", F32, {2}, Floats{1, 2});
  mixed.input("b", I64, {2}, Ints{1, 2});
  mixed.output("y", F32, {2});
  require_error(mixed, ErrorKind::InvalidInput, {"Add node", "'b' is int64"});

  KernelCase mean("Mean");
  mean.input("a", I64, {2}, Ints{1, 2});
  mean.output("y", I64, {2});
  require_error(mean, ErrorKind::Unsupported, {"Mean node", "int64"});

  KernelCase bad("Add");
  vary(bad.input("a", F32, {2}, Floats{1, 2}), true);
  vary(bad.input("b", F32, {3}, Floats{1, 2, 3}), true);
  vary(bad.output("y", F32, {3}), true);
  require_error(bad, ErrorKind::InvalidInput, {"Add node", "[2] and [3] do not broadcast"});
}

// ---- Concat ------------------------------------------------------------------------------------

TEST_CASE("Concat joins along positive and negative axes, any dtype", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  KernelCase k("Concat");
  k.attr("axis", int64_t{1});
  vary(k.input("a", F32, {2, 1}, Floats{1, 2}), varies);
  vary(k.input("b", F32, {2, 2}, Floats{3, 4, 5, 6}), varies);
  vary(k.input("c", F32, {2, 0}, Floats{}), varies);
  vary(k.output("y", F32, {2, 3}), varies);
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), {1, 3, 4, 2, 5, 6});
  CHECK(k.result(0).dims[1] == 3);

  KernelCase s("Concat");
  s.attr("axis", int64_t{-1});
  vary(s.input("a", I64, {2}, Ints{1, 2}), varies);
  vary(s.input("b", I64, {1}, Ints{-1}), varies);
  vary(s.input("c", I64, {3}, Ints{7, 8, 9}), varies);
  vary(s.output("y", I64, {6}), varies);
  REQUIRE(s.run());
  CHECK(s.result_as<int64_t>(0) == Ints{1, 2, -1, 7, 8, 9});

  KernelCase z("Concat");
  z.attr("axis", int64_t{0});
  vary(z.input("a", F32, {1, 2}, Floats{1, 2}), varies);
  vary(z.input("b", F32, {2, 2}, Floats{3, 4, 5, 6}), varies);
  vary(z.output("y", F32, {3, 2}), varies);
  REQUIRE(z.run());
  require_close(z.result_as<float>(0), {1, 2, 3, 4, 5, 6});
}

TEST_CASE("Concat rejects inputs that differ outside the axis", "[kernels][elementwise]") {
  KernelCase k("Concat");
  k.attr("axis", int64_t{0});
  vary(k.input("a", F32, {1, 2}, Floats{1, 2}), true);
  vary(k.input("b", F32, {1, 3}, Floats{3, 4, 5}), true);
  vary(k.output("y", F32, {2, 2}), true);
  require_error(k, ErrorKind::InvalidInput, {"Concat node", "[1, 2] and [1, 3]"});
}

// ---- Reduce ------------------------------------------------------------------------------------

namespace {

// x = [2, 3, 2]: 1..12 with a few negatives.
const Floats kR{1, -2, 3, 4, -5, 6, 7, 8, -9, 10, 11, 12};

Floats reduce(const std::string& op, const Ints& axes, int64_t keepdims, const Dims& dy, bool varies,
              const Floats& x = kR, const Dims& dx = {2, 3, 2}) {
  KernelCase k(op, 11);
  vary(k.input("x", F32, dx, x), varies);
  if (!axes.empty()) k.attr("axes", axes);
  k.attr("keepdims", keepdims);
  vary(k.output("y", F32, dy), varies);
  REQUIRE(k.run());
  Floats out = k.result_as<float>(0);
  REQUIRE(k.result(0).rank == static_cast<int>(dy.size()));
  return out;
}

}  // namespace

TEST_CASE("Reduce ops over chosen axes, keepdims 0 and 1, negative axes", "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  INFO((varies ? "loop path" : "oneDNN path"));
  // axis 1 of [2, 3, 2]: groups {1,3,-5}, {-2,4,6}, {7,-9,11}, {8,10,12}
  require_close(reduce("ReduceSum", {1}, 1, {2, 1, 2}, varies), {-1, 8, 9, 30});
  require_close(reduce("ReduceSum", {-2}, 0, {2, 2}, varies), {-1, 8, 9, 30});
  require_close(reduce("ReduceMean", {1}, 0, {2, 2}, varies), {-1.f / 3, 8.f / 3, 3, 10});
  require_close(reduce("ReduceMax", {1}, 1, {2, 1, 2}, varies), {3, 6, 11, 12});
  require_close(reduce("ReduceMin", {1}, 0, {2, 2}, varies), {-5, -2, -9, 8});
  require_close(reduce("ReduceProd", {1}, 0, {2, 2}, varies), {-15, -48, -693, 960});
  require_close(reduce("ReduceL1", {1}, 0, {2, 2}, varies), {9, 12, 27, 30});
  require_close(reduce("ReduceL2", {1}, 0, {2, 2}, varies),
                {std::sqrt(35.f), std::sqrt(56.f), std::sqrt(251.f), std::sqrt(308.f)});
  require_close(reduce("ReduceSumSquare", {1}, 0, {2, 2}, varies), {35, 56, 251, 308});
  require_close(reduce("ReduceLogSumExp", {1}, 0, {2, 2}, varies),
                {std::log(std::exp(1.f) + std::exp(3.f) + std::exp(-5.f)),
                 std::log(std::exp(-2.f) + std::exp(4.f) + std::exp(6.f)),
                 std::log(std::exp(7.f) + std::exp(-9.f) + std::exp(11.f)),
                 std::log(std::exp(8.f) + std::exp(10.f) + std::exp(12.f))});
  // Two axes, and every axis (no axes attribute).
  require_close(reduce("ReduceSum", {0, -1}, 1, {1, 3, 1}, varies), {14, 8, 24});
  require_close(reduce("ReduceMax", {}, 0, {}, varies), {12});
  require_close(reduce("ReduceMean", {}, 1, {1, 1, 1}, varies), {46.f / 12});
  // The last axis, and an axis of size 1 (nothing to reduce but the op's map).
  require_close(reduce("ReduceSum", {2}, 0, {2, 3}, varies), {-1, 7, 1, 15, 1, 23});
  require_close(reduce("ReduceL1", {0}, 1, {1, 3}, varies, {-1, 2, -3}, {1, 3}), {1, 2, 3});
}

TEST_CASE("Reduce over a middle or leading axis runs memplan's loop, not oneDNN's reference kernel, and over the "
          "last axes oneDNN's jit", "[kernels][elementwise]") {
  // oneDNN 2.6 reduces on jit kernels only where the reduced axes end the shape; elsewhere its
  // ref:any takes about 10 ns an element (11 ms for [1, 256, 4096] over axis 1; the loop 0.35 ms).
  const Floats x = memplan::test::random_floats(2 * 33 * 17, 71);
  auto mean_over = [&](Dims axes, Dims out) {
    KernelCase k("ReduceMean", 13);
    k.input("x", F32, {2, 33, 17}, x);
    k.output("y", F32, out);
    k.attr("axes", axes);
    REQUIRE(k.run());
    return std::pair{k.kernel()->implementation(), k.result_as<float>(0)};
  };
  const auto [middle_impl, middle] = mean_over({1}, {2, 1, 17});
  CHECK(middle_impl == "memplan");
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 17; ++j) {
      double sum = 0;
      for (int i = 0; i < 33; ++i) sum += x[static_cast<size_t>((b * 33 + i) * 17 + j)];
      CHECK(middle[static_cast<size_t>(b * 17 + j)] == Approx(sum / 33).margin(1e-6));
    }
  const auto [lead_impl, lead] = mean_over({0}, {1, 33, 17});
  CHECK(lead_impl == "memplan");
  CHECK(lead[5] == Approx((x[5] + x[33 * 17 + 5]) / 2).margin(1e-6));
  const auto [last_impl, last] = mean_over({1, 2}, {2, 1, 1});
  CHECK(last_impl.rfind("ref", 0) != 0);
  CHECK(last_impl != "memplan");
}

TEST_CASE("ReduceLogSumExp does not overflow on large values", "[kernels][elementwise]") {
  require_close(reduce("ReduceLogSumExp", {0}, 0, {2}, false, {1000, 1000, 1000, -1000}, {2, 2}),
                {1000 + std::log(2.f), 1000});
}

TEST_CASE("ReduceSum-13 takes constant axes as an input and honours noop_with_empty_axes",
          "[kernels][elementwise]") {
  const bool varies = GENERATE(false, true);
  KernelCase k("ReduceSum", 13);
  vary(k.input("x", F32, {2, 3, 2}, kR), varies);
  k.input("axes", I64, {1}, Ints{-1}, true);
  k.attr("keepdims", int64_t{0});
  vary(k.output("y", F32, {2, 3}), varies);
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), {-1, 7, 1, 15, 1, 23});

  KernelCase noop("ReduceSum", 13);
  vary(noop.input("x", F32, {2, 2}, Floats{1, 2, 3, 4}), varies);
  noop.input("axes", I64, {0}, Ints{}, true);
  noop.attr("noop_with_empty_axes", int64_t{1});
  vary(noop.output("y", F32, {2, 2}), varies);
  REQUIRE(noop.run());
  require_close(noop.result_as<float>(0), {1, 2, 3, 4});

  KernelCase all("ReduceSum", 13);
  vary(all.input("x", F32, {2, 2}, Floats{1, 2, 3, 4}), varies);
  vary(all.output("y", F32, {1, 1}), varies);
  REQUIRE(all.run());
  require_close(all.result_as<float>(0), {10});

  KernelCase dyn("ReduceSum", 13);  // axes read at run time (more in kernels_index_test.cpp)
  dyn.input("x", F32, {2, 2}, Floats{1, 2, 3, 4});
  dyn.input("axes", I64, {1}, Ints{0});
  dyn.output("y", F32, {1, 2});
  REQUIRE(dyn.run());
  require_close(dyn.result_as<float>(0), {4, 6});
}

TEST_CASE("integer ReduceSum, ReduceProd, ReduceMax", "[kernels][elementwise]") {
  auto run = [](const std::string& op, const Ints& axes, const Dims& dy) {
    KernelCase k(op, 11);
    k.input("x", I64, {2, 3}, Ints{1, 2, 3, 4, 5, 6});
    k.attr("axes", axes);
    k.attr("keepdims", int64_t{0});
    k.output("y", I64, dy);
    REQUIRE(k.run());
    return k.result_as<int64_t>(0);
  };
  CHECK(run("ReduceSum", {1}, {2}) == Ints{6, 15});
  CHECK(run("ReduceProd", {0, 1}, {}) == Ints{720});
  CHECK(run("ReduceMax", {0}, {3}) == Ints{4, 5, 6});
  CHECK(run("ReduceMean", {1}, {2}) == Ints{2, 5});
}

TEST_CASE("Reduce rejects an axis out of range", "[kernels][elementwise]") {
  KernelCase k("ReduceMax", 11);
  k.input("x", F32, {2, 2}, Floats{1, 2, 3, 4});
  k.attr("axes", Ints{2});
  k.output("y", F32, {2, 2});
  require_error(k, ErrorKind::InvalidInput, {"ReduceMax node", "axis 2 is out of range"});
}

// ---- Resize ------------------------------------------------------------------------------------

namespace {

struct ResizeCase {
  std::string mode = "nearest";
  std::string coord;    // empty: the default
  std::string nearest;  // empty: the default
  Floats scales;        // empty: use sizes
  Ints sizes;
};

Floats resize(const ResizeCase& c, const Dims& dx, const Floats& x, const Dims& dy, int64_t opset = 13) {
  KernelCase k("Resize", opset);
  k.input("x", F32, dx, x);
  k.attr("mode", c.mode);
  if (!c.coord.empty()) k.attr("coordinate_transformation_mode", c.coord);
  if (!c.nearest.empty()) k.attr("nearest_mode", c.nearest);
  if (opset >= 11) {
    k.omitted_input();  // roi
    if (!c.scales.empty()) {
      k.input("scales", F32, {static_cast<int64_t>(c.scales.size())}, c.scales, true);
    } else {
      k.input("scales", F32, {0}, Floats{}, true);
      k.input("sizes", I64, {static_cast<int64_t>(c.sizes.size())}, c.sizes, true);
    }
  } else {
    k.input("scales", F32, {static_cast<int64_t>(c.scales.size())}, c.scales, true);
  }
  k.output("y", F32, dy);
  REQUIRE(k.run());
  return k.result_as<float>(0);
}

}  // namespace

TEST_CASE("Resize nearest: every nearest_mode on half_pixel coordinates", "[kernels][elementwise]") {
  // 2 -> 5: half_pixel source coordinates -0.3, 0.1, 0.5, 0.9, 1.3
  const Floats x{10, 20};
  auto run = [&](const std::string& nm) {
    return resize({"nearest", "half_pixel", nm, {}, {1, 1, 1, 5}}, {1, 1, 1, 2}, x, {1, 1, 1, 5});
  };
  CHECK(run("round_prefer_floor") == Floats{10, 10, 10, 20, 20});
  CHECK(run("round_prefer_ceil") == Floats{10, 10, 20, 20, 20});
  CHECK(run("floor") == Floats{10, 10, 10, 10, 20});
  CHECK(run("ceil") == Floats{10, 20, 20, 20, 20});
  // tf_half_pixel_for_nn, 2 -> 4: coordinates 0.25, 0.75, 1.25, 1.75
  CHECK(resize({"nearest", "tf_half_pixel_for_nn", "", {}, {1, 1, 1, 4}}, {1, 1, 1, 2}, x, {1, 1, 1, 4}) ==
        Floats{10, 20, 20, 20});
  // ONNX's resize_downsample_scales_nearest
  CHECK(resize({"nearest", "", "", {1, 1, 0.6f, 0.6f}, {}}, {1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 1, 2}) ==
        Floats{1, 3});
  // asymmetric 2x upsampling repeats each element
  CHECK(resize({"nearest", "asymmetric", "floor", {1, 1, 2, 2}, {}}, {1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 4, 4}) ==
        Floats{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // align_corners 3 -> 5: coordinates 0, 0.5, 1, 1.5, 2
  CHECK(resize({"nearest", "align_corners", "round_prefer_ceil", {}, {5}}, {3}, {1, 2, 3}, {5}) ==
        Floats{1, 2, 2, 3, 3});
}

TEST_CASE("Resize linear: bilinear with each coordinate transformation", "[kernels][elementwise]") {
  const Floats x{1, 2, 3, 4};
  // ONNX's resize_upsample_scales_linear
  require_close(resize({"linear", "half_pixel", "", {1, 1, 2, 2}, {}}, {1, 1, 2, 2}, x, {1, 1, 4, 4}),
                {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  // ONNX's resize_upsample_scales_linear_align_corners
  require_close(resize({"linear", "align_corners", "", {1, 1, 2, 2}, {}}, {1, 1, 2, 2}, x, {1, 1, 4, 4}),
                {1, 4.f / 3, 5.f / 3, 2, 5.f / 3, 2, 7.f / 3, 8.f / 3, 7.f / 3, 8.f / 3, 3, 10.f / 3, 3, 10.f / 3,
                 11.f / 3, 4});
  // asymmetric: source coordinates 0, 0.5, 1, 1.5 (clamped to 1)
  require_close(resize({"linear", "asymmetric", "", {1, 1, 2, 2}, {}}, {1, 1, 2, 2}, x, {1, 1, 4, 4}),
                {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4});
  // Downsampling [2, 4] to [1, 2] by sizes: half_pixel blends the rows, pytorch_half_pixel takes
  // row 0 because the output has one row.
  const Floats big{1, 2, 3, 4, 5, 6, 7, 8};
  require_close(resize({"linear", "half_pixel", "", {}, {1, 1, 1, 2}}, {1, 1, 2, 4}, big, {1, 1, 1, 2}), {3.5f, 5.5f});
  require_close(resize({"linear", "pytorch_half_pixel", "", {}, {1, 1, 1, 2}}, {1, 1, 2, 4}, big, {1, 1, 1, 2}),
                {1.5f, 3.5f});
  // Channels and batches are interpolated independently.
  require_close(resize({"linear", "asymmetric", "", {1, 1, 1, 2}, {}}, {1, 2, 1, 2}, {0, 2, 10, 20}, {1, 2, 1, 4}),
                {0, 1, 2, 2, 10, 15, 20, 20});
}

TEST_CASE("Resize-10 and Upsample use asymmetric coordinates", "[kernels][elementwise]") {
  // Upsampling floors, downsampling ceils (what onnxruntime does for opset 10).
  CHECK(resize({"nearest", "", "", {1, 1, 1, 3}, {}}, {1, 1, 1, 2}, {5, 6}, {1, 1, 1, 6}, 10) ==
        Floats{5, 5, 5, 6, 6, 6});
  CHECK(resize({"nearest", "", "", {1, 1, 1, 0.5f}, {}}, {1, 1, 1, 4}, {1, 2, 3, 4}, {1, 1, 1, 2}, 10) ==
        Floats{1, 3});
  require_close(resize({"linear", "", "", {1, 1, 1, 2}, {}}, {1, 1, 1, 2}, {2, 4}, {1, 1, 1, 4}, 10), {2, 3, 4, 4});

  KernelCase k("Upsample", 9);
  k.input("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
  k.input("scales", F32, {4}, Floats{1, 1, 2, 2}, true);
  k.output("y", F32, {1, 1, 4, 4});
  REQUIRE(k.run());
  CHECK(k.result_as<float>(0) == Floats{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  KernelCase a("Upsample", 7);
  a.input("x", F32, {1, 2}, Floats{1, 2});
  a.attr("scales", Floats{1, 2});
  a.output("y", F32, {1, 4});
  REQUIRE(a.run());
  CHECK(a.result_as<float>(0) == Floats{1, 1, 2, 2});
}

TEST_CASE("Resize rejects what it does not implement", "[kernels][elementwise]") {
  KernelCase mode("Resize", 13);
  mode.input("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
  mode.attr("mode", std::string("area"));
  mode.omitted_input();
  mode.input("scales", F32, {4}, Floats{1, 1, 2, 2}, true);
  mode.output("y", F32, {1, 1, 4, 4});
  require_error(mode, ErrorKind::Unsupported, {"Resize node", "mode 'area'"});

  KernelCase anti("Resize", 18);
  anti.input("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
  anti.attr("mode", std::string("linear"));
  anti.attr("antialias", int64_t{1});
  anti.attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  anti.omitted_input();
  anti.input("scales", F32, {4}, Floats{1, 1, 2, 2}, true);
  anti.output("y", F32, {1, 1, 4, 4});
  require_error(anti, ErrorKind::Unsupported, {"Resize node", "antialias with tf_crop_and_resize"});
}

TEST_CASE("simd_exp is within 2 ulp of std::exp where e^x is a normal float, saturates beyond, keeps NaN",
          "[kernels][elementwise]") {
  using memplan::rt::simd_exp;
  for (float x = -87.3f; x <= 88.3f; x += 0.01f) {
    const float want = std::exp(x), got = simd_exp(x);
    INFO("x = " << x);
    REQUIRE(std::abs(got - want) <= 2 * (std::nextafter(want, INFINITY) - want));
  }
  CHECK(simd_exp(0.f) == 1.f);
  CHECK(simd_exp(-1000.f) > 0.f);  // the bound's value, 1.2e-38: never 0 or a denormal
  CHECK(simd_exp(-1000.f) < 1.3e-38f);
  CHECK(std::isfinite(simd_exp(1000.f)));
  CHECK(simd_exp(1000.f) > 2e38f);
  CHECK(std::isnan(simd_exp(std::numeric_limits<float>::quiet_NaN())));
  CHECK(simd_exp(-std::numeric_limits<float>::infinity()) < 1.3e-38f);
}
