// The normalization, loss and matrix-structure kernels (norm_kernels.cpp, loss_kernels.cpp,
// matrix_kernels.cpp, einsum_kernel.cpp), Hardmax and ReduceLogSum against hand-computed values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "support/kernel_harness.h"

namespace {

using namespace memplan::test::kernel_names;

const RequireClose require_close{scaled(1e-5)};

// Rows [1, 2, 3] and [0, 0, 6]: means 2 and 2, variances 2/3 and 8.
const Floats kRows = {1, 2, 3, 0, 0, 6};
const float kInv0 = 1.2247449f, kInv1 = 0.35355339f;  // 1 / sqrt(variance)
const Floats kNormalized = {-kInv0, 0, kInv0, -2 * kInv1, -2 * kInv1, 4 * kInv1};

// ---- LayerNormalization ----

TEST_CASE("LayerNormalization normalizes the last axis, with scale, bias, Mean and InvStdDev", "[norm-loss]") {
  for (bool varies : {false, true}) {
    KernelCase c("LayerNormalization", 17);
    c.input<float>("x", F32, {2, 3}, kRows)->shape_varies = varies;
    c.input<float>("scale", F32, {3}, Floats{1, 2, 3});
    c.input<float>("bias", F32, {3}, Floats{0, 1, -1});
    c.attr("epsilon", 0.f);
    c.output("y", F32, {2, 3})->shape_varies = varies;
    c.output("mean", F32, {2, 1})->shape_varies = varies;
    c.output("inv_std", F32, {2, 1})->shape_varies = varies;
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), Floats{-kInv0, 1, 3 * kInv0 - 1, -2 * kInv1, -4 * kInv1 + 1, 12 * kInv1 - 1});
    require_close(c.result_as<float>(1), Floats{2, 2});
    require_close(c.result_as<float>(2), Floats{kInv0, kInv1});
    CHECK(dims_of(c.result(1)) == Dims{2, 1});
  }
}

TEST_CASE("LayerNormalization row by row gives the broadcast walk's numbers", "[norm-loss]") {
  // A transformer's [batch, seq, d] normalized over d (or over seq and d), scale and bias per
  // element of a row: a static input and a varying one take the vectorized row loop, one asked
  // for its Mean output the general walk. Both sum the mean in double, in another order (the row
  // loop its deviations in float): the same floats but for the last bit or so.
  const int64_t axis = GENERATE(int64_t{-1}, int64_t{1});
  const bool with_bias = GENERATE(true, false);
  Floats x(2 * 5 * 12), scale, bias;
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.f + static_cast<float>(i % 7);
  const int64_t row = axis == -1 ? 12 : 60;
  for (int64_t j = 0; j < row; ++j) {
    scale.push_back(0.5f + 0.01f * static_cast<float>(j));
    bias.push_back(0.1f * static_cast<float>(j) - 1.f);
  }
  std::vector<Floats> results;
  for (int variant = 0; variant < 3; ++variant) {
    const bool varies = variant == 1, with_mean = variant == 2;
    KernelCase c("LayerNormalization", 17);
    c.input<float>("x", F32, {2, 5, 12}, x)->shape_varies = varies;
    c.input<float>("scale", F32, axis == -1 ? Dims{12} : Dims{5, 12}, scale);
    if (with_bias) c.input<float>("bias", F32, axis == -1 ? Dims{1, 12} : Dims{5, 12}, bias);
    c.attr("axis", axis);
    c.output("y", F32, {2, 5, 12})->shape_varies = varies;
    if (with_mean) c.output("mean", F32, axis == -1 ? Dims{2, 5, 1} : Dims{2, 1, 1});
    REQUIRE(c.run());
    results.push_back(c.result_as<float>(0));
    CHECK((c.kernel()->implementation() == "memplan broadcast loop") == with_mean);
  }
  INFO("axis " << axis << ", bias " << with_bias);
  for (size_t r = 1; r < results.size(); ++r) {
    REQUIRE(results[0].size() == results[r].size());
    for (size_t i = 0; i < results[0].size(); ++i) CHECK(results[0][i] == Approx(results[r][i]).epsilon(1e-6).margin(1e-6));
  }
  // Each row has mean 0 and variance 1 before scale and bias.
  const float y0 = (results[0][0] - (with_bias ? bias[0] : 0.f)) / scale[0];
  double mean = 0;
  for (int64_t j = 0; j < row; ++j) mean += x[static_cast<size_t>(j)];
  mean /= static_cast<double>(row);
  double var = 0;
  for (int64_t j = 0; j < row; ++j) var += (x[static_cast<size_t>(j)] - mean) * (x[static_cast<size_t>(j)] - mean);
  var /= static_cast<double>(row);
  CHECK(std::abs(y0 - static_cast<float>((x[0] - mean) / std::sqrt(var + 1e-5))) < 1e-5f);
}

