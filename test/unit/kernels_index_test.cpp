// Index, scatter/gather and data-dependent kernels (GatherND, Scatter*, OneHot, DepthToSpace,
// SpaceToDepth, ReverseSequence, Compress, NonZero, Unique, NonMaxSuppression, the window
// functions, Reduce* with run-time axes, GridSample, RoiAlign, MaxUnpool, MaxPool's Indices)
// against hand-computed values, and the shape bounds that let their outputs and the values
// around them run without --bound.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "shapes/shape_inference.h"
#include "support/kernel_harness.h"
#include "support/model_builder.h"

namespace {

using namespace memplan::test::kernel_names;

// ---- GatherND ----

TEST_CASE("GatherND picks elements and slices by index tuples", "[index]") {
  SECTION("full tuples: elements") {
    KernelCase c("GatherND", 13);
    c.input<float>("data", F32, {2, 2}, Floats{0, 1, 2, 3});
    c.input<int64_t>("indices", INT64, {2, 2}, I64{0, 0, 1, 1});
    c.output("y", F32, {2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0, 3});
  }
  SECTION("short tuples: rows, negative indices count from the end") {
    KernelCase c("GatherND", 13);
    c.input<float>("data", F32, {2, 2}, Floats{0, 1, 2, 3});
    c.input<int64_t>("indices", INT64, {2, 1}, I64{-1, 0});
    c.output("y", F32, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2, 3, 0, 1});
  }
  SECTION("batch_dims 1") {
    KernelCase c("GatherND", 13);
    c.input<float>("data", F32, {2, 2, 2}, Floats{0, 1, 2, 3, 4, 5, 6, 7});
    c.input<int64_t>("indices", INT32, {2, 1}, I64{1, 0});
    c.attr("batch_dims", int64_t{1});
    c.output("y", F32, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2, 3, 4, 5});
  }
  SECTION("an index out of range fails naming the node") {
    KernelCase c("GatherND", 13);
    c.input<float>("data", F32, {2, 2}, Floats{0, 1, 2, 3});
    c.input<int64_t>("indices", INT64, {1, 2}, I64{0, 2});
    c.output("y", F32, {1});
    require_error(c, ErrorKind::InvalidInput, {"GatherND node", "index 2 is out of range for axis 1"});
  }
  SECTION("a tuple longer than the data's rank is refused at load") {
    KernelCase c("GatherND", 13);
    c.input<float>("data", F32, {2}, Floats{0, 1});
    c.input<int64_t>("indices", INT64, {1, 2}, I64{0, 0});
    c.output("y", F32, {1});
    require_error(c, ErrorKind::InvalidInput, {"last dimension of indices (2)"});
  }
}

// ---- ScatterND / ScatterElements / Scatter ----

TEST_CASE("ScatterND writes, adds or multiplies slices", "[index]") {
  SECTION("plain writes (the ONNX example)") {
    KernelCase c("ScatterND", 16);
    c.input<float>("data", F32, {8}, Floats{1, 2, 3, 4, 5, 6, 7, 8});
    c.input<int64_t>("indices", INT64, {4, 1}, I64{4, 3, 1, 7});
    c.input<float>("updates", F32, {4}, Floats{9, 10, 11, 12});
    c.output("y", F32, {8});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 11, 3, 10, 9, 6, 7, 12});
  }
  SECTION("add with a duplicate index, rows of a matrix") {
    KernelCase c("ScatterND", 16);
    c.input<int64_t>("data", INT64, {2, 2}, I64{1, 2, 3, 4});
    c.input<int64_t>("indices", INT64, {2, 1}, I64{1, -1});
    c.input<int64_t>("updates", INT64, {2, 2}, I64{10, 20, 100, 200});
    c.attr("reduction", std::string("add"));
    c.output("y", INT64, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{1, 2, 113, 224});
  }
  SECTION("mul") {
    KernelCase c("ScatterND", 16);
    c.input<float>("data", F32, {3}, Floats{1, 2, 3});
    c.input<int64_t>("indices", INT64, {2, 1}, I64{2, 2});
    c.input<float>("updates", F32, {2}, Floats{2, 5});
    c.attr("reduction", std::string("mul"));
    c.output("y", F32, {3});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 2, 30});
  }
  SECTION("an index out of range fails") {
    KernelCase c("ScatterND", 16);
    c.input<float>("data", F32, {3}, Floats{1, 2, 3});
    c.input<int64_t>("indices", INT64, {1, 1}, I64{3});
    c.input<float>("updates", F32, {1}, Floats{0});
    c.output("y", F32, {3});
    require_error(c, ErrorKind::InvalidInput, {"ScatterND node", "index 3 is out of range"});
  }
  SECTION("updates of the wrong shape are refused at load") {
    KernelCase c("ScatterND", 16);
    c.input<float>("data", F32, {3}, Floats{1, 2, 3});
    c.input<int64_t>("indices", INT64, {1, 1}, I64{0});
    c.input<float>("updates", F32, {2}, Floats{0, 0});
    c.output("y", F32, {3});
    require_error(c, ErrorKind::InvalidInput, {"updates must have the shape"});
  }
}

