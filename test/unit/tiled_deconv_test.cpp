// A ConvTranspose whose kernel equals its stride (an upsampling: U-Net's, DBNet's) runs on memplan's
// tiled loop with its bias Add, batch norm and activation folded in, never on oneDNN's GEMM; other
// ConvTransposes stay on oneDNN's deconvolution, with the activation as its post-op.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "support/model_builder.h"
#include "support/naive_conv.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

struct Upsampling {
  std::vector<int64_t> x, w;  // [N, C, (H,) W], [C, M/group, (kh,) kw]
  std::vector<int64_t> strides;
  int64_t group = 1;
  bool bias = true;
  bool bias_add_bn_relu = false;  // followed by Add(per-channel) -> BatchNormalization -> Relu
};

int64_t elements(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

struct Built {
  std::shared_ptr<const CompiledModel> model;
  std::vector<float> x, want;
  std::vector<int64_t> y;
};

// Compiles the ConvTranspose (and its tail) and computes ONNX's answer with the naive scatter.
Built build(const Upsampling& u, const std::string& file, int threads) {
  const bool one_d = u.x.size() == 3;
  const std::vector<int64_t> x4 = one_d ? std::vector<int64_t>{u.x[0], u.x[1], 1, u.x[2]} : u.x;
  const std::vector<int64_t> w4 = one_d ? std::vector<int64_t>{u.w[0], u.w[1], 1, u.w[2]} : u.w;
  const std::vector<int64_t> s2 = one_d ? std::vector<int64_t>{1, u.strides[0]} : u.strides;
  const int64_t m = u.w[1] * u.group;
  const int64_t oh = (x4[2] - 1) * s2[0] + w4[2], ow = (x4[3] - 1) * s2[1] + w4[3];
  Built b;
  b.y = {u.x[0], m};
  if (!one_d) b.y.push_back(oh);
  b.y.push_back(ow);
  b.x = random_floats(static_cast<size_t>(elements(u.x)), 71);
  const std::vector<float> w = random_floats(static_cast<size_t>(elements(u.w)), 72);
  const std::vector<float> bias = u.bias ? random_floats(static_cast<size_t>(m), 73) : std::vector<float>{};
  const std::vector<float> add = random_floats(static_cast<size_t>(m), 74), gamma = random_floats(static_cast<size_t>(m), 75),
                           beta = random_floats(static_cast<size_t>(m), 76), mean = random_floats(static_cast<size_t>(m), 77),
                           var = random_floats(static_cast<size_t>(m), 78, 0.5f, 2.f);

  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, Shape(u.x.begin(), u.x.end()));
  add_initializer(g, tensor_f32("w", u.w, w));
  std::vector<std::string> ins{"x", "w"};
  if (u.bias) {
    add_initializer(g, tensor_f32("b", {m}, bias));
    ins.push_back("b");
  }
  auto* ct = add_node(g, "ConvTranspose", ins, {u.bias_add_bn_relu ? "up" : "y"}, "up");
  attr_ints(ct, "strides", u.strides);
  attr_ints(ct, "kernel_shape", std::vector<int64_t>(u.w.begin() + 2, u.w.end()));
  attr_int(ct, "group", u.group);
  if (u.bias_add_bn_relu) {
    std::vector<int64_t> per_channel{1, m, 1};
    if (!one_d) per_channel.push_back(1);
    add_initializer(g, tensor_f32("shift", per_channel, add));
    for (auto [name, v] : {std::pair{"gamma", &gamma}, {"beta", &beta}, {"mean", &mean}, {"var", &var}})
      add_initializer(g, tensor_f32(name, {m}, *v));
    add_node(g, "Add", {"up", "shift"}, {"shifted"}, "bias_add");
    add_node(g, "BatchNormalization", {"shifted", "gamma", "beta", "mean", "var"}, {"normed"}, "bn");
    add_node(g, "Relu", {"normed"}, {"y"}, "relu");
  }
  add_output(g, "y", elem::kFloat, Shape(b.y.begin(), b.y.end()));
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  CompileOptions options;
  options.threads = threads;
  b.model = CompiledModel::compile(path, options);

  Conv2d p;
  p.group = u.group;
  p.strides = s2;
  b.want = naive_conv_transpose2d(b.x, x4, w, w4, bias, p, oh, ow);
  if (u.bias_add_bn_relu) {
    const int64_t plane = oh * ow;
    for (size_t i = 0; i < b.want.size(); ++i) {
      const auto c = static_cast<size_t>(static_cast<int64_t>(i) / plane % m);
      const double v = (b.want[i] + add[c] - mean[c]) / std::sqrt(var[c] + 1e-5) * gamma[c] + beta[c];
      b.want[i] = static_cast<float>(std::max(v, 0.0));
    }
  }
  return b;
}

