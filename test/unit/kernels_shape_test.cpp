// The plain C++ shape, indexing, comparison and logic kernels (lib/runtime/kernels/shape_*.cpp)
// against hand-computed values.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memplan/error.h"
#include "runtime/run_threads.h"
#include "support/kernel_harness.h"

namespace {

using namespace memplan::test::kernel_names;
using memplan::Tensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// An int64 input holding exactly `values` (the harness converts through double, which loses
// INT64_MAX); constant (a weight) or a run-time input.
Value* int64s(KernelCase& c, const std::string& name, const I64& values, bool constant = true, Dims dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(values.size())};
  Value* v = c.input(name, INT64, dims, std::vector<double>(values.size(), 0.0), true);
  auto& t = const_cast<Tensor&>(*v->constant);  // made non-const by the harness
  std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(int64_t));
  if (!constant) v->constant = nullptr;
  return v;
}

template <typename T>
std::vector<T> cast_floats(DType to, const Floats& x) {
  KernelCase c("Cast", 13);
  c.input<float>("x", F32, {static_cast<int64_t>(x.size())}, x);
  c.attr("to", static_cast<int64_t>(to));
  c.output("y", to, {static_cast<int64_t>(x.size())});
  REQUIRE(c.run());
  return c.result_as<T>(0);
}

template <typename T>
std::vector<T> mod_ints(DType t, int64_t fmod) {
  KernelCase c("Mod", 13);
  c.input<int>("a", t, {4}, std::vector<int>{-7, 7, -7, 7});
  c.input<int>("b", t, {4}, std::vector<int>{3, -3, -3, 3});
  c.attr("fmod", fmod);
  c.output("y", t, {4});
  REQUIRE(c.run());
  return c.result_as<T>(0);
}

Floats iota_floats(size_t n) {
  Floats v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

}  // namespace

// ---- Views ---------------------------------------------------------------------------------------

TEST_CASE("Reshape infers -1, copies 0 and honours allowzero", "[kernels][shape]") {
  {
    KernelCase c("Reshape", 14);
    c.input<float>("x", F32, {2, 3}, iota_floats(6));
    int64s(c, "shape", {0, -1, 1});
    c.output("y", F32, {2, 3, 1});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == iota_floats(6));
  }
  {
    KernelCase c("Reshape", 14);  // allowzero: a 0 is a 0
    c.input<float>("x", F32, {0, 3}, Floats{});
    int64s(c, "shape", {3, 0});
    c.output("y", F32, {3, 0});
    c.attr("allowzero", int64_t{1});
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3, 0});
  }
  {
    KernelCase c("Reshape", 14);
    c.input<float>("x", F32, {2, 3}, iota_floats(6));
    int64s(c, "shape", {4, -1});
    c.output("y", F32, {4, 2});
    require_error(c, ErrorKind::InvalidInput, {"Reshape node 'Reshape_under_test'", "-1"});
  }
}

TEST_CASE("Reshape with a run-time shape sets the output shape and checks the bound", "[kernels][shape]") {
  {
    KernelCase c("Reshape", 13);
    c.input<int32_t>("x", INT32, {2, 3}, I32{1, 2, 3, 4, 5, 6});
    int64s(c, "shape", {3, 2}, false);
    dynamic_output(c, "y", INT32, {-1, -1}, 24);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3, 2});
    CHECK(c.result_as<int32_t>(0) == I32{1, 2, 3, 4, 5, 6});
  }
  {
    KernelCase c("ConstantOfShape", 13);  // a run-time shape past the bound
    int64s(c, "shape", {4, 4}, false);
    dynamic_output(c, "y", F32, {-1, -1}, 32);
    require_error(c, ErrorKind::InvalidInput, {"ConstantOfShape node", "needs 64 bytes but its buffer holds 32", "raise its bound"});
  }
}

TEST_CASE("Flatten, Squeeze and Unsqueeze with negative axes", "[kernels][shape]") {
  {
    KernelCase c("Flatten", 13);
    c.input<float>("x", F32, {2, 3, 4}, iota_floats(24));
    c.attr("axis", int64_t{-1});
    c.output("y", F32, {6, 4});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == iota_floats(24));
  }
  {
    KernelCase c("Squeeze", 11);  // attribute axes
    c.input<float>("x", F32, {1, 3, 1}, Floats{1, 2, 3});
    c.attr("axes", std::vector<int64_t>{-1});
    c.output("y", F32, {1, 3});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 2, 3});
  }
  {
    KernelCase c("Squeeze", 13);  // no axes: every 1 goes (dynamic path)
    c.input<int64_t>("x", INT64, {1, 3, 1}, I64{7, 8, 9})->shape_varies = true;
    dynamic_output(c, "y", INT64, {-1}, 24);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3});
    CHECK(c.result_as<int64_t>(0) == I64{7, 8, 9});
  }
  {
    KernelCase c("Squeeze", 13);
    c.input<float>("x", F32, {2, 3}, iota_floats(6));
    int64s(c, "axes", {0});
    c.output("y", F32, {3});
    require_error(c, ErrorKind::InvalidInput, {"Squeeze node", "cannot squeeze axis 0 of size 2"});
  }
  {
    KernelCase c("Unsqueeze", 13);  // input axes, negative, counted in the output's rank
    c.input<float>("x", F32, {2, 3}, iota_floats(6))->shape_varies = true;
    int64s(c, "axes", {-1, 0});
    dynamic_output(c, "y", F32, {-1, -1, -1, -1}, 24);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{1, 2, 3, 1});
  }
  {
    KernelCase c("Unsqueeze", 11);
    c.input<uint8_t>("x", UINT8, {3}, Bytes{1, 2, 3});
    c.attr("axes", std::vector<int64_t>{1});
    c.output("y", UINT8, {3, 1});
    REQUIRE(c.run());
    CHECK(c.result_as<uint8_t>(0) == Bytes{1, 2, 3});
  }
}