TEST_CASE("ScatterElements and Scatter write along an axis", "[index]") {
  SECTION("axis 1 (the ONNX example), negative index") {
    KernelCase c("ScatterElements", 16);
    c.input<float>("data", F32, {1, 5}, Floats{1, 2, 3, 4, 5});
    c.input<int64_t>("indices", INT64, {1, 2}, I64{1, -2});
    c.input<float>("updates", F32, {1, 2}, Floats{1.1f, 2.1f});
    c.attr("axis", int64_t{1});
    c.output("y", F32, {1, 5});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 1.1f, 3, 2.1f, 5});
  }
  SECTION("axis 0, add with duplicates, int32 wraps instead of overflowing") {
    KernelCase c("ScatterElements", 16);
    c.input<int32_t>("data", INT32, {2, 2}, std::vector<int32_t>{1, 2, 3, std::numeric_limits<int32_t>::max()});
    c.input<int64_t>("indices", INT64, {2, 2}, I64{1, 1, 1, 1});
    c.input<int32_t>("updates", INT32, {2, 2}, std::vector<int32_t>{10, 1, 20, 0});
    c.attr("reduction", std::string("add"));
    c.output("y", INT32, {2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<int32_t>(0) == std::vector<int32_t>{1, 2, 33, std::numeric_limits<int32_t>::min()});
  }
  SECTION("Scatter (opset 10) is the same op") {
    KernelCase c("Scatter", 10);
    c.input<float>("data", F32, {3, 3}, Floats(9, 0));
    c.input<int64_t>("indices", INT64, {2, 3}, I64{1, 0, 2, 0, 2, 1});
    c.input<float>("updates", F32, {2, 3}, Floats{1, 1.1f, 1.2f, 2, 2.1f, 2.2f});
    c.output("y", F32, {3, 3});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f});
  }
  SECTION("an index out of range fails") {
    KernelCase c("ScatterElements", 16);
    c.input<float>("data", F32, {2}, Floats{1, 2});
    c.input<int64_t>("indices", INT64, {1}, I64{-3});
    c.input<float>("updates", F32, {1}, Floats{0});
    c.output("y", F32, {2});
    require_error(c, ErrorKind::InvalidInput, {"ScatterElements node", "index -3 is out of range for axis 0 of size 2"});
  }
  SECTION("an unknown reduction is refused") {
    KernelCase c("ScatterElements", 16);
    c.input<float>("data", F32, {2}, Floats{1, 2});
    c.input<int64_t>("indices", INT64, {1}, I64{0});
    c.input<float>("updates", F32, {1}, Floats{0});
    c.attr("reduction", std::string("average"));
    c.output("y", F32, {2});
    require_error(c, ErrorKind::Unsupported, {"reduction 'average' is not supported"});
  }
  SECTION("max and min (opset 18) keep the larger and the smaller, repeated indices included") {
    for (const char* r : {"max", "min"}) {
      KernelCase c("ScatterElements", 18);
      c.input<float>("data", F32, {3}, Floats{1, 2, 3});
      c.input<int64_t>("indices", INT64, {3}, I64{0, 2, 2});
      c.input<float>("updates", F32, {3}, Floats{5, -1, 4});
      c.attr("reduction", std::string(r));
      c.output("y", F32, {3});
      REQUIRE(c.run());
      CHECK(c.result_as<float>(0) == (std::string(r) == "max" ? Floats{5, 2, 4} : Floats{1, 2, -1}));
    }
  }
}

// ---- OneHot ----