TEST_CASE("LayerNormalization row by row keeps its digits on rows far from zero, at transformer widths",
          "[norm-loss]") {
  // Rows of 96 and 768 values around 1000 with a spread of about 1 (activations after a large
  // residual): a float row's mean is summed in double and its deviations taken from that mean,
  // so nothing cancels. Variance as E[x^2] - mean^2 in float would lose it all (1e6 against 0.5
  // in 24 bits); the answer is the double-precision one within what the floats of x carry
  // (their spacing near 1000 is 6e-5).
  const int64_t width = GENERATE(int64_t{96}, int64_t{768});
  const int64_t rows = 6;
  Floats x(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 1000.f + std::sin(static_cast<float>(i) * 0.61f) + 0.25f * static_cast<float>(i % 5);
  KernelCase c("LayerNormalization", 17);
  c.input<float>("x", F32, {rows, width}, x);
  c.input<float>("scale", F32, {width}, Floats(static_cast<size_t>(width), 1.f));
  c.output("y", F32, {rows, width});
  REQUIRE(c.run());
  CHECK(c.kernel()->implementation() == "memplan row loop");
  const Floats y = c.result_as<float>(0);
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * width;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < width; ++j) mean += xr[j];
    mean /= static_cast<double>(width);
    for (int64_t j = 0; j < width; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(width);
    for (int64_t j = 0; j < width; ++j)
      worst = std::max(worst, std::abs(y[static_cast<size_t>(r * width + j)] - (xr[j] - mean) / std::sqrt(var + 1e-5)));
  }
  INFO("width " << width << ": largest difference from the double-precision answer " << worst);
  CHECK(worst < 2e-4);
}

TEST_CASE("LayerNormalization over every axis adds epsilon and takes a full-shape scale", "[norm-loss]") {
  KernelCase c("LayerNormalization", 17);
  c.input<float>("x", F32, {2, 2}, Floats{1, 3, 1, 3});  // mean 2, variance 1
  c.input<float>("scale", F32, {2, 2}, Floats{1, 1, 2, 2});
  c.attr("axis", int64_t{0});
  c.attr("epsilon", 3.f);  // 1 / sqrt(1 + 3) = 0.5
  c.output("y", F32, {2, 2});
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), Floats{-0.5f, 0.5f, -1, 1});
}

TEST_CASE("LayerNormalization runs float64 with a float32 Mean", "[norm-loss]") {
  KernelCase c("LayerNormalization", 17);
  c.input<float>("x", F64, {2, 3}, kRows);
  c.input<float>("scale", F64, {3}, Floats{1, 1, 1});
  c.attr("epsilon", 0.f);
  c.output("y", F64, {2, 3});
  c.output("mean", F32, {2, 1});
  REQUIRE(c.run());
  require_close(c.result_as<double>(0), Doubles(kNormalized.begin(), kNormalized.end()));
  require_close(c.result_as<float>(1), Floats{2, 2});
}

TEST_CASE("LayerNormalization refuses a scale that does not broadcast to the input", "[norm-loss]") {
  KernelCase c("LayerNormalization", 17);
  c.input<float>("x", F32, {2, 3}, kRows);
  c.input<float>("scale", F32, {2}, Floats{1, 1});
  c.output("y", F32, {2, 3});
  require_error(c, ErrorKind::InvalidInput, {"LayerNormalization node 'LayerNormalization_under_test'", "broadcast"});
}