TEST_CASE("Identity and Dropout copy, Dropout's mask is all true, aliased buffers are left alone", "[kernels][shape]") {
  KernelCase c("Dropout", 13);
  c.input<float>("x", F32, {2, 2}, Floats{1, kNaN, -3, 4});
  c.input<float>("ratio", F32, {}, Floats{0.5f}, true);
  c.output("y", F32, {2, 2});
  c.output("mask", BOOL, {2, 2});
  REQUIRE(c.run());
  auto y = c.result_as<float>(0);
  CHECK(y[0] == 1);
  CHECK(std::isnan(y[1]));
  CHECK(y[3] == 4);
  CHECK(c.result_as<uint8_t>(1) == Bytes{1, 1, 1, 1});

  // The planner may make the output the input's buffer: then nothing moves.
  std::vector<float> buf{5, 6, 7, 8};
  memplan::rt::TensorView v;
  v.data = reinterpret_cast<std::byte*>(buf.data());
  v.dtype = F32;
  v.rank = 2;
  v.dims[0] = v.dims[1] = 2;
  v.capacity = 16;
  std::vector<memplan::rt::TensorView> in{v, {}}, out{v, {}};
  c.kernel()->run({in, out, nullptr, c.state()});
  CHECK(buf == std::vector<float>{5, 6, 7, 8});

  KernelCase id("Identity", 16);
  id.input<int8_t>("x", INT8, {3}, std::vector<int8_t>{-1, 0, 1});
  id.output("y", INT8, {3});
  REQUIRE(id.run());
  CHECK(id.result_as<int8_t>(0) == std::vector<int8_t>{-1, 0, 1});
}

TEST_CASE("Dropout in training mode is the identity at ratio 0 and refused above it, naming the node",
          "[kernels][shape]") {
  for (const bool constant : {true, false}) {
    KernelCase zero("Dropout", 13);
    zero.input<float>("x", F32, {3}, Floats{1, -2, 3});
    zero.input<float>("ratio", F32, {}, Floats{0.f}, constant);
    zero.input<uint8_t>("training_mode", BOOL, {}, Bytes{1}, constant);
    zero.output("y", F32, {3});
    zero.output("mask", BOOL, {3});
    REQUIRE(zero.run());
    CHECK(zero.result_as<float>(0) == Floats{1, -2, 3});
    CHECK(zero.result_as<uint8_t>(1) == Bytes{1, 1, 1});

    KernelCase half("Dropout", 13);
    half.input<float>("x", F32, {3}, Floats{1, -2, 3});
    half.input<float>("ratio", F32, {}, Floats{0.5f}, constant);
    half.input<uint8_t>("training_mode", BOOL, {}, Bytes{1}, constant);
    half.output("y", F32, {3});
    CHECK_THROWS_WITH(half.run(), Catch::Contains("Dropout node") && Catch::Contains("training mode with ratio 0.5"));
  }
  // No ratio: ONNX's default, 0.5.
  KernelCase fallback("Dropout", 13);
  fallback.input<float>("x", F32, {3}, Floats{1, -2, 3});
  fallback.omitted_input();
  fallback.input<uint8_t>("training_mode", BOOL, {}, Bytes{1}, true);
  fallback.output("y", F32, {3});
  CHECK_THROWS_WITH(fallback.run(), Catch::Contains("ratio 0.5 (the default)"));
}

TEST_CASE("Shape with start and end, Size", "[kernels][shape]") {
  KernelCase c("Shape", 15);
  c.input<float>("x", F32, {2, 3, 4, 5}, iota_floats(120));
  c.attr("start", int64_t{1});
  c.attr("end", int64_t{-1});
  c.output("y", INT64, {2});
  REQUIRE(c.run());
  CHECK(c.result_as<int64_t>(0) == I64{3, 4});

  KernelCase s("Size", 13);
  s.input<float>("x", F32, {2, 3, 4, 5}, iota_floats(120));
  s.output("y", INT64, {});
  REQUIRE(s.run());
  CHECK(s.result_as<int64_t>(0) == I64{120});
}

// ---- Transpose and Slice ---------------------------------------------------------------------------

TEST_CASE("Transpose with default and explicit perms", "[kernels][shape]") {
  {
    KernelCase c("Transpose", 13);  // default: reverse the axes
    c.input<int64_t>("x", INT64, {2, 3}, I64{0, 1, 2, 3, 4, 5});
    c.output("y", INT64, {3, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{0, 3, 1, 4, 2, 5});
  }
  {
    KernelCase c("Transpose", 13);
    c.input<int8_t>("x", INT8, {2, 2, 3}, std::vector<int8_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    c.attr("perm", std::vector<int64_t>{1, 0, 2});
    c.output("y", INT8, {2, 2, 3});
    REQUIRE(c.run());
    CHECK(c.result_as<int8_t>(0) == std::vector<int8_t>{0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11});
  }
  {
    KernelCase c("Transpose", 13);  // dynamic path, NaN bytes move untouched
    c.input<float>("x", F32, {2, 1, 2}, Floats{1, kNaN, 3, 4})->shape_varies = true;
    c.attr("perm", std::vector<int64_t>{2, 1, 0});
    dynamic_output(c, "y", F32, {-1, -1, -1}, 16);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 1, 2});
    auto y = c.result_as<float>(0);
    CHECK(y[0] == 1);
    CHECK(y[1] == 3);
    CHECK(std::isnan(y[2]));
    CHECK(y[3] == 4);
  }
}