TEST_CASE("OneHot", "[index]") {
  SECTION("default axis -1; negative and out-of-range indices; float depth") {
    KernelCase c("OneHot", 11);
    c.input<int64_t>("indices", INT64, {4}, I64{0, -1, 5, 2});
    c.input<float>("depth", F32, {}, Floats{3});
    c.input<float>("values", F32, {2}, Floats{0, 7});
    c.output("y", F32, {4, 3});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{7, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 7});
  }
  SECTION("axis 0 with a run-time output shape") {
    KernelCase c("OneHot", 11);
    c.input<float>("indices", F32, {2}, Floats{1, 0});
    c.input<int64_t>("depth", INT64, {1}, I64{2});
    c.input<int64_t>("values", INT64, {2}, I64{-1, 1});
    c.attr("axis", int64_t{0});
    dynamic_output(c, "y", INT64, {-1, 2}, 64);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 2});
    CHECK(c.result_as<int64_t>(0) == I64{-1, 1, 1, -1});
  }
  SECTION("depth 0 fails") {
    KernelCase c("OneHot", 11);
    c.input<int64_t>("indices", INT64, {1}, I64{0});
    c.input<int64_t>("depth", INT64, {}, I64{0});
    c.input<float>("values", F32, {2}, Floats{0, 1});
    dynamic_output(c, "y", F32, {1, -1}, 64);
    require_error(c, ErrorKind::InvalidInput, {"OneHot node", "depth must be a positive number"});
  }
  SECTION("a depth the output's compile-time shape disagrees with fails") {
    KernelCase c("OneHot", 11);
    c.input<int64_t>("indices", INT64, {1}, I64{0});
    c.input<int64_t>("depth", INT64, {}, I64{2});
    c.input<float>("values", F32, {2}, Floats{0, 1});
    c.output("y", F32, {1, 3});
    require_error(c, ErrorKind::InvalidInput, {"depth 2 does not match the output shape [1, 3]"});
  }
}

// ---- DepthToSpace / SpaceToDepth ----

TEST_CASE("DepthToSpace (DCR, CRD) and SpaceToDepth", "[index]") {
  const Floats x{0, 1, 2, 3, 4, 5, 6, 7};
  SECTION("DCR") {
    KernelCase c("DepthToSpace", 13);
    c.input<float>("x", F32, {1, 8, 1, 1}, x);
    c.attr("blocksize", int64_t{2});
    c.output("y", F32, {1, 2, 2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0, 2, 4, 6, 1, 3, 5, 7});
  }
  SECTION("CRD") {
    KernelCase c("DepthToSpace", 13);
    c.input<float>("x", F32, {1, 8, 1, 1}, x);
    c.attr("blocksize", int64_t{2});
    c.attr("mode", std::string("CRD"));
    c.output("y", F32, {1, 2, 2, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == x);
  }
  SECTION("SpaceToDepth undoes DCR") {
    KernelCase c("SpaceToDepth", 13);
    c.input<float>("x", F32, {1, 2, 2, 2}, x);
    c.attr("blocksize", int64_t{2});
    c.output("y", F32, {1, 8, 1, 1});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0, 4, 1, 5, 2, 6, 3, 7});
  }
  SECTION("a height that is not a multiple of the blocksize fails") {
    KernelCase c("SpaceToDepth", 13);
    c.input<float>("x", F32, {1, 1, 3, 2}, Floats(6, 0));
    c.attr("blocksize", int64_t{2});
    c.output("y", F32, {1, 4, 1, 1});
    require_error(c, ErrorKind::InvalidInput, {"SpaceToDepth node", "multiples of the blocksize 2"});
  }
}

// ---- ReverseSequence ----

TEST_CASE("ReverseSequence", "[index]") {
  SECTION("batch axis 0, time axis 1") {
    KernelCase c("ReverseSequence", 10);
    c.input<float>("x", F32, {2, 3}, Floats{0, 1, 2, 3, 4, 5});
    c.input<int64_t>("lens", INT64, {2}, I64{3, 2});
    c.attr("batch_axis", int64_t{0});
    c.attr("time_axis", int64_t{1});
    c.output("y", F32, {2, 3});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2, 1, 0, 4, 3, 5});
  }
  SECTION("time axis 0, with an inner block") {
    KernelCase c("ReverseSequence", 10);
    c.input<float>("x", F32, {2, 1, 2}, Floats{0, 1, 2, 3});
    c.input<int64_t>("lens", INT64, {1}, I64{2});
    c.output("y", F32, {2, 1, 2});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2, 3, 0, 1});
  }
  SECTION("a length past the time axis fails") {
    KernelCase c("ReverseSequence", 10);
    c.input<float>("x", F32, {2, 1}, Floats{0, 1});
    c.input<int64_t>("lens", INT64, {1}, I64{3});
    c.output("y", F32, {2, 1});
    require_error(c, ErrorKind::InvalidInput, {"ReverseSequence node", "sequence length 3 is out of range [0, 2]"});
  }
}