TEST_CASE("LayerNormalization refuses an int32 input", "[norm-loss]") {
  KernelCase c("LayerNormalization", 17);
  c.input<int>("x", INT32, {1, 2}, std::vector<int>{1, 2});
  c.input<int>("scale", INT32, {2}, std::vector<int>{1, 1});
  c.output("y", INT32, {1, 2});
  require_error(c, ErrorKind::Unsupported, {"LayerNormalization node", "int32"});
}

// ---- InstanceNormalization and MeanVarianceNormalization ----

TEST_CASE("InstanceNormalization normalizes each channel of each sample", "[norm-loss]") {
  KernelCase c("InstanceNormalization", 6);
  c.input<float>("x", F32, {1, 2, 3}, kRows);
  c.input<float>("scale", F32, {2}, Floats{2, 1});
  c.input<float>("bias", F32, {2}, Floats{1, 0});
  c.attr("epsilon", 0.f);
  c.output("y", F32, {1, 2, 3});
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), Floats{1 - 2 * kInv0, 1, 1 + 2 * kInv0, -2 * kInv1, -2 * kInv1, 4 * kInv1});
}

TEST_CASE("InstanceNormalization of two images of three channels runs channel by channel, static or dynamic",
          "[norm-loss]") {
  // Channel-by-channel rows, each its own scale and bias (row r is channel r % 3), whether the
  // rows are known at load or found each run (audio of any length). Both against the formula.
  const int64_t n = 2, c = 3, len = 1000;
  Floats x(static_cast<size_t>(n * c * len));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * (1 + i % 7));
  const Floats scale{0.5f, -2.f, 3.f}, bias{1.f, 0.f, -4.f};
  Floats want(x.size());
  for (int64_t r = 0; r < n * c; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < len; ++j) mean += x[static_cast<size_t>(r * len + j)];
    mean /= len;
    for (int64_t j = 0; j < len; ++j) var += std::pow(x[static_cast<size_t>(r * len + j)] - mean, 2);
    const double inv = 1 / std::sqrt(var / len + 1e-5);
    for (int64_t j = 0; j < len; ++j) {
      const size_t i = static_cast<size_t>(r * len + j);
      want[i] = static_cast<float>((x[i] - mean) * inv * scale[static_cast<size_t>(r % c)] + bias[static_cast<size_t>(r % c)]);
    }
  }
  for (bool varies : {false, true}) {
    KernelCase k("InstanceNormalization", 6);
    k.input<float>("x", F32, {n, c, len}, x)->shape_varies = varies;
    k.input<float>("scale", F32, {c}, scale);
    k.input<float>("bias", F32, {c}, bias);
    k.output("y", F32, {n, c, len})->shape_varies = varies;
    INFO("dynamic " << varies);
    REQUIRE(k.run());
    require_close(k.result_as<float>(0), want);
    CHECK(k.kernel()->implementation() == "memplan row loop");
  }
}

TEST_CASE("InstanceNormalization refuses a scale that is not one per channel", "[norm-loss]") {
  KernelCase c("InstanceNormalization", 6);
  c.input<float>("x", F32, {1, 2, 3}, kRows);
  c.input<float>("scale", F32, {3}, Floats{1, 1, 1});
  c.input<float>("bias", F32, {2}, Floats{0, 0});
  c.output("y", F32, {1, 2, 3});
  require_error(c, ErrorKind::InvalidInput, {"InstanceNormalization node", "shape [2]"});
}

TEST_CASE("MeanVarianceNormalization normalizes over axes 0, 2, 3 by default", "[norm-loss]") {
  KernelCase c("MeanVarianceNormalization", 13);
  c.input<float>("x", F32, {1, 2, 1, 3}, kRows);
  c.output("y", F32, {1, 2, 1, 3});
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), kNormalized);
}

TEST_CASE("MeanVarianceNormalization takes its axes from the attribute", "[norm-loss]") {
  KernelCase c("MeanVarianceNormalization", 13);
  c.input<float>("x", F32, {3, 2}, Floats{1, 0, 2, 0, 3, 6});  // kRows transposed
  c.attr("axes", I64{0});
  c.output("y", F32, {3, 2});
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), Floats{-kInv0, -2 * kInv1, 0, -2 * kInv1, kInv0, 4 * kInv1});
}