TEST_CASE("Slice with negative steps, negative axes and INT64 sentinels", "[kernels][shape]") {
  {
    KernelCase c("Slice", 13);  // x[::-1] over axis -1, rows 1..end
    c.input<float>("x", F32, {3, 4}, iota_floats(12));
    int64s(c, "starts", {kMax, 1});
    int64s(c, "ends", {kMin, kMax});
    int64s(c, "axes", {-1, 0});
    int64s(c, "steps", {-1, 1});
    c.output("y", F32, {2, 4});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{7, 6, 5, 4, 11, 10, 9, 8});
  }
  {
    KernelCase c("Slice", 13);  // step -2 from -1 to 0 (exclusive): 9, 7, 5, 3, 1
    c.input<int64_t>("x", INT64, {10}, I64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    int64s(c, "starts", {-1});
    int64s(c, "ends", {0});
    int64s(c, "axes", {0});
    int64s(c, "steps", {-2});
    c.output("y", INT64, {5});
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{9, 7, 5, 3, 1});
  }
  {
    KernelCase c("Slice", 13);  // run-time starts/ends: step 3, empty result along another case
    c.input<uint8_t>("x", UINT8, {2, 5}, Bytes{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    int64s(c, "starts", {0, 1}, false);
    int64s(c, "ends", {1, 100}, false);
    c.omitted_input();
    int64s(c, "steps", {1, 3});
    dynamic_output(c, "y", UINT8, {-1, -1}, 10);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{1, 2});
    CHECK(c.result_as<uint8_t>(0) == Bytes{1, 4});
  }
  {
    KernelCase c("Slice", 13);  // start past the end: empty
    c.input<float>("x", F32, {4}, Floats{0, 1, 2, 3});
    int64s(c, "starts", {3});
    int64s(c, "ends", {1});
    c.output("y", F32, {0});
    REQUIRE(c.run());
  }
  {
    KernelCase c("Slice", 9);  // opset 1-9 attributes
    c.input<float>("x", F32, {2, 4}, iota_floats(8));
    c.attr("starts", std::vector<int64_t>{1, -3});
    c.attr("ends", std::vector<int64_t>{2, -1});
    c.output("y", F32, {1, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{5, 6});
  }
}

// ---- Gather, GatherElements, Split ------------------------------------------------------------------

TEST_CASE("Gather along any axis with negative indices", "[kernels][shape]") {
  {
    KernelCase c("Gather", 13);
    c.input<float>("x", F32, {3, 2}, Floats{1, 2, 3, 4, 5, 6});
    c.input<int64_t>("i", INT64, {2, 2}, I64{0, -1, 1, 0});
    c.output("y", F32, {2, 2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 2, 5, 6, 3, 4, 1, 2});
  }
  {
    KernelCase c("Gather", 13);
    c.input<int64_t>("x", INT64, {2, 3}, I64{1, 2, 3, 4, 5, 6});
    c.input<int32_t>("i", INT32, {2}, I32{-1, 0});
    c.attr("axis", int64_t{-1});
    c.output("y", INT64, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{3, 1, 6, 4});
  }
  {
    KernelCase c("Gather", 13);  // scalar index: the axis disappears
    c.input<uint8_t>("x", BOOL, {2, 2}, Bytes{1, 0, 0, 1});
    c.input<int64_t>("i", INT64, {}, I64{1});
    c.output("y", BOOL, {2});
    REQUIRE(c.run());
    CHECK(c.result_as<uint8_t>(0) == Bytes{0, 1});
  }
}

TEST_CASE("Gather fails on an index out of range, naming the node and the index", "[kernels][shape]") {
  for (int64_t bad : {int64_t{3}, int64_t{-4}, kMax, kMin}) {
    KernelCase c("Gather", 13);
    c.input<float>("x", F32, {3, 2}, Floats{1, 2, 3, 4, 5, 6});
    int64s(c, "i", {0, bad}, false);
    c.output("y", F32, {2, 2});
    require_error(c, ErrorKind::InvalidInput,
                  {"test.onnx: Gather node 'Gather_under_test'", "index " + std::to_string(bad) + " is out of range", "size 3"});
  }
  KernelCase c("GatherElements", 13);
  c.input<float>("x", F32, {2, 2}, Floats{1, 2, 3, 4});
  c.input<int32_t>("i", INT32, {2, 1}, I32{0, 2});
  c.attr("axis", int64_t{1});
  c.output("y", F32, {2, 1});
  require_error(c, ErrorKind::InvalidInput, {"GatherElements node", "index 2 is out of range"});
}

TEST_CASE("GatherElements", "[kernels][shape]") {
  KernelCase c("GatherElements", 13);  // the ONNX example, axis 0, with a negative index
  c.input<int32_t>("x", INT32, {3, 3}, I32{1, 2, 3, 4, 5, 6, 7, 8, 9});
  c.input<int64_t>("i", INT64, {2, 3}, I64{1, 2, 0, 2, 0, -3});
  c.output("y", INT32, {2, 3});
  REQUIRE(c.run());
  CHECK(c.result_as<int32_t>(0) == I32{4, 8, 3, 7, 2, 3});
}

TEST_CASE("Split: equal parts, attribute sizes, input sizes", "[kernels][shape]") {
  {
    KernelCase c("Split", 13);
    c.input<float>("x", F32, {2, 4}, iota_floats(8));
    c.attr("axis", int64_t{-1});
    c.output("a", F32, {2, 2});
    c.output("b", F32, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0, 1, 4, 5});
    CHECK(c.result_as<float>(1) == Floats{2, 3, 6, 7});
  }
  {
    KernelCase c("Split", 11);
    c.input<int64_t>("x", INT64, {5}, I64{1, 2, 3, 4, 5});
    c.attr("split", std::vector<int64_t>{1, 4});
    c.output("a", INT64, {1});
    c.output("b", INT64, {4});
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{1});
    CHECK(c.result_as<int64_t>(1) == I64{2, 3, 4, 5});
  }
  {
    KernelCase c("Split", 13);  // run-time sizes
    c.input<float>("x", F32, {3, 2}, iota_floats(6));
    int64s(c, "split", {2, 0, 1}, false);
    dynamic_output(c, "a", F32, {-1, 2}, 24);
    dynamic_output(c, "b", F32, {-1, 2}, 24);
    dynamic_output(c, "c", F32, {-1, 2}, 24);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 2});
    CHECK(dims_of(c.result(1)) == Dims{0, 2});
    CHECK(c.result_as<float>(0) == Floats{0, 1, 2, 3});
    CHECK(c.result_as<float>(2) == Floats{4, 5});
  }
  {
    KernelCase c("Split", 13);
    c.input<float>("x", F32, {5}, iota_floats(5));
    int64s(c, "split", {2, 2}, false);
    dynamic_output(c, "a", F32, {-1}, 20);
    dynamic_output(c, "b", F32, {-1}, 20);
    require_error(c, ErrorKind::InvalidInput, {"Split node", "add up to 4"});
  }
}