// ---- Compress / NonZero ----

TEST_CASE("Compress keeps the slices its condition selects", "[index]") {
  SECTION("axis 0, a condition shorter than the axis") {
    KernelCase c("Compress", 11);
    c.input<float>("x", F32, {3, 2}, Floats{1, 2, 3, 4, 5, 6});
    c.input<int>("cond", BOOL, {2}, std::vector<int>{0, 1});
    c.attr("axis", int64_t{0});
    dynamic_output(c, "y", F32, {-1, 2}, 24);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{1, 2});
    CHECK(c.result_as<float>(0) == Floats{3, 4});
  }
  SECTION("axis -1") {
    KernelCase c("Compress", 11);
    c.input<float>("x", F32, {2, 2}, Floats{1, 2, 3, 4});
    c.input<int>("cond", BOOL, {2}, std::vector<int>{0, 1});
    c.attr("axis", int64_t{-1});
    dynamic_output(c, "y", F32, {2, -1}, 16);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 1});
    CHECK(c.result_as<float>(0) == Floats{2, 4});
  }
  SECTION("no axis: the flattened input") {
    KernelCase c("Compress", 11);
    c.input<float>("x", F32, {2, 2}, Floats{1, 2, 3, 4});
    c.input<int>("cond", BOOL, {4}, std::vector<int>{1, 0, 0, 1});
    dynamic_output(c, "y", F32, {-1}, 16);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 4});
  }
  SECTION("more selected than the buffer holds fails") {
    KernelCase c("Compress", 11);
    c.input<float>("x", F32, {3}, Floats{1, 2, 3});
    c.input<int>("cond", BOOL, {3}, std::vector<int>{1, 1, 1});
    dynamic_output(c, "y", F32, {-1}, 8);
    require_error(c, ErrorKind::InvalidInput, {"Compress node", "output needs 12 bytes but its buffer holds 8"});
  }
  SECTION("a true entry past the axis fails") {
    KernelCase c("Compress", 11);
    c.input<float>("x", F32, {2}, Floats{1, 2});
    c.input<int>("cond", BOOL, {3}, std::vector<int>{0, 0, 1});
    c.attr("axis", int64_t{0});
    dynamic_output(c, "y", F32, {-1}, 8);
    require_error(c, ErrorKind::InvalidInput, {"index 2 is out of range for axis 0 of size 2"});
  }
}

TEST_CASE("NonZero lists the coordinates of non-zero elements", "[index]") {
  SECTION("bool matrix (the ONNX example)") {
    KernelCase c("NonZero", 13);
    c.input<int>("x", BOOL, {2, 2}, std::vector<int>{1, 0, 1, 1});
    dynamic_output(c, "y", INT64, {2, -1}, 64);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 3});
    CHECK(c.result_as<int64_t>(0) == I64{0, 1, 1, 0, 0, 1});
  }
  SECTION("floats: -0.0 is zero, NaN is not") {
    KernelCase c("NonZero", 13);
    c.input<float>("x", F32, {4}, Floats{-0.0f, std::numeric_limits<float>::quiet_NaN(), 0, -2});
    dynamic_output(c, "y", INT64, {1, -1}, 64);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{1, 2});
    CHECK(c.result_as<int64_t>(0) == I64{1, 3});
  }
}

// ---- Unique ----