TEST_CASE("MeanVarianceNormalization refuses an axis out of range", "[norm-loss]") {
  KernelCase c("MeanVarianceNormalization", 13);
  c.input<float>("x", F32, {3, 2}, Floats(6, 1));  // the default axes need rank 4
  c.output("y", F32, {3, 2});
  require_error(c, ErrorKind::InvalidInput, {"MeanVarianceNormalization node", "axis 2 is out of range"});
}

// ---- BatchNormalization in training mode ----

void batch_norm_training(KernelCase& c, bool varies, const Floats& input_mean) {
  c.input<float>("x", F32, {2, 2}, Floats{1, 0, 3, 6})->shape_varies = varies;  // channels {1, 3} and {0, 6}
  c.input<float>("scale", F32, {2}, Floats{1, 2});
  c.input<float>("bias", F32, {2}, Floats{0, 1});
  c.input<float>("input_mean", F32, {static_cast<int64_t>(input_mean.size())}, input_mean);
  c.input<float>("input_var", F32, {2}, Floats{1, 1});
  c.attr("training_mode", int64_t{1});
  c.attr("epsilon", 0.f);
  c.attr("momentum", 0.5f);
  c.output("y", F32, {2, 2})->shape_varies = varies;
  c.output("running_mean", F32, {2})->shape_varies = varies;
  c.output("running_var", F32, {2})->shape_varies = varies;
}

TEST_CASE("BatchNormalization in training mode uses the batch's statistics and updates the running ones", "[norm-loss]") {
  for (bool varies : {false, true}) {
    KernelCase c("BatchNormalization", 15);
    batch_norm_training(c, varies, {10, 20});
    REQUIRE(c.run());
    // Means 2 and 3, variances 1 and 9.
    require_close(c.result_as<float>(0), Floats{-1, -1, 1, 3});
    require_close(c.result_as<float>(1), Floats{6, 11.5f});
    require_close(c.result_as<float>(2), Floats{1, 5});
    CHECK(dims_of(c.result(1)) == Dims{2});
  }
}

TEST_CASE("BatchNormalization in training mode refuses an input_mean not per channel", "[norm-loss]") {
  KernelCase c("BatchNormalization", 15);
  batch_norm_training(c, false, {10, 20, 30});
  require_error(c, ErrorKind::InvalidInput, {"BatchNormalization node", "input_mean and input_var must have shape [2]"});
}

// ---- NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss ----

const Floats kLogProbs = {-1, -2, -3, -4, -5, -6};  // [2, 3]

Floats nll(const std::string& reduction, const I64& target, bool weighted, int64_t ignore = 99) {
  KernelCase c("NegativeLogLikelihoodLoss", 13);
  c.input<float>("x", F32, {2, 3}, kLogProbs);
  c.input<int64_t>("target", INT64, {2}, target);
  if (weighted) c.input<float>("weight", F32, {3}, Floats{1, 2, 3});
  c.attr("reduction", reduction);
  if (ignore != 99) c.attr("ignore_index", ignore);
  c.output("loss", F32, reduction == "none" ? Dims{2} : Dims{});
  REQUIRE(c.run());
  return c.result_as<float>(0);
}

TEST_CASE("NegativeLogLikelihoodLoss reduces none, sum and mean, with weights", "[norm-loss]") {
  require_close(nll("none", {2, 0}, false), Floats{3, 4});
  require_close(nll("sum", {2, 0}, false), Floats{7});
  require_close(nll("mean", {2, 0}, false), Floats{3.5f});
  require_close(nll("none", {2, 0}, true), Floats{9, 4});
  require_close(nll("sum", {2, 0}, true), Floats{13});
  require_close(nll("mean", {2, 0}, true), Floats{13.f / 4});
}