// ---- Pad, Tile, Expand -------------------------------------------------------------------------------

TEST_CASE("Pad constant, reflect and edge", "[kernels][shape]") {
  {
    KernelCase c("Pad", 13);
    c.input<float>("x", F32, {2, 2}, Floats{1, 2, 3, 4});
    int64s(c, "pads", {1, 0, 0, 1});
    c.input<float>("v", F32, {}, Floats{9}, true);
    c.output("y", F32, {3, 3});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{9, 9, 9, 1, 2, 9, 3, 4, 9});
  }
  {
    KernelCase c("Pad", 13);  // numpy.pad(x, ((0, 0), (2, 3)), 'reflect')
    c.input<int32_t>("x", INT32, {2, 3}, I32{1, 2, 3, 4, 5, 6});
    int64s(c, "pads", {0, 2, 0, 3});
    c.attr("mode", std::string("reflect"));
    c.output("y", INT32, {2, 8});
    REQUIRE(c.run());
    CHECK(c.result_as<int32_t>(0) == I32{3, 2, 1, 2, 3, 2, 1, 2, 6, 5, 4, 5, 6, 5, 4, 5});
  }
  {
    KernelCase c("Pad", 13);  // edge on both axes
    c.input<uint8_t>("x", UINT8, {2, 2}, Bytes{1, 2, 3, 4});
    int64s(c, "pads", {1, 1, 0, 2});
    c.attr("mode", std::string("edge"));
    c.output("y", UINT8, {3, 5});
    REQUIRE(c.run());
    CHECK(c.result_as<uint8_t>(0) == Bytes{1, 1, 2, 2, 2, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4});
  }
  {
    KernelCase c("Pad", 13);  // reflect along rows too, negative pad crops
    c.input<float>("x", F32, {3, 2}, Floats{1, 2, 3, 4, 5, 6});
    int64s(c, "pads", {2, -1, 0, 0});
    c.attr("mode", std::string("reflect"));
    c.output("y", F32, {5, 1});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{6, 4, 2, 4, 6});
  }
  {
    KernelCase c("Pad", 2);  // opset 2 attributes, value converted to int64
    c.input<int64_t>("x", INT64, {2}, I64{5, 6});
    c.attr("pads", std::vector<int64_t>{1, 2});
    c.attr("value", -1.0f);
    c.output("y", INT64, {5});
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{-1, 5, 6, -1, -1});
  }
  {
    KernelCase c("Pad", 11);  // run-time pads and value
    c.input<float>("x", F32, {2}, Floats{1, 2});
    int64s(c, "pads", {2, 1}, false);
    c.input<float>("v", F32, {}, Floats{kNaN});
    dynamic_output(c, "y", F32, {-1}, 64);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{5});
    auto y = c.result_as<float>(0);
    CHECK((std::isnan(y[0]) && std::isnan(y[1]) && y[2] == 1 && y[3] == 2 && std::isnan(y[4])));
  }
}

TEST_CASE("Tile and Expand", "[kernels][shape]") {
  {
    KernelCase c("Tile", 13);
    c.input<float>("x", F32, {2, 2}, Floats{1, 2, 3, 4});
    int64s(c, "repeats", {2, 3});
    c.output("y", F32, {4, 6});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  }
  {
    KernelCase c("Expand", 13);  // [3, 1] to [2, 3, 4]; the shape's 1 keeps the input's dim
    c.input<int64_t>("x", INT64, {3, 1}, I64{1, 2, 3});
    int64s(c, "shape", {2, 1, 4});
    c.output("y", INT64, {2, 3, 4});
    REQUIRE(c.run());
    I64 want;
    for (int r = 0; r < 2; ++r)
      for (int64_t v : {1, 2, 3})
        for (int k = 0; k < 4; ++k) want.push_back(v);
    CHECK(c.result_as<int64_t>(0) == want);
  }
  {
    KernelCase c("Expand", 13);
    c.input<float>("x", F32, {3}, Floats{1, 2, 3});
    int64s(c, "shape", {2}, false);
    dynamic_output(c, "y", F32, {-1}, 12);
    require_error(c, ErrorKind::InvalidInput, {"Expand node", "[3] and [2] cannot be broadcast"});
  }
}

// ---- Where, comparisons, logic ------------------------------------------------------------------------

TEST_CASE("Where broadcasts and passes NaN through", "[kernels][shape]") {
  KernelCase c("Where", 16);
  c.input<uint8_t>("c", BOOL, {2, 1}, Bytes{1, 0});
  c.input<float>("x", F32, {3}, Floats{1, kNaN, 3});
  c.input<float>("y", F32, {}, Floats{-1});
  c.output("z", F32, {2, 3});
  REQUIRE(c.run());
  auto z = c.result_as<float>(0);
  CHECK(z[0] == 1);
  CHECK(std::isnan(z[1]));
  CHECK(z[2] == 3);
  CHECK((z[3] == -1 && z[4] == -1 && z[5] == -1));
}