TEST_CASE("Unique, sorted or not, with its optional outputs", "[index]") {
  auto make = [](KernelCase& c, int64_t sorted) {
    c.input<float>("x", F32, {6}, Floats{2, 1, 1, 3, 4, 3});
    c.attr("sorted", sorted);
    dynamic_output(c, "y", F32, {-1}, 24);
    dynamic_output(c, "indices", INT64, {-1}, 48);
    c.output("inverse", INT64, {6});
    dynamic_output(c, "counts", INT64, {-1}, 48);
  };
  SECTION("not sorted: order of first occurrence (the ONNX example)") {
    KernelCase c("Unique", 11);
    make(c, 0);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2, 1, 3, 4});
    CHECK(c.result_as<int64_t>(1) == I64{0, 1, 3, 4});
    CHECK(c.result_as<int64_t>(2) == I64{0, 1, 1, 2, 3, 2});
    CHECK(c.result_as<int64_t>(3) == I64{1, 2, 2, 1});
  }
  SECTION("sorted") {
    KernelCase c("Unique", 11);
    make(c, 1);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 2, 3, 4});
    CHECK(c.result_as<int64_t>(1) == I64{1, 0, 3, 4});
    CHECK(c.result_as<int64_t>(2) == I64{1, 0, 0, 2, 3, 2});
    CHECK(c.result_as<int64_t>(3) == I64{2, 1, 2, 1});
  }
  SECTION("axis 1: unique columns; only Y requested") {
    KernelCase c("Unique", 11);
    c.input<float>("x", F32, {2, 3}, Floats{1, 0, 1, 5, 2, 5});
    c.attr("axis", int64_t{1});
    dynamic_output(c, "y", F32, {2, -1}, 24);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 2});
    CHECK(c.result_as<float>(0) == Floats{0, 1, 2, 5});
  }
  SECTION("NaNs sort last and count as one value") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    KernelCase c("Unique", 11);
    c.input<float>("x", F32, {4}, Floats{nan, 1, nan, 0});
    dynamic_output(c, "y", F32, {-1}, 16);
    REQUIRE(c.run());
    const Floats y = c.result_as<float>(0);
    REQUIRE(y.size() == 3);
    CHECK(y[0] == 0);
    CHECK(y[1] == 1);
    CHECK(std::isnan(y[2]));
  }
  SECTION("more unique values than the buffer holds fails") {
    KernelCase c("Unique", 11);
    c.input<float>("x", F32, {3}, Floats{1, 2, 3});
    dynamic_output(c, "y", F32, {-1}, 8);
    require_error(c, ErrorKind::InvalidInput, {"Unique node", "output needs 12 bytes"});
  }
}

// ---- NonMaxSuppression ----

TEST_CASE("NonMaxSuppression", "[index]") {
  const Floats boxes{0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
  const Floats scores{0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
  auto make = [&](KernelCase& c, int64_t max_out, float score_threshold, uint64_t capacity) {
    c.input<float>("boxes", F32, {1, 6, 4}, boxes);
    c.input<float>("scores", F32, {1, 1, 6}, scores);
    c.input<int64_t>("max", INT64, {1}, I64{max_out});
    c.input<float>("iou", F32, {1}, Floats{0.5f});
    c.input<float>("score", F32, {1}, Floats{score_threshold});
    dynamic_output(c, "selected", INT64, {-1, 3}, capacity);
  };
  SECTION("suppression by IoU (the ONNX example)") {
    KernelCase c("NonMaxSuppression", 11);
    make(c, 3, 0, 18 * 8);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3, 3});
    CHECK(c.result_as<int64_t>(0) == I64{0, 0, 3, 0, 0, 0, 0, 0, 5});
  }
  SECTION("score threshold and output limit") {
    KernelCase c("NonMaxSuppression", 11);
    make(c, 1, 0.92f, 18 * 8);
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{0, 0, 3});
  }
  SECTION("center_point_box 1") {
    KernelCase c("NonMaxSuppression", 11);
    c.input<float>("boxes", F32, {1, 2, 4}, Floats{0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1});
    c.input<float>("scores", F32, {1, 1, 2}, Floats{0.5f, 0.9f});
    c.input<int64_t>("max", INT64, {1}, I64{5});
    c.input<float>("iou", F32, {1}, Floats{0.5f});
    c.attr("center_point_box", int64_t{1});
    dynamic_output(c, "selected", INT64, {-1, 3}, 6 * 8);
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(0) == I64{0, 0, 1});
  }
  SECTION("more selected boxes than the buffer holds fails") {
    KernelCase c("NonMaxSuppression", 11);
    make(c, 3, 0, 6 * 8);
    require_error(c, ErrorKind::InvalidInput, {"NonMaxSuppression node", "raise its bound"});
  }
}