// Runs at the model's threads and compares with the naive answer.
void run_and_compare(const Built& b, const std::vector<int64_t>& x_dims) {
  SessionOptions o;
  o.check_memory = true;
  o.adapt_to_load = false;
  Session s(b.model, o);
  s.set_input("x", kFloat32, x_dims, b.x.data(), b.x.size() * sizeof(float));
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  for (size_t i = 0; i < b.want.size(); ++i) {
    INFO("element " << i);
    REQUIRE(y[i] == Approx(b.want[i]).margin(1e-4).epsilon(1e-4));
  }
}

// The implementation of every node, one line each.
std::vector<std::string> implementations(const CompiledModel& model) {
  std::vector<std::string> out;
  for (const NodeKernel& k : model.kernels()) out.push_back(k.node + ": " + k.implementation);
  return out;
}

}  // namespace

TEST_CASE("an upsampling ConvTranspose (kernel = stride) runs on memplan's tiled loop with ONNX's numbers",
          "[kernels][dnnl][deconv]") {
  const std::vector<std::pair<const char*, Upsampling>> cases = {
      {"2x2 stride 2, rows wider than one pass of the loop", {{2, 24, 5, 70}, {24, 24, 2, 2}, {2, 2}}},
      {"one output channel, no bias", {{1, 24, 6, 9}, {24, 1, 2, 2}, {2, 2}, 1, false}},
      {"two groups, a 3x2 kernel", {{1, 6, 4, 5}, {6, 2, 3, 2}, {3, 2}, 2}},
      {"1-D, kernel 4", {{2, 8, 33}, {8, 5, 4}, {4}}},
  };
  for (const auto& [name, u] : cases) {
    for (int threads : {1, 2}) {
      DYNAMIC_SECTION(name << " at " << threads << " threads") {
        const Built b = build(u, "memplan_tiled_deconv.onnx", threads);
        const std::vector<std::string> impls = implementations(*b.model);
        REQUIRE(impls.size() == 1);
        CHECK(impls[0] == "ConvTranspose node 'up': memplan tiled deconvolution");
        run_and_compare(b, u.x);
      }
    }
  }
}

TEST_CASE("an upsampling ConvTranspose takes the bias Add, batch norm and Relu after it into its one pass",
          "[kernels][dnnl][deconv]") {
  Upsampling u{{1, 16, 7, 9}, {16, 12, 2, 2}, {2, 2}};
  u.bias_add_bn_relu = true;
  for (bool bias : {true, false}) {
    u.bias = bias;
    const Built b = build(u, "memplan_tiled_deconv_tail.onnx", 1);
    const std::vector<std::string> impls = implementations(*b.model);
    INFO(impls.size() << " nodes, the first " << impls[0]);
    REQUIRE(impls.size() == 1);
    CHECK(impls[0].find("memplan tiled deconvolution") != std::string::npos);
    run_and_compare(b, u.x);
  }
}

TEST_CASE("a ConvTranspose whose windows overlap stays on oneDNN, its folded tail as post-ops", "[kernels][dnnl][deconv]") {
  Upsampling u{{1, 8, 6, 6}, {8, 4, 3, 3}, {2, 2}};  // kernel 3, stride 2: windows overlap
  u.bias_add_bn_relu = true;
  const Built b = build(u, "memplan_overlapping_deconv.onnx", 1);
  const std::vector<std::string> impls = implementations(*b.model);
  REQUIRE(impls.size() == 1);
  CHECK(impls[0].find("memplan tiled") == std::string::npos);
  run_and_compare(b, u.x);
}