TEST_CASE("Comparisons broadcast to bool, NaN compares false", "[kernels][shape]") {
  const Floats a{1, 2, kNaN, 4, 5, 6};
  const Floats b{2, 2, 2};
  auto run = [&](const std::string& op) {
    KernelCase c(op, 13);
    c.input<float>("a", F32, {2, 3}, a);
    c.input<float>("b", F32, {3}, b);
    c.output("y", BOOL, {2, 3});
    REQUIRE(c.run());
    return c.result_as<uint8_t>(0);
  };
  CHECK(run("Equal") == Bytes{0, 1, 0, 0, 0, 0});
  CHECK(run("Greater") == Bytes{0, 0, 0, 1, 1, 1});
  CHECK(run("GreaterOrEqual") == Bytes{0, 1, 0, 1, 1, 1});
  CHECK(run("Less") == Bytes{1, 0, 0, 0, 0, 0});
  CHECK(run("LessOrEqual") == Bytes{1, 1, 0, 0, 0, 0});

  KernelCase i64("Less", 13);
  int64s(i64, "a", {kMin, 0, kMax});
  int64s(i64, "b", {kMax}, true, {1});
  i64.output("y", BOOL, {3});
  REQUIRE(i64.run());
  CHECK(i64.result_as<uint8_t>(0) == Bytes{1, 1, 0});

  KernelCase i32("GreaterOrEqual", 13);  // dynamic shapes
  i32.input<int32_t>("a", INT32, {2, 1}, I32{-5, 5})->shape_varies = true;
  i32.input<int32_t>("b", INT32, {1, 2}, I32{0, 5});
  dynamic_output(i32, "y", BOOL, {-1, -1}, 4);
  REQUIRE(i32.run());
  CHECK(dims_of(i32.result(0)) == Dims{2, 2});
  CHECK(i32.result_as<uint8_t>(0) == Bytes{0, 0, 1, 1});

  KernelCase eq("Equal", 13);
  eq.input<uint8_t>("a", BOOL, {4}, Bytes{0, 0, 1, 1});
  eq.input<uint8_t>("b", BOOL, {4}, Bytes{0, 1, 0, 1});
  eq.output("y", BOOL, {4});
  REQUIRE(eq.run());
  CHECK(eq.result_as<uint8_t>(0) == Bytes{1, 0, 0, 1});

  KernelCase bad("Less", 13);
  bad.input<uint8_t>("a", BOOL, {1}, Bytes{0});
  bad.input<uint8_t>("b", BOOL, {1}, Bytes{1});
  bad.output("y", BOOL, {1});
  require_error(bad, ErrorKind::Unsupported, {"test.onnx: Less node 'Less_under_test'"});
}

TEST_CASE("Not, And, Or, Xor", "[kernels][shape]") {
  auto run = [](const std::string& op) {
    KernelCase c(op, 13);
    c.input<uint8_t>("a", BOOL, {2, 2}, Bytes{0, 0, 1, 1});
    c.input<uint8_t>("b", BOOL, {2}, Bytes{0, 1});
    c.output("y", BOOL, {2, 2});
    REQUIRE(c.run());
    return c.result_as<uint8_t>(0);
  };
  CHECK(run("And") == Bytes{0, 0, 0, 1});
  CHECK(run("Or") == Bytes{0, 1, 1, 1});
  CHECK(run("Xor") == Bytes{0, 1, 1, 0});
  KernelCase n("Not", 1);
  n.input<uint8_t>("a", BOOL, {3}, Bytes{0, 1, 0});
  n.output("y", BOOL, {3});
  REQUIRE(n.run());
  CHECK(n.result_as<uint8_t>(0) == Bytes{1, 0, 1});
}

// ---- Cast, ConstantOfShape, Range --------------------------------------------------------------------

TEST_CASE("Cast truncates floats toward zero and maps to bool", "[kernels][shape]") {
  CHECK(cast_floats<int32_t>(INT32, {-1.7f, 2.9f, 0.4f, -0.0f}) == I32{-1, 2, 0, 0});
  CHECK(cast_floats<int64_t>(INT64, {-1e10f, 3.99f}) == I64{-10000000000LL, 3});
  CHECK(cast_floats<uint8_t>(UINT8, {255.9f, 7.5f}) == Bytes{255, 7});
  CHECK(cast_floats<uint8_t>(BOOL, {0, 0.5f, -2, kNaN, -0.0f}) == Bytes{0, 1, 1, 1, 0});
  CHECK(cast_floats<double>(F64, {1.5f, -2}) == std::vector<double>{1.5, -2});

  KernelCase b("Cast", 13);
  b.input<uint8_t>("x", BOOL, {3}, Bytes{1, 0, 1});
  b.attr("to", static_cast<int64_t>(F32));
  b.output("y", F32, {3});
  REQUIRE(b.run());
  CHECK(b.result_as<float>(0) == Floats{1, 0, 1});

  KernelCase w("Cast", 13);  // integer narrowing wraps
  w.input<int64_t>("x", INT64, {3}, I64{300, -1, 127});
  w.attr("to", static_cast<int64_t>(INT8));
  w.output("y", INT8, {3});
  REQUIRE(w.run());
  CHECK(w.result_as<int8_t>(0) == std::vector<int8_t>{44, -1, 127});

  KernelCase l("CastLike", 15);
  l.input<int32_t>("x", INT32, {2}, I32{-3, 4});
  l.input<double>("t", F64, {1}, std::vector<double>{0});
  l.output("y", F64, {2});
  REQUIRE(l.run());
  CHECK(l.result_as<double>(0) == std::vector<double>{-3, 4});
}

TEST_CASE("ConstantOfShape with constant and run-time shapes", "[kernels][shape]") {
  {
    KernelCase c("ConstantOfShape", 9);  // default: float 0
    int64s(c, "shape", {2, 2});
    c.output("y", F32, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0, 0, 0, 0});
  }
  {
    KernelCase c("ConstantOfShape", 9);
    int64s(c, "shape", {3}, false);
    auto value = std::make_shared<Tensor>(memplan::make_int64_tensor({1}, std::vector<int64_t>{7}));
    c.node().attributes.push_back(memplan::Attribute{});
    c.node().attributes.back().name = "value";
    c.node().attributes.back().kind = memplan::Attribute::Kind::Tensor;
    c.node().attributes.back().tensor = value;
    dynamic_output(c, "y", INT64, {-1}, 80);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3});
    CHECK(c.result_as<int64_t>(0) == I64{7, 7, 7});
  }
}