// ---- Window functions ----

Floats window(const std::string& op, int64_t size, int64_t periodic) {
  KernelCase c(op, 17);
  c.input<int64_t>("size", INT64, {}, I64{size});
  c.attr("periodic", periodic);
  dynamic_output(c, "y", F32, {-1}, 64);
  REQUIRE(c.run());
  return c.result_as<float>(0);
}

TEST_CASE("HannWindow, HammingWindow, BlackmanWindow", "[index]") {
  const Floats hann = window("HannWindow", 4, 1);
  REQUIRE(hann.size() == 4);
  CHECK(hann[0] == Approx(0).margin(1e-7));
  CHECK(hann[1] == Approx(0.5));
  CHECK(hann[2] == Approx(1));
  const Floats sym = window("HannWindow", 5, 0);
  REQUIRE(sym.size() == 5);
  CHECK(sym[2] == Approx(1));
  CHECK(sym[4] == Approx(0).margin(1e-7));
  const Floats hamming = window("HammingWindow", 4, 1);
  CHECK(hamming[0] == Approx(4.0 / 46.0));
  CHECK(hamming[2] == Approx(1));
  const Floats blackman = window("BlackmanWindow", 4, 1);
  CHECK(blackman[0] == Approx(0).margin(1e-7));
  CHECK(blackman[1] == Approx(0.34));
  CHECK(blackman[2] == Approx(1));
  SECTION("a negative size fails") {
    KernelCase c("HannWindow", 17);
    c.input<int64_t>("size", INT64, {}, I64{-1});
    dynamic_output(c, "y", F32, {-1}, 64);
    require_error(c, ErrorKind::InvalidInput, {"HannWindow node", "size -1 is negative"});
  }
}

// ---- Reduce* with run-time axes ----

TEST_CASE("ReduceSum with axes computed at run time", "[index]") {
  auto make = [](KernelCase& c, const I64& axes, int64_t keepdims) {
    c.input<float>("x", F32, {2, 3}, Floats{1, 2, 3, 4, 5, 6});
    c.input<int64_t>("axes", INT64, {static_cast<int64_t>(axes.size())}, axes);
    c.attr("keepdims", keepdims);
    dynamic_output(c, "y", F32, {-1, -1}, 24);
  };
  SECTION("keepdims") {
    KernelCase c("ReduceSum", 13);
    make(c, {1}, 1);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{2, 1});
    CHECK(c.result_as<float>(0) == Floats{6, 15});
  }
  SECTION("no keepdims, negative axis") {
    KernelCase c("ReduceSum", 13);
    make(c, {-2}, 0);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{3});
    CHECK(c.result_as<float>(0) == Floats{5, 7, 9});
  }
  SECTION("empty axes reduce everything") {
    KernelCase c("ReduceSum", 13);
    make(c, {}, 0);
    REQUIRE(c.run());
    CHECK(c.result(0).rank == 0);
    CHECK(c.result_as<float>(0) == Floats{21});
  }
  SECTION("repeated axes fail") {
    KernelCase c("ReduceSum", 13);
    make(c, {1, -1}, 1);
    require_error(c, ErrorKind::InvalidInput, {"ReduceSum node", "axes repeat"});
  }
}

// ---- GridSample / RoiAlign / MaxUnpool / MaxPool's Indices ----