TEST_CASE("NegativeLogLikelihoodLoss skips ignore_index, negative included", "[norm-loss]") {
  require_close(nll("none", {2, -1}, true, -1), Floats{9, 0});
  require_close(nll("mean", {2, -1}, true, -1), Floats{3});  // the ignored weight is not counted
  CHECK(std::isnan(nll("mean", {1, 1}, false, 1)[0]));  // 0 / 0 like ONNX's reference
}

TEST_CASE("NegativeLogLikelihoodLoss handles [N, C, d] inputs and int32 targets", "[norm-loss]") {
  KernelCase c("NegativeLogLikelihoodLoss", 13);
  c.input<float>("x", F32, {1, 2, 2}, Floats{-1, -2, -3, -4});  // x[0, c, d] = {{-1, -2}, {-3, -4}}
  c.input<int>("target", INT32, {1, 2}, std::vector<int>{1, 0});
  c.attr("reduction", std::string("none"));
  c.output("loss", F32, {1, 2});
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), Floats{3, 2});
}

TEST_CASE("NegativeLogLikelihoodLoss refuses a target out of range", "[norm-loss]") {
  KernelCase c("NegativeLogLikelihoodLoss", 13);
  c.input<float>("x", F32, {2, 3}, kLogProbs);
  c.input<int64_t>("target", INT64, {2}, I64{0, 3});
  c.output("loss", F32, {});
  require_error(c, ErrorKind::InvalidInput, {"NegativeLogLikelihoodLoss node", "target 3 is out of range for 3 classes"});
}

TEST_CASE("SoftmaxCrossEntropyLoss applies LogSoftmax over axis 1 and can output it", "[norm-loss]") {
  for (bool with_log_prob : {false, true}) {
    KernelCase c("SoftmaxCrossEntropyLoss", 13);
    // Row 0 softmax is [1/4, 3/4], row 1 [1/2, 1/2].
    c.input<double>("scores", F32, {2, 2}, Doubles{0, std::log(3.0), 1, 1});
    c.input<int64_t>("labels", INT64, {2}, I64{0, 1});
    c.attr("reduction", std::string("sum"));
    c.output("loss", F32, {});
    if (with_log_prob) c.output("log_prob", F32, {2, 2});
    REQUIRE(c.run());
    require_close(c.result_as<float>(0), Floats{static_cast<float>(std::log(4.0) + std::log(2.0))});
    if (with_log_prob)
      require_close(c.result_as<float>(1), Floats{static_cast<float>(-std::log(4.0)), static_cast<float>(std::log(0.75)),
                                                  static_cast<float>(-std::log(2.0)), static_cast<float>(-std::log(2.0))});
  }
}

TEST_CASE("SoftmaxCrossEntropyLoss with shapes known at run time sets its outputs' shapes", "[norm-loss]") {
  KernelCase c("SoftmaxCrossEntropyLoss", 13);
  c.input<float>("scores", F32, {2, 2}, Floats{0, 0, 0, 0})->shape_varies = true;
  c.input<int64_t>("labels", INT64, {2}, I64{0, 1})->shape_varies = true;
  c.attr("reduction", std::string("none"));
  c.output("loss", F32, {2})->shape_varies = true;
  c.output("log_prob", F32, {2, 2})->shape_varies = true;
  REQUIRE(c.run());
  const float ln2 = static_cast<float>(std::log(2.0));
  require_close(c.result_as<float>(0), Floats{ln2, ln2});
  require_close(c.result_as<float>(1), Floats{-ln2, -ln2, -ln2, -ln2});
  CHECK(dims_of(c.result(0)) == Dims{2});
}

TEST_CASE("SoftmaxCrossEntropyLoss runs float64 with weights and mean", "[norm-loss]") {
  KernelCase c("SoftmaxCrossEntropyLoss", 13);
  c.input<double>("scores", F64, {1, 3, 1}, Doubles{5, 5, 5});  // log_prob -log 3 everywhere
  c.input<int64_t>("labels", INT64, {1, 1}, I64{2});
  c.input<double>("weight", F64, {3}, Doubles{1, 1, 4});
  c.output("loss", F64, {});
  REQUIRE(c.run());
  require_close(c.result_as<double>(0), Doubles{std::log(3.0)}, scaled(1e-12));
}