TEST_CASE("Range for int64, int32 and float, empty and negative", "[kernels][shape]") {
  {
    KernelCase c("Range", 11);
    c.input<int64_t>("s", INT64, {}, I64{10});
    c.input<int64_t>("l", INT64, {}, I64{1});
    c.input<int64_t>("d", INT64, {}, I64{-3});
    dynamic_output(c, "y", INT64, {-1}, 80);
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{10, 7, 4});
  }
  {
    KernelCase c("Range", 11);
    c.input<int32_t>("s", INT32, {}, I32{5});
    c.input<int32_t>("l", INT32, {}, I32{1});
    c.input<int32_t>("d", INT32, {}, I32{1});
    dynamic_output(c, "y", INT32, {-1}, 40);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{0});
  }
  {
    KernelCase c("Range", 11);
    c.input<float>("s", F32, {}, Floats{1});
    c.input<float>("l", F32, {}, Floats{2.1f});
    c.input<float>("d", F32, {}, Floats{0.5f});
    dynamic_output(c, "y", F32, {-1}, 40);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 1.5f, 2});
  }
  {
    KernelCase c("Range", 11);
    c.input<int64_t>("s", INT64, {}, I64{0});
    c.input<int64_t>("l", INT64, {}, I64{100});
    c.input<int64_t>("d", INT64, {}, I64{1});
    dynamic_output(c, "y", INT64, {-1}, 80);
    require_error(c, ErrorKind::InvalidInput, {"Range node", "needs 800 bytes but its buffer holds 80"});
  }
}

// ---- ArgMax/ArgMin, Mod, rounding, TopK, CumSum ----------------------------------------------------------

TEST_CASE("ArgMax and ArgMin with keepdims, negative axis, select_last_index", "[kernels][shape]") {
  auto run = [](const std::string& op, int64_t axis, int64_t keep, int64_t last, Dims out) {
    KernelCase c(op, 13);
    c.input<float>("x", F32, {2, 3}, Floats{1, 5, 5, 7, 0, 0});
    c.attr("axis", axis);
    c.attr("keepdims", keep);
    c.attr("select_last_index", last);
    c.output("y", INT64, out);
    REQUIRE(c.run());
    return c.result_as<int64_t>(0);
  };
  CHECK(run("ArgMax", -1, 1, 0, {2, 1}) == I64{1, 0});
  CHECK(run("ArgMax", -1, 0, 1, {2}) == I64{2, 0});
  CHECK(run("ArgMin", 1, 0, 0, {2}) == I64{0, 1});
  CHECK(run("ArgMin", 1, 0, 1, {2}) == I64{0, 2});
  CHECK(run("ArgMax", 0, 1, 0, {1, 3}) == I64{1, 0, 0});

  KernelCase i("ArgMin", 13);
  i.input<int32_t>("x", INT32, {4}, I32{3, -2, 8, -2});
  i.attr("keepdims", int64_t{0});
  i.output("y", INT64, {});
  REQUIRE(i.run());
  CHECK(i.result_as<int64_t>(0) == I64{1});
}

TEST_CASE("Mod: Python sign semantics for fmod = 0, C semantics for fmod = 1", "[kernels][shape]") {
  CHECK(mod_ints<int64_t>(INT64, 0) == I64{2, -2, -1, 1});
  CHECK(mod_ints<int32_t>(INT32, 0) == I32{2, -2, -1, 1});
  CHECK(mod_ints<int8_t>(INT8, 0) == std::vector<int8_t>{2, -2, -1, 1});
  CHECK(mod_ints<int64_t>(INT64, 1) == I64{-1, 1, -1, 1});

  KernelCase f("Mod", 13);  // floats: fmod, broadcast divisor
  f.input<float>("a", F32, {3}, Floats{-7.5f, 7.5f, kNaN});
  f.input<float>("b", F32, {1}, Floats{2});
  f.attr("fmod", int64_t{1});
  f.output("y", F32, {3});
  REQUIRE(f.run());
  auto y = f.result_as<float>(0);
  CHECK(y[0] == -1.5f);
  CHECK(y[1] == 1.5f);
  CHECK(std::isnan(y[2]));

  KernelCase m("Mod", 13);  // INT_MIN % -1 is 0, not a crash
  int64s(m, "a", {kMin});
  int64s(m, "b", {-1});
  m.output("y", INT64, {1});
  REQUIRE(m.run());
  CHECK(m.result_as<int64_t>(0) == I64{0});

  KernelCase z("Mod", 13);
  z.input<int32_t>("a", INT32, {2}, I32{5, 6});
  z.input<int32_t>("b", INT32, {2}, I32{2, 0});
  z.output("y", INT32, {2});
  require_error(z, ErrorKind::InvalidInput, {"test.onnx: Mod node 'Mod_under_test'", "division by zero"});

  KernelCase ff("Mod", 13);
  ff.input<float>("a", F32, {1}, Floats{1});
  ff.input<float>("b", F32, {1}, Floats{1});
  ff.output("y", F32, {1});
  require_error(ff, ErrorKind::InvalidInput, {"Mod node", "fmod = 1"});
}

TEST_CASE("Floor, Ceil, Round (half to even), Sign, NaN propagates", "[kernels][shape]") {
  const Floats x{0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f, kNaN};
  auto run = [&](const std::string& op) {
    KernelCase c(op, 13);
    c.input<float>("x", F32, {8}, x);
    c.output("y", F32, {8});
    REQUIRE(c.run());
    auto y = c.result_as<float>(0);
    CHECK(std::isnan(y[7]));
    y.pop_back();
    return y;
  };
  CHECK(run("Round") == Floats{0, 2, 2, -0.f, -2, 2, -3});
  CHECK(run("Floor") == Floats{0, 1, 2, -1, -2, 2, -3});
  CHECK(run("Ceil") == Floats{1, 2, 3, -0.f, -1, 3, -2});
  CHECK(run("Sign") == Floats{1, 1, 1, -1, -1, 1, -1});

  KernelCase s("Sign", 13);
  s.input<int64_t>("x", INT64, {3}, I64{-9, 0, 4});
  s.output("y", INT64, {3});
  REQUIRE(s.run());
  CHECK(s.result_as<int64_t>(0) == I64{-1, 0, 1});
}