Floats grid_sample(const std::string& mode, const std::string& padding, int64_t align, const Floats& grid) {
  KernelCase c("GridSample", 16);
  c.input<float>("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
  c.input<float>("grid", F32, {1, 1, static_cast<int64_t>(grid.size() / 2), 2}, grid);
  c.attr("mode", mode);
  c.attr("padding_mode", padding);
  c.attr("align_corners", align);
  c.output("y", F32, {1, 1, 1, static_cast<int64_t>(grid.size() / 2)});
  REQUIRE(c.run());
  return c.result_as<float>(0);
}

TEST_CASE("GridSample", "[index]") {
  CHECK(grid_sample("bilinear", "zeros", 1, {-1, -1, 1, 1, 0, 0, 0, -1}) == Floats{1, 4, 2.5f, 1.5f});
  CHECK(grid_sample("bilinear", "zeros", 1, {-3, -3}) == Floats{0});
  CHECK(grid_sample("bilinear", "border", 1, {-3, -3}) == Floats{1});
  CHECK(grid_sample("nearest", "reflection", 1, {-3, -3}) == Floats{4});
  CHECK(grid_sample("nearest", "zeros", 0, {0, 0, 0.9f, -0.9f}) == Floats{1, 2});  // 0.5 rounds to even
  CHECK(grid_sample("bicubic", "zeros", 1, {-1, -1, 1, -1}) == Floats{1, 2});      // exact at pixel centers
  const Floats nan = grid_sample("bilinear", "zeros", 0, {std::numeric_limits<float>::quiet_NaN(), 0});
  CHECK(std::isnan(nan[0]));
  SECTION("a grid without the last axis of 2 fails") {
    KernelCase c("GridSample", 16);
    c.input<float>("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
    c.input<float>("grid", F32, {1, 1, 1, 3}, Floats{0, 0, 0});
    c.output("y", F32, {1, 1, 1, 1});
    require_error(c, ErrorKind::InvalidInput, {"GridSample node", "grid [N, H_out, W_out, 2]"});
  }
}

TEST_CASE("RoiAlign", "[index]") {
  auto make = [](KernelCase& c, const std::string& mode, int64_t batch) {
    c.input<float>("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
    c.input<float>("rois", F32, {1, 4}, Floats{0, 0, 2, 2});
    c.input<int64_t>("batch", INT64, {1}, I64{batch});
    c.attr("mode", mode);
    c.attr("sampling_ratio", int64_t{2});
    c.output("y", F32, {1, 1, 1, 1});
  };
  SECTION("avg: the four pixel centers") {
    KernelCase c("RoiAlign", 16);
    make(c, "avg", 0);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{2.5f});
  }
  SECTION("max") {
    KernelCase c("RoiAlign", 16);
    make(c, "max", 0);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{4});
  }
  SECTION("a batch index out of range fails") {
    KernelCase c("RoiAlign", 16);
    make(c, "avg", 1);
    require_error(c, ErrorKind::InvalidInput, {"RoiAlign node", "batch index 1 is out of range [0, 1)"});
  }
}

TEST_CASE("MaxUnpool", "[index]") {
  auto make = [](KernelCase& c, const I64& idx) {
    c.input<float>("x", F32, {1, 1, 2, 2}, Floats{1, 2, 3, 4});
    c.input<int64_t>("i", INT64, {1, 1, 2, 2}, idx);
    c.attr("kernel_shape", Dims{2, 2});
    c.attr("strides", Dims{2, 2});
  };
  SECTION("the inferred shape") {
    KernelCase c("MaxUnpool", 11);
    make(c, {5, 7, 13, 15});
    c.output("y", F32, {1, 1, 4, 4});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4});
  }
  SECTION("a larger output_shape pads at the end") {
    KernelCase c("MaxUnpool", 11);
    make(c, {0, 3, 12, 15});
    c.input<int64_t>("shape", INT64, {4}, I64{1, 1, 5, 5});
    dynamic_output(c, "y", F32, {-1, -1, -1, -1}, 100);
    REQUIRE(c.run());
    CHECK(dims_of(c.result(0)) == Dims{1, 1, 5, 5});
    Floats want(25, 0);
    want[0] = 1, want[3] = 2, want[15] = 3, want[18] = 4;
    CHECK(c.result_as<float>(0) == want);
  }
  SECTION("an index out of range fails") {
    KernelCase c("MaxUnpool", 11);
    make(c, {5, 7, 13, 16});
    c.output("y", F32, {1, 1, 4, 4});
    require_error(c, ErrorKind::InvalidInput, {"MaxUnpool node", "index 16 is out of range"});
  }
}

TEST_CASE("MaxPool with the Indices output", "[index]") {
  auto make = [](KernelCase& c, int64_t order) {
    c.input<float>("x", F32, {1, 1, 2, 3}, Floats{1, 5, 2, 4, 3, 6});
    c.attr("kernel_shape", Dims{2, 2});
    c.attr("storage_order", order);
    c.output("y", F32, {1, 1, 1, 2});
    c.output("i", INT64, {1, 1, 1, 2});
  };
  SECTION("row-major") {
    KernelCase c("MaxPool", 12);
    make(c, 0);
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{5, 6});
    CHECK(c.result_as<int64_t>(1) == I64{1, 5});
  }
  SECTION("column-major") {
    KernelCase c("MaxPool", 12);
    make(c, 1);
    REQUIRE(c.run());
    CHECK(c.result_as<int64_t>(1) == I64{2, 5});
  }
  SECTION("an output size the window does not give fails") {
    KernelCase c("MaxPool", 12);
    c.input<float>("x", F32, {1, 1, 2, 3}, Floats(6, 0));
    c.attr("kernel_shape", Dims{2, 2});
    c.output("y", F32, {1, 1, 1, 3});
    c.output("i", INT64, {1, 1, 1, 3});
    require_error(c, ErrorKind::InvalidInput, {"MaxPool node", "differs from the computed"});
  }
}