TEST_CASE("SoftmaxCrossEntropyLoss refuses an unknown reduction", "[norm-loss]") {
  KernelCase c("SoftmaxCrossEntropyLoss", 13);
  c.input<float>("scores", F32, {1, 2}, Floats{0, 0});
  c.input<int64_t>("labels", INT64, {1}, I64{0});
  c.attr("reduction", std::string("max"));
  c.output("loss", F32, {});
  require_error(c, ErrorKind::InvalidInput, {"SoftmaxCrossEntropyLoss node", "reduction 'max'"});
}

// ---- Hardmax ----

Floats hardmax(const Dims& dims, const Floats& x, int64_t axis, int64_t opset = 13) {
  KernelCase c("Hardmax", opset);
  c.input<float>("x", F32, dims, x);
  c.attr("axis", axis);
  c.output("y", F32, dims);
  REQUIRE(c.run());
  return c.result_as<float>(0);
}

TEST_CASE("Hardmax marks the first maximum along the axis", "[norm-loss]") {
  const Floats x = {1, 3, 3, -1, -2, -3};
  CHECK(hardmax({2, 3}, x, -1) == Floats{0, 1, 0, 1, 0, 0});
  CHECK(hardmax({2, 3}, x, 0) == Floats{1, 1, 1, 0, 0, 0});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(hardmax({1, 3}, Floats{1, nan, 2}, 1) == Floats{0, 1, 0});  // NaN ranks highest, as in numpy
}

TEST_CASE("Hardmax before opset 13 picks over the flattened trailing axes", "[norm-loss]") {
  // [1, 2, 2] at axis 1 is one row of 4 elements (opset 13 would pick once per column).
  CHECK(hardmax({1, 2, 2}, Floats{1, 2, 4, 3}, 1, 11) == Floats{0, 0, 1, 0});
  CHECK(hardmax({1, 2, 2}, Floats{1, 2, 4, 3}, 1, 13) == Floats{0, 0, 1, 1});
}

TEST_CASE("Hardmax refuses an axis out of range", "[norm-loss]") {
  KernelCase c("Hardmax", 13);
  c.input<float>("x", F32, {2, 3}, Floats(6, 0));
  c.attr("axis", int64_t{2});
  c.output("y", F32, {2, 3});
  require_error(c, ErrorKind::InvalidInput, {"Hardmax node", "axis 2 is out of range for rank 2"});
}

// ---- Trilu ----

const I64 k3x4 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

I64 trilu(bool upper, const I64* k, bool k_at_run_time = false, Dims dims = {3, 4}, const I64& x = k3x4) {
  KernelCase c("Trilu", 14);
  c.input<int64_t>("x", INT64, dims, x);
  if (k) {
    // The harness converts through double, which loses INT64_MAX: write the exact bytes.
    Value* v = c.input<int64_t>("k", INT64, {}, I64{0}, true);
    std::memcpy(const_cast<memplan::Tensor&>(*v->constant).bytes.data(), k->data(), sizeof(int64_t));
    if (k_at_run_time) v->constant = nullptr;
  }
  c.attr("upper", int64_t{upper});
  c.output("y", INT64, dims);
  REQUIRE(c.run());
  return c.result_as<int64_t>(0);
}