TEST_CASE("TopK: largest and smallest, ties go to the lower index", "[kernels][shape]") {
  {
    KernelCase c("TopK", 11);
    c.input<float>("x", F32, {5}, Floats{3, 1, 3, 2, 3});
    int64s(c, "k", {2});
    c.output("v", F32, {2});
    c.output("i", INT64, {2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{3, 3});
    CHECK(c.result_as<int64_t>(1) == I64{0, 2});
  }
  {
    KernelCase c("TopK", 11);  // smallest along axis 0 of a matrix
    c.input<int32_t>("x", INT32, {4, 2}, I32{4, 1, 2, 1, 2, 0, 9, 1});
    int64s(c, "k", {3});
    c.attr("axis", int64_t{0});
    c.attr("largest", int64_t{0});
    c.output("v", INT32, {3, 2});
    c.output("i", INT64, {3, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<int32_t>(0) == I32{2, 0, 2, 1, 4, 1});
    CHECK(c.result_as<int64_t>(1) == I64{1, 2, 2, 0, 0, 1});
  }
  {
    KernelCase c("TopK", 11);  // run-time K, NaN ranks largest
    c.input<float>("x", F32, {4}, Floats{1, kNaN, 5, 5});
    int64s(c, "k", {3}, false);
    dynamic_output(c, "v", F32, {-1}, 16);
    dynamic_output(c, "i", INT64, {-1}, 32);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3});
    CHECK(c.result_as<int64_t>(1) == I64{1, 2, 3});
  }
  {
    KernelCase c("TopK", 11);
    c.input<float>("x", F32, {4}, Floats{1, 2, 3, 4});
    int64s(c, "k", {5}, false);
    dynamic_output(c, "v", F32, {-1}, 16);
    dynamic_output(c, "i", INT64, {-1}, 32);
    require_error(c, ErrorKind::InvalidInput, {"TopK node", "K = 5 is out of range"});
  }
}

TEST_CASE("CumSum: exclusive and reverse", "[kernels][shape]") {
  auto run = [](int64_t exclusive, int64_t reverse) {
    KernelCase c("CumSum", 14);
    c.input<int64_t>("x", INT64, {2, 3}, I64{1, 2, 3, 4, 5, 6});
    int64s(c, "axis", {-1});
    c.attr("exclusive", exclusive);
    c.attr("reverse", reverse);
    c.output("y", INT64, {2, 3});
    REQUIRE(c.run());
    return c.result_as<int64_t>(0);
  };
  CHECK(run(0, 0) == I64{1, 3, 6, 4, 9, 15});
  CHECK(run(1, 0) == I64{0, 1, 3, 0, 4, 9});
  CHECK(run(0, 1) == I64{6, 5, 3, 15, 11, 6});
  CHECK(run(1, 1) == I64{5, 3, 0, 11, 6, 0});
}

TEST_CASE("Unsupported types fail naming the file and node", "[kernels][shape]") {
  KernelCase c("Floor", 13);
  c.input<int32_t>("x", INT32, {1}, I32{1});
  c.output("y", INT32, {1});
  require_error(c, ErrorKind::Unsupported, {"test.onnx: Floor node 'Floor_under_test'", "int32"});
}

// ---- Randomized cross-checks of the stride/broadcast loops against naive index math -------------------

namespace {

// Row-major flat index of `coord` in `dims`.
int64_t flat_index(const Dims& coord, const Dims& dims) {
  int64_t f = 0;
  for (size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + coord[i];
  return f;
}

// Calls f(coord) for every coordinate of `dims` in row-major order.
template <typename F>
void for_each_coord(const Dims& dims, F&& f) {
  Dims c(dims.size(), 0);
  for (int64_t d : dims)
    if (d == 0) return;
  for (;;) {
    f(c);
    size_t i = dims.size();
    for (; i-- > 0;) {
      if (++c[i] < dims[i]) break;
      c[i] = 0;
    }
    if (i == static_cast<size_t>(-1)) return;
  }
}

// ONNX Slice's index list for one axis, written out element by element.
I64 slice_indices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  I64 out;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    for (int64_t i = start; i < end; i += step) out.push_back(i);
  } else if (dim > 0) {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    for (int64_t i = start; i > end; i += step) out.push_back(i);
  }
  return out;
}

Dims random_dims(std::mt19937& gen, int rank, int64_t max_dim) {
  Dims d(static_cast<size_t>(rank));
  for (int64_t& x : d) x = std::uniform_int_distribution<int64_t>(1, max_dim)(gen);
  return d;
}

// x of `dims` transposed by `perm` (the output's dim d is the input's perm[d]): its dims and values.
std::pair<Dims, Floats> transposed(const Floats& x, const Dims& dims, const I64& perm) {
  Dims out_dims(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) out_dims[d] = dims[static_cast<size_t>(perm[d])];
  Floats want;
  for_each_coord(out_dims, [&](const Dims& c) {
    Dims src(c.size());
    for (size_t d = 0; d < c.size(); ++d) src[static_cast<size_t>(perm[d])] = c[d];
    want.push_back(x[static_cast<size_t>(flat_index(src, dims))]);
  });
  return {out_dims, want};
}

// Runs Transpose by `perm` on x of `dims` and requires transposed()'s values.
void check_transpose(const Floats& x, const Dims& dims, const I64& perm) {
  const auto [out_dims, want] = transposed(x, dims, perm);
  KernelCase c("Transpose", 13);
  c.input<float>("x", F32, dims, x);
  c.attr("perm", perm);
  c.output("y", F32, out_dims);
  REQUIRE(c.run());
  CHECK(c.result_as<float>(0) == want);
}

int64_t count_of(const Dims& d) { return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>()); }

}  // namespace