// ---- Shape bounds (lib/shapes/runtime_bounds.cpp) ----

TEST_CASE("data-dependent sizes are bounded without --bound", "[index]") {
  using namespace memplan::test;
  SECTION("Compress and NonZero by their input; elementwise inputs by their output") {
    ModelBuilder b;
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {2, 3});
    add_input(g, "c", elem::kBool, {2});
    add_input(g, "n", elem::kFloat, {});
    attr_int(add_node(g, "Compress", {"x", "c"}, {"kept"}, "compress"), "axis", 0);
    add_node(g, "NonZero", {"x"}, {"nz"}, "nonzero");
    add_initializer(g, tensor_f32("zero", {}, {0}));
    add_initializer(g, tensor_f32("one", {}, {1}));
    add_initializer(g, tensor_f32("two", {}, {2}));
    add_node(g, "Range", {"zero", "n", "one"}, {"r"}, "range");
    add_node(g, "Cos", {"r"}, {"cos"}, "cos");
    add_node(g, "Mul", {"cos", "two"}, {"y"}, "mul");
    add_output(g, "kept", elem::kFloat, {"K", 3});
    add_output(g, "nz", elem::kInt64, {2, "Z"});
    add_output(g, "y", elem::kFloat, {10});
    memplan::Model m = b.import("m.onnx");
    memplan::infer_shapes(m, {});
    auto* kept = m.main->find_local("kept");
    CHECK(kept->shape_varies);
    CHECK(kept->capacity_bytes == 6 * 4);
    CHECK(m.main->find_local("nz")->capacity_bytes == 2 * 6 * 8);
    auto* r = m.main->find_local("r");
    CHECK(r->shape_varies);
    CHECK(r->capacity_bytes == 10 * 4);
    CHECK(m.main->find_local("cos")->capacity_bytes == 10 * 4);
  }
  SECTION("run-time axes: Reduce* by the padded input, Unsqueeze by the input; unary ops pass it on") {
    ModelBuilder b("hand_built", 13);
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {0, 3});
    add_input(g, "axes", elem::kInt64, {1});
    add_node(g, "ReduceSum", {"x", "axes"}, {"sum"}, "reduce");
    add_node(g, "Unsqueeze", {"x", "axes"}, {"u"}, "unsqueeze");
    add_node(g, "Relu", {"u"}, {"r"}, "relu");
    add_node(g, "Mul", {"sum", "x"}, {"prod"}, "mul");  // two varying-size inputs: no forward bound
    add_output_unranked(g, "r", elem::kFloat);
    add_output_unranked(g, "prod", elem::kFloat);
    memplan::Model m = b.import("m.onnx");
    memplan::ShapeOptions o;
    o.bounds["prod"] = {3};
    memplan::infer_shapes(m, o);
    CHECK(m.main->find_local("sum")->capacity_bytes == 3 * 4);  // [0, 3] reduced on axis 0 keeps [1, 3]
    CHECK(m.main->find_local("u")->capacity_bytes == 0);
    CHECK(m.main->find_local("u")->capacity_known);
    CHECK(m.main->find_local("r")->capacity_known);
    CHECK(m.main->find_local("r")->shape_varies);
  }
  SECTION("a --bound wins over the inferred bound") {
    ModelBuilder b;
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {8});
    add_input(g, "c", elem::kBool, {8});
    add_node(g, "Compress", {"x", "c"}, {"kept"}, "compress");
    add_output(g, "kept", elem::kFloat, {"K"});
    memplan::Model m = b.import("m.onnx");
    memplan::ShapeOptions o;
    o.bounds["kept"] = {3};
    memplan::infer_shapes(m, o);
    CHECK(m.main->find_local("kept")->capacity_bytes == 3 * 4);
  }
}

}  // namespace