TEST_CASE("Trilu keeps the upper or lower triangle shifted by k", "[norm-loss]") {
  CHECK(trilu(true, nullptr) == I64{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  CHECK(trilu(false, nullptr) == I64{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  const I64 one = {1}, minus_one = {-1}, big = {std::numeric_limits<int64_t>::max()}, small = {std::numeric_limits<int64_t>::min()};
  CHECK(trilu(true, &one, true) == I64{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(trilu(false, &minus_one) == I64{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  CHECK(trilu(true, &big) == I64(12, 0));
  CHECK(trilu(false, &big) == k3x4);
  CHECK(trilu(true, &small) == k3x4);
  CHECK(trilu(false, &small) == I64(12, 0));
  CHECK(trilu(true, nullptr, false, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}) == I64{1, 2, 0, 4, 5, 6, 0, 8});
}

TEST_CASE("Trilu refuses a k of two values", "[norm-loss]") {
  KernelCase c("Trilu", 14);
  c.input<int64_t>("x", INT64, {2, 2}, I64{1, 2, 3, 4});
  c.input<int64_t>("k", INT64, {2}, I64{1, 2}, false);
  c.output("y", INT64, {2, 2});
  require_error(c, ErrorKind::InvalidInput, {"Trilu node", "k must hold one value"});
}

// ---- EyeLike ----

TEST_CASE("EyeLike writes ones on the k-th diagonal in the output type", "[norm-loss]") {
  auto eye = [](int64_t k, DType out) {
    KernelCase c("EyeLike", 9);
    c.input<int>("x", INT32, {3, 4}, std::vector<int>(12, 7));
    c.attr("k", k);
    c.attr("dtype", static_cast<int64_t>(out));
    c.output("y", out, {3, 4});
    REQUIRE(c.run());
    return c;
  };
  CHECK(eye(1, F32).result_as<float>(0) == Floats{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  CHECK(eye(-2, F64).result_as<double>(0) == Doubles{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0});
  CHECK(eye(std::numeric_limits<int64_t>::min(), F32).result_as<float>(0) == Floats(12, 0));
  CHECK(eye(0, DType::Float16).result_as<uint16_t>(0) ==
        std::vector<uint16_t>{0x3C00, 0, 0, 0, 0, 0x3C00, 0, 0, 0, 0, 0x3C00, 0});
  CHECK(eye(0, DType::Bool).result_as<uint8_t>(0) == std::vector<uint8_t>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
}

TEST_CASE("EyeLike refuses a rank-3 input", "[norm-loss]") {
  KernelCase c("EyeLike", 9);
  c.input<int>("x", INT32, {1, 2, 2}, std::vector<int>(4, 0));
  c.output("y", INT32, {1, 2, 2});
  require_error(c, ErrorKind::InvalidInput, {"EyeLike node", "must be 2-D"});
}

// ---- Det ----

TEST_CASE("Det computes determinants of a batch, pivoting as needed", "[norm-loss]") {
  KernelCase c("Det", 11);
  // {{1, 2}, {3, 4}} = -2; {{0, 1}, {1, 0}} needs a row swap = -1; {{2, 4}, {1, 2}} is singular.
  c.input<float>("x", F32, {3, 2, 2}, Floats{1, 2, 3, 4, 0, 1, 1, 0, 2, 4, 1, 2});
  c.output("y", F32, {3});
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), Floats{-2, -1, 0});

  KernelCase d("Det", 11);
  d.input<double>("x", F64, {3, 3}, Doubles{0, 1, 2, 1, 0, 3, 4, -3, 8});
  d.output("y", F64, {});
  REQUIRE(d.run());
  require_close(d.result_as<double>(0), Doubles{-2}, scaled(1e-12));
}

TEST_CASE("Det with a shape known at run time sizes its scratchpad by the input's capacity", "[norm-loss]") {
  KernelCase c("Det", 11);
  Value* x = c.input<float>("x", F32, {2, 2}, Floats{1, 2, 3, 4});
  x->shape_varies = true;
  x->capacity_bytes = 16;
  c.output("y", F32, {})->shape_varies = true;
  REQUIRE(c.run());
  require_close(c.result_as<float>(0), Floats{-2});
  CHECK(c.kernel()->scratchpad_bytes() == 4 * sizeof(double));
}

TEST_CASE("Det refuses matrices that are not square", "[norm-loss]") {
  KernelCase c("Det", 11);
  c.input<float>("x", F32, {2, 3}, Floats(6, 1));
  c.output("y", F32, {});
  require_error(c, ErrorKind::InvalidInput, {"Det node", "must be square, not 2 x 3"});
}

// ---- Einsum ----

template <typename T>
std::vector<T> einsum(const std::string& eq, const std::vector<std::pair<Dims, std::vector<T>>>& in, DType t, const Dims& out) {
  KernelCase c("Einsum", 12);
  for (size_t i = 0; i < in.size(); ++i)
    c.input<T>(std::string(1, 'x').append(std::to_string(i)), t, in[i].first, in[i].second);
  c.attr("equation", eq);
  c.output("y", t, out);
  REQUIRE(c.run());
  return c.result_as<T>(0);
}

TEST_CASE("Einsum contracts, transposes, sums and takes diagonals", "[norm-loss]") {
  const Floats a = {1, 2, 3, 4, 5, 6};  // [2, 3]
  CHECK(einsum<float>("ij,jk->ik", {{{2, 3}, a}, {{3, 2}, a}}, F32, {2, 2}) == Floats{22, 28, 49, 64});
  CHECK(einsum<float>("ij->ji", {{{2, 3}, a}}, F32, {3, 2}) == Floats{1, 4, 2, 5, 3, 6});
  CHECK(einsum<float>("ba", {{{2, 3}, a}}, F32, {3, 2}) == Floats{1, 4, 2, 5, 3, 6});  // implicit: sorted "ab"
  CHECK(einsum<float>("ij -> i", {{{2, 3}, a}}, F32, {2}) == Floats{6, 15});
  CHECK(einsum<float>("i,i", {{{3}, {1, 2, 3}}, {{3}, {4, 5, 6}}}, F32, {}) == Floats{32});
  CHECK(einsum<float>("ii", {{{2, 2}, {1, 2, 3, 4}}}, F32, {}) == Floats{5});  // trace
  CHECK(einsum<double>("...ii->...i", {{{2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}}}, F64, {2, 2}) == Doubles{1, 4, 5, 8});
  // "..." broadcasts: [2, 1] against [3].
  CHECK(einsum<int64_t>("...,...->...", {{{2, 1}, {1, 2}}, {{3}, {1, 2, 3}}}, INT64, {2, 3}) == I64{1, 2, 3, 2, 4, 6});
}

TEST_CASE("Einsum refuses mismatched sizes and bad equations", "[norm-loss]") {
  SECTION("sizes") {
    KernelCase c("Einsum", 12);
    c.input<float>("a", F32, {2, 3}, Floats(6, 1));
    c.input<float>("b", F32, {2, 2}, Floats(4, 1));
    c.attr("equation", std::string("ij,jk->ik"));
    c.output("y", F32, {2, 2});
    require_error(c, ErrorKind::InvalidInput, {"Einsum node", "a label has sizes 3 and 2"});
  }
  SECTION("characters") {
    KernelCase c("Einsum", 12);
    c.input<float>("a", F32, {2}, Floats(2, 1));
    c.attr("equation", std::string("i1"));
    c.output("y", F32, {2});
    require_error(c, ErrorKind::InvalidInput, {"Einsum node", "'i1'"});
  }
  SECTION("an output dropping the ellipsis") {
    KernelCase c("Einsum", 12);
    c.input<float>("a", F32, {2, 2}, Floats(4, 1));
    c.attr("equation", std::string("...i->i"));
    c.output("y", F32, {2});
    require_error(c, ErrorKind::Unsupported, {"Einsum node", "'...'"});
  }
}

// ---- ReduceLogSum (and float64 reductions) ----

TEST_CASE("ReduceLogSum is the log of the sum, float32 and float64", "[norm-loss]") {
  for (DType t : {F32, F64}) {
    KernelCase c("ReduceLogSum", 13);
    c.input<float>("x", t, {2, 2}, Floats{1, 2, 3, 4});
    c.attr("axes", I64{1});
    c.attr("keepdims", int64_t{0});
    c.output("y", t, {2});
    REQUIRE(c.run());
    if (t == F32) require_close(c.result_as<float>(0), Floats{std::log(3.f), std::log(7.f)});
    else require_close(c.result_as<double>(0), Doubles{std::log(3.0), std::log(7.0)}, scaled(1e-12));
  }
}

TEST_CASE("ReduceLogSumExp runs float64", "[norm-loss]") {
  KernelCase c("ReduceLogSumExp", 13);
  c.input<double>("x", F64, {2}, Doubles{1000, 1000});
  c.output("y", F64, {1});
  REQUIRE(c.run());
  require_close(c.result_as<double>(0), Doubles{1000 + std::log(2.0)}, scaled(1e-12));
}

}  // namespace