TEST_CASE("Slice, Transpose and Where match naive index math on random shapes", "[kernels][shape]") {
  std::mt19937 gen(1234);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  for (int trial = 0; trial < 200; ++trial) {
    const int rank = static_cast<int>(pick(1, 5));
    const Dims dims = random_dims(gen, rank, 4);
    const Floats x = iota_floats(static_cast<size_t>(count_of(dims)));
    INFO("trial " << trial);
    {  // Slice over every axis in a random order, random starts/ends/steps
      I64 axes(static_cast<size_t>(rank)), starts, ends, steps;
      std::iota(axes.begin(), axes.end(), 0);
      std::shuffle(axes.begin(), axes.end(), gen);
      std::vector<I64> idx(static_cast<size_t>(rank));
      Dims out_dims(static_cast<size_t>(rank));
      for (int64_t& a : axes) {
        starts.push_back(pick(-6, 6));
        ends.push_back(pick(-6, 6));
        int64_t st = pick(-3, 2);
        steps.push_back(st >= 0 ? st + 1 : st);
        idx[static_cast<size_t>(a)] = slice_indices(dims[static_cast<size_t>(a)], starts.back(), ends.back(), steps.back());
        out_dims[static_cast<size_t>(a)] = static_cast<int64_t>(idx[static_cast<size_t>(a)].size());
        if (pick(0, 1)) a -= rank;  // the same axis, negative
      }
      Floats want;
      for_each_coord(out_dims, [&](const Dims& c) {
        Dims src(c.size());
        for (size_t i = 0; i < c.size(); ++i) src[i] = idx[i][static_cast<size_t>(c[i])];
        want.push_back(x[static_cast<size_t>(flat_index(src, dims))]);
      });
      KernelCase c("Slice", 13);
      c.input<float>("x", F32, dims, x);
      const bool runtime = trial % 2 == 1;  // odd trials: run-time starts/ends, shape set by the kernel
      int64s(c, "starts", starts, !runtime);
      int64s(c, "ends", ends, !runtime);
      int64s(c, "axes", axes);
      int64s(c, "steps", steps);
      if (runtime) dynamic_output(c, "y", F32, Dims(static_cast<size_t>(rank), -1), static_cast<uint64_t>(count_of(dims)) * 4);
      else c.output("y", F32, out_dims);
      REQUIRE(c.run());
      CHECK(dims_of(c.result(0)) == out_dims);
      // (the harness's result_as memcpys into a null vector for empty results)
      if (!want.empty()) CHECK(c.result_as<float>(0) == want);
    }
    {  // Transpose by a random permutation
      I64 perm(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), gen);
      check_transpose(x, dims, perm);
    }
    {  // Where over three shapes broadcast from one random output shape
      auto squash = [&](Dims d) {  // drop leading dims and set some to 1
        d.erase(d.begin(), d.begin() + pick(0, static_cast<int64_t>(d.size())));
        for (int64_t& v : d)
          if (pick(0, 2) == 0) v = 1;
        return d;
      };
      const Dims dc = squash(dims), dx = squash(dims), dy = squash(dims);
      Bytes cond(static_cast<size_t>(count_of(dc)));
      for (uint8_t& b : cond) b = static_cast<uint8_t>(pick(0, 1));
      const Floats xv = iota_floats(static_cast<size_t>(count_of(dx)));
      Floats yv(static_cast<size_t>(count_of(dy)));
      for (size_t i = 0; i < yv.size(); ++i) yv[i] = -1.0f - static_cast<float>(i);
      Dims out_dims(static_cast<size_t>(rank), 1);
      for (const Dims* d : {&dc, &dx, &dy})
        for (size_t i = 0; i < d->size(); ++i) {
          int64_t& o = out_dims[out_dims.size() - d->size() + i];
          o = std::max(o, (*d)[i]);
        }
      auto at = [&](const Dims& c, const Dims& d) {  // broadcast source index
        Dims s(d.size());
        for (size_t i = 0; i < d.size(); ++i) s[i] = d[i] == 1 ? 0 : c[c.size() - d.size() + i];
        return static_cast<size_t>(flat_index(s, d));
      };
      Floats want;
      for_each_coord(out_dims, [&](const Dims& c) { want.push_back(cond[at(c, dc)] ? xv[at(c, dx)] : yv[at(c, dy)]); });
      KernelCase c("Where", 16);
      c.input<uint8_t>("c", BOOL, dc, cond)->shape_varies = trial % 2 == 1;  // odd trials: the dynamic path
      c.input<float>("x", F32, dx, xv);
      c.input<float>("y", F32, dy, yv);
      c.output("z", F32, out_dims);
      REQUIRE(c.run());
      CHECK(c.result_as<float>(0) == want);
    }
  }
}
TEST_CASE("Transposes and Slices large enough to split across the run's threads match naive index math",
          "[kernels][shape][threads]") {
  // Two chunks of the strided copy's 64 KB or more: the copy goes to the threads by its outermost
  // dim (a run's two threads here, whatever the machine's count).
  const memplan::ThreadScope two(2);
  std::mt19937 gen(4321);
  for (const Dims& dims : {Dims{37, 29, 41}, Dims{2, 12, 197, 64}, Dims{96, 1, 700}, Dims{3, 70000}}) {
    const int rank = static_cast<int>(dims.size());
    const Floats x = iota_floats(static_cast<size_t>(count_of(dims)));
    INFO("dims " << dims.size());
    I64 perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    if (std::is_sorted(perm.begin(), perm.end())) std::reverse(perm.begin(), perm.end());
    check_transpose(x, dims, perm);
    {  // every other element of the last axis, from the second: a strided source
      const int64_t last = dims.back();
      const I64 idx = slice_indices(last, 1, last, 2);
      Dims sliced = dims;
      sliced.back() = static_cast<int64_t>(idx.size());
      Floats picked;
      for_each_coord(sliced, [&](const Dims& c) {
        Dims src = c;
        src.back() = idx[static_cast<size_t>(c.back())];
        picked.push_back(x[static_cast<size_t>(flat_index(src, dims))]);
      });
      KernelCase c("Slice", 13);
      c.input<float>("x", F32, dims, x);
      int64s(c, "starts", I64{1});
      int64s(c, "ends", I64{last});
      int64s(c, "axes", I64{rank - 1});
      int64s(c, "steps", I64{2});
      c.output("y", F32, sliced);
      REQUIRE(c.run());
      CHECK(c.result_as<float>(0) == picked);
    }
  }
}

